"""EMULATION of the default scheduler (kube-scheduler), for pods that no one binds: a pod
with schedulerName default-scheduler and no spec.nodeName is bound (pods/binding, as the
real one does) to a node that passes every filter -

  NodeUnschedulable   spec.unschedulable nodes are passed by (unless tolerated)
  NodeName/Ready      the node is Ready
  NodeAffinity        spec.nodeSelector, and requiredDuringScheduling... node affinity
                      (In, NotIn, Exists, DoesNotExist, Gt, Lt on labels)
  TaintToleration     every NoSchedule/NoExecute taint is tolerated
  VolumeBinding       its PersistentVolumeClaims' volumes may be used there
                      (volume_binding.py; a WaitForFirstConsumer claim is provisioned on
                      the chosen node before the pod is bound)
  NodeResourcesFit    requests (cpu, memory, pods) fit allocatable minus what is bound

- choosing the one that meets most of its preferred affinities by weight (preferred...
node affinity's terms its labels match; preferred pod affinity and anti-affinity terms,
by the pods bound in the node's topology domain), then the one with the most free cpu
(least allocated), by name on ties. (kube-scheduler normalises each score plugin to
0-100 and sums them by plugin weight; here a preference always outweighs free cpu, so
that a Deployment's replicas that prefer other nodes spread as they would there: two
operator replicas on one node had shared its network and port.) A pod that
fits nowhere gets PodScheduled=False with reason Unschedulable and the counts of why, as
`kubectl describe` shows them, and is retried as pods and nodes change. The operator binds
its own pods (spec.nodeName) and never comes here."""

import json

from apiserver.errors import ApiError
from apiserver.selectors import selector_matches

from .client import Loop, now_rfc3339, record_event
from .downward import cpu_millis, memory_bytes
from .node_affinity import term_matches
from .node_lifecycle import tolerates
from .node_object import condition
from .volume_binding import PodVolumes


