"""EMULATION of kube-controller-manager's ReplicaSet controller: each ReplicaSet keeps
spec.replicas pods of its template running. It adopts orphan pods its selector matches,
creates the missing ones (`<replicaset>-xxxxx`, owned by it, left to the scheduler) and
deletes the surplus - the least settled first: unscheduled, then pending, not ready, ready
for the shortest time, restarted most, newest - and writes status as the real one does:
replicas, fullyLabeledReplicas, readyReplicas, availableReplicas (ready for
minReadySeconds) and observedGeneration. Pods being deleted or finished do not count."""

import time

from .client import Controller, parse_time, record_event
from .ownership import claim, controller_ref

PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def ready_since(pod):
    """When the pod last became Ready (seconds since the epoch), or None if it is not."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "True":
            return parse_time(c.get("lastTransitionTime")) or 0.0
    return None


def active(pod):
    return not pod["metadata"].get("deletionTimestamp") and \
        (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def deletion_order(pod):
    """Sorts the pods a ReplicaSet should give up first to the front (the real
    controller's ActivePodsWithRanks, without deletion cost and co-location)."""
    status = pod.get("status") or {}
    since = ready_since(pod)
    restarts = sum(c.get("restartCount", 0) for c in status.get("containerStatuses") or [])
    return (bool((pod.get("spec") or {}).get("nodeName")),
            PHASE_RANK.get(status.get("phase"), 0),
            since is not None, -(since or 0), -restarts,
            -(parse_time(pod["metadata"].get("creationTimestamp")) or 0))


class ReplicaSetController(Controller):
    watches = ("replicasets", "pods")

    def __init__(self, client, timings):
        super().__init__(client, timings.resync, "replicaset-controller-emulation")

    def resync(self):
        self.enqueue_all("replicasets")

    def on_event(self, ev):
        md = ev.obj["metadata"]
        if ev.key == ("apps", "replicasets"):
            self.enqueue((md["namespace"], md["name"]))
            return
        owners = [r for o in (ev.obj, ev.old) if o is not None
                  for r in o["metadata"].get("ownerReferences") or []
                  if r.get("controller") and r.get("kind") == "ReplicaSet"]
        if owners:
            for ref in owners:
                self.enqueue((md["namespace"], ref["name"]))
        elif ev.type != "DELETED":  # an orphan: whoever's selector matches may adopt it
            self.enqueue_all("replicasets", md["namespace"])

    def reconcile(self, key):
        ns, name = key
        rs = self.client.get("replicasets", ns, name)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return None  # the garbage collector takes its pods
        pods = claim(self.client, "pods", self.client.list("pods", ns), rs, adoptable=active)
        mine = [p for p in pods if active(p)]
        diff = rs["spec"].get("replicas", 1) - len(mine)
        if diff > 0:
            for _ in range(diff):
                self._create_pod(rs)
        elif diff < 0:
            for pod in sorted(mine, key=deletion_order)[:-diff]:
                self.client.delete("pods", ns, pod["metadata"]["name"],
                                   uid=pod["metadata"]["uid"])
                record_event(self.client, rs, "Normal", "SuccessfulDelete",
                             f"Deleted pod: {pod['metadata']['name']}", "replicaset-controller")
        return self._write_status(rs)

    def _create_pod(self, rs):
        template = rs["spec"].get("template") or {}
        tmd = template.get("metadata") or {}
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"generateName": rs["metadata"]["name"] + "-",
                            "labels": dict(tmd.get("labels") or {}),
                            "annotations": dict(tmd.get("annotations") or {}),
                            "ownerReferences": [controller_ref(rs)]},
               "spec": template.get("spec") or {}}
        created = self.client.create("pods", rs["metadata"]["namespace"], pod)
        record_event(self.client, rs, "Normal", "SuccessfulCreate",
                     f"Created pod: {created['metadata']['name']}", "replicaset-controller")

    def _write_status(self, rs):
        """Status from the pods as they are now; returns when to look again for a pod that
        is ready but not yet available."""
        md = rs["metadata"]
        uid = md["uid"]
        pods = [p for p in self.client.list("pods", md["namespace"]) if active(p) and any(
            r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])]
        min_ready = rs["spec"].get("minReadySeconds", 0)
        now = time.time()
        template_labels = ((rs["spec"].get("template") or {}).get("metadata") or {}) \
            .get("labels") or {}
        ready = [ready_since(p) for p in pods if ready_since(p) is not None]
        available = [t for t in ready if t + min_ready <= now]
        status = {"replicas": len(pods),
                  "fullyLabeledReplicas": sum(1 for p in pods if all(
                      (p["metadata"].get("labels") or {}).get(k) == v
                      for k, v in template_labels.items())),
                  "readyReplicas": len(ready), "availableReplicas": len(available),
                  "observedGeneration": md.get("generation", 1)}

        def change(obj):
            merged = dict(obj.get("status") or {}, **status)
            if merged == obj.get("status"):
                return False
            obj["status"] = merged
        self.client.mutate("replicasets", md["namespace"], md["name"], change, "status")
        waiting = [t + min_ready - now for t in ready if t + min_ready > now]
        return min(waiting) if waiting else None
