"""EMULATION of kube-controller-manager's node lifecycle controller, with its taint-based
eviction and the pod garbage collector's node-related part:

- a node whose Lease is not renewed within --node-monitor-grace goes Ready=Unknown
  ("Kubelet stopped posting node status") and gets node.kubernetes.io/unreachable with
  NoSchedule and NoExecute; a node whose kubelet says Ready=False gets
  node.kubernetes.io/not-ready the same way; both go when it is Ready again. Its pods are
  marked not Ready at once.
- a pod on a node with a NoExecute taint it does not tolerate is evicted (deleted, with
  its grace) at once; one that tolerates it for tolerationSeconds, once they have run out
  since the taint was added. An evicted pod on a node that stopped reporting stays
  Terminating - no kubelet confirms it - until someone force-deletes it, as in Kubernetes.
- pods bound to a node that no longer exists are force-deleted; so are terminating pods on
  a NotReady node tainted node.kubernetes.io/out-of-service (non-graceful node shutdown).

Nodes only on paper are passed by: they have no lease to watch."""

import time

from .client import Loop, now_rfc3339, parse_time, record_event
from .node_object import condition, set_condition

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


def tolerates(pod, taint):
    """None if no toleration matches, else its tolerationSeconds (None: for ever)."""
    for t in (pod.get("spec") or {}).get("tolerations") or []:
        if t.get("effect") not in (None, "", taint["effect"]):
            continue
        op = t.get("operator", "Equal")
        if t.get("key") and t["key"] != taint["key"]:
            continue
        if not t.get("key") and op != "Exists":
            continue
        if op == "Equal" and t.get("value", "") != taint.get("value", ""):
            continue
        return ("seconds", t.get("tolerationSeconds"))
    return None


class NodeLifecycleController(Loop):
    watches = ("nodes",)

    def __init__(self, client, timings, paper_nodes):
        super().__init__(client, timings.resync, "node-lifecycle-emulation")
        self.timings = timings
        self.paper = set(paper_nodes)

    def on_event(self, ev):
        if ev.type == "DELETED":
            self._collect_orphans()

    def tick(self):
        now = time.time()
        nodes = {n["metadata"]["name"]: n for n in self.client.list("nodes")}
        for name, node in nodes.items():
            if name not in self.paper:
                self._monitor(node, now)
        for pod in self.client.list("pods"):
            node_name = (pod.get("spec") or {}).get("nodeName")
            if not node_name:
                continue
            node = nodes.get(node_name)
            if node is None:
                self._force_delete(pod, f"node {node_name} no longer exists")
                continue
            self._evict_if_due(pod, node, now)

    def _collect_orphans(self):
        names = {n["metadata"]["name"] for n in self.client.list("nodes")}
        for pod in self.client.list("pods"):
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name and node_name not in names:
                self._force_delete(pod, f"node {node_name} no longer exists")

    def _monitor(self, node, now):
        name = node["metadata"]["name"]
        lease = self.client.get("leases", "kube-node-lease", name)
        renewed = parse_time((lease or {}).get("spec", {}).get("renewTime"))
        ready = (condition(node, "Ready") or {}).get("status")
        if renewed is None or now - renewed > self.timings.node_monitor_grace:
            if ready != "Unknown":
                self._stopped_reporting(name)
            self._taint(name, UNREACHABLE, True)
            self._taint(name, NOT_READY, False)
        else:
            self._taint(name, UNREACHABLE, False)
            self._taint(name, NOT_READY, ready == "False")

    def _stopped_reporting(self, name):
        def unknown(node):
            c = dict(condition(node, "Ready") or {"type": "Ready"})
            c.update({"status": "Unknown", "reason": "NodeStatusUnknown",
                      "message": "Kubelet stopped posting node status.",
                      "lastTransitionTime": now_rfc3339()})
            set_condition(node, c)
        node = self.client.mutate("nodes", "", name, unknown, "status")
        if node is not None:
            record_event(self.client, node, "Normal", "NodeNotReady",
                         f"Node {name} status is now: NodeNotReady", "node-controller")
        for pod in self.client.list("pods", field_selector=f"spec.nodeName={name}"):
            self._mark_not_ready(pod)

    def _mark_not_ready(self, pod):
        def not_ready(p):
            changed = False
            for c in (p.get("status") or {}).get("conditions") or []:
                if c.get("type") == "Ready" and c.get("status") != "False":
                    c.update({"status": "False", "reason": "NodeNotReady",
                              "lastTransitionTime": now_rfc3339()})
                    changed = True
            return changed
        md = pod["metadata"]
        self.client.mutate("pods", md["namespace"], md["name"], not_ready, "status")

    def _taint(self, name, key, present):
        def change(node):
            taints = node.setdefault("spec", {}).setdefault("taints", [])
            have = [t for t in taints if t.get("key") == key]
            if present and not have:
                for effect in ("NoSchedule", "NoExecute"):
                    taints.append({"key": key, "effect": effect, "timeAdded": now_rfc3339()})
                return True
            if not present and have:
                node["spec"]["taints"] = [t for t in taints if t.get("key") != key]
                return True
            return False
        self.client.mutate("nodes", "", name, change)

    def _evict_if_due(self, pod, node, now):
        md = pod["metadata"]
        taints = (node.get("spec") or {}).get("taints") or []
        if md.get("deletionTimestamp"):
            if any(t.get("key") == OUT_OF_SERVICE and t.get("effect") == "NoExecute"
                   for t in taints) and (condition(node, "Ready") or {}).get("status") != "True":
                self._force_delete(pod, "the node is out of service")
            return
        for taint in taints:
            if taint.get("effect") != "NoExecute":
                continue
            tolerated = tolerates(pod, taint)
            if tolerated is not None:
                seconds = tolerated[1]
                if seconds is None:
                    continue
                added = parse_time(taint.get("timeAdded")) or now
                if now < added + seconds:
                    continue
            record_event(self.client, pod, "Normal", "TaintManagerEviction",
                         f"Marking for deletion Pod {md['namespace']}/{md['name']}",
                         "taint-eviction-controller")
            self.client.delete("pods", md["namespace"], md["name"], uid=md["uid"])
            return

    def _force_delete(self, pod, why):
        md = pod["metadata"]
        record_event(self.client, pod, "Normal", "PodGC", f"Force-deleting: {why}", "pod-gc")
        self.client.delete("pods", md["namespace"], md["name"], grace_seconds=0, uid=md["uid"])