def requests(pod):
    cpu = mem = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        r = (c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits") or {}
        cpu += cpu_millis(r.get("cpu", "0"))
        mem += memory_bytes(r.get("memory", "0"))
    return cpu, mem


def why_not(pod, node, bound, volumes):
    """None when `pod` fits `node` given the pods already `bound` there and its claims
    (`volumes`, volume_binding.PodVolumes), else the scheduler's reason."""
    spec, labels = pod.get("spec") or {}, node["metadata"].get("labels") or {}
    unschedulable = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    if (node.get("spec") or {}).get("unschedulable") and tolerates(pod, unschedulable) is None:
        return "node(s) were unschedulable"
    if (condition(node, "Ready") or {}).get("status") != "True":
        return "node(s) were not ready"
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return "node(s) didn't match Pod's node affinity/selector"
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms")
    if terms and not any(term_matches(t, labels) for t in terms):
        return "node(s) didn't match Pod's node affinity/selector"
    for t in (node.get("spec") or {}).get("taints") or []:
        if t.get("effect") in ("NoSchedule", "NoExecute") and tolerates(pod, t) is None:
            return f"node(s) had untolerated taint {{{t['key']}: {t.get('value', '')}}}"
    claims_say = volumes.why_not(node)
    if claims_say:
        return claims_say
    alloc = (node.get("status") or {}).get("allocatable") or {}
    cpu, mem = requests(pod)
    used_cpu = sum(requests(p)[0] for p in bound)
    used_mem = sum(requests(p)[1] for p in bound)
    if len(bound) + 1 > int(alloc.get("pods", "110")):
        return "Too many pods"
    if used_cpu + cpu > cpu_millis(alloc.get("cpu", "0")):
        return "Insufficient cpu"
    if used_mem + mem > memory_bytes(alloc.get("memory", "0")):
        return "Insufficient memory"
    return None


def preference(pod, node, nodes, bound):
    """The weight of `pod`'s preferred affinities that `node` meets, given the pods
    `bound` to each node by name."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    labels = node["metadata"].get("labels") or {}
    score = 0
    node_terms = (affinity.get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    for t in node_terms:
        if term_matches(t.get("preference") or {}, labels):
            score += t.get("weight", 0)
    ns = pod["metadata"].get("namespace", "default")
    for kind, sign in (("podAffinity", 1), ("podAntiAffinity", -1)):
        for t in (affinity.get(kind) or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []:
            term = t.get("podAffinityTerm") or {}
            key = term.get("topologyKey", "")
            if key not in labels:
                continue
            domain = [n["metadata"]["name"] for n in nodes
                      if (n["metadata"].get("labels") or {}).get(key) == labels[key]]
            namespaces = term.get("namespaces") or [ns]
            found = any(p["metadata"].get("namespace", "default") in namespaces
                        and p["metadata"]["name"] != pod["metadata"]["name"]
                        and selector_matches(term.get("labelSelector"), p["metadata"].get("labels") or {})
                        for name in domain for p in bound.get(name, []))
            # Affinity is met where such a pod is; anti-affinity where none is.
            if found == (sign > 0):
                score += t.get("weight", 0)
    return score


def choose(pod, nodes, pods, volumes):
    """(node name, None) or (None, the Unschedulable message)."""
    bound = {}
    for p in pods:
        n = (p.get("spec") or {}).get("nodeName")
        if n and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            bound.setdefault(n, []).append(p)
    fits, reasons = [], {}
    for node in nodes:
        reason = why_not(pod, node, bound.get(node["metadata"]["name"], []), volumes)
        if reason is None:
            alloc = cpu_millis((node.get("status") or {}).get("allocatable", {}).get("cpu", "0"))
            free = alloc - sum(requests(p)[0] for p in bound.get(node["metadata"]["name"], []))
            fits.append((-preference(pod, node, nodes, bound), -free, node["metadata"]["name"]))
        else:
            reasons[reason] = reasons.get(reason, 0) + 1
    if fits:
        return min(fits)[-1], None
    detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
    return None, f"0/{len(nodes)} nodes are available: {detail}."


class Scheduler(Loop):
    watches = ("pods", "nodes", "persistentvolumeclaims")

    def __init__(self, client, timings):
        super().__init__(client, timings.resync, "default-scheduler-emulation")
        self.dirty = True

    def on_event(self, ev):
        self.dirty = True

    def tick(self):
        if not self.dirty:
            return
        self.dirty = False
        nodes = self.client.list("nodes")
        pods = self.client.list("pods")
        for pod in pods:
            spec = pod.get("spec") or {}
            if spec.get("nodeName") or pod["metadata"].get("deletionTimestamp") or \
                    spec.get("schedulerName", "default-scheduler") != "default-scheduler":
                continue
            volumes = PodVolumes(self.client, pod)
            name, why = choose(pod, nodes, pods, volumes)
            md = pod["metadata"]
            if name is None:
                self._unschedulable(pod, why)
                continue
            if not volumes.bind_to(name):
                continue  # its claims' volumes are being made there: bound once they are
            try:
                self.client.api.bind_pod(md["namespace"], md["name"], json.dumps(
                    {"target": {"kind": "Node", "name": name}}).encode())
            except ApiError:
                continue
            record_event(self.client, pod, "Normal", "Scheduled",
                         f"Successfully assigned {md['namespace']}/{md['name']} to {name}",
                         "default-scheduler")
            pod["spec"]["nodeName"] = name  # counts against the node for the next pods

    def _unschedulable(self, pod, why):
        def mark(p):
            conds = p.setdefault("status", {}).setdefault("conditions", [])
            new = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                   "message": why, "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
            for i, c in enumerate(conds):
                if c.get("type") == "PodScheduled":
                    if c.get("message") == why:
                        return False
                    conds[i] = new
                    return True
            conds.append(new)
        md = pod["metadata"]
        if self.client.mutate("pods", md["namespace"], md["name"], mark, "status") is not None:
            record_event(self.client, pod, "Warning", "FailedScheduling", why, "default-scheduler")
