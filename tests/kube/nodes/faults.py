"""Faults for tests and for people, served as TEST HOOKS under /_standin/nodes/ (no real
cluster has them; same authentication as the API):

  GET  /_standin/nodes                       every node: kubelet alive, connected, compute
                                             slowdown, link fault's scale, link rate now
  POST /_standin/nodes/NODE/partition        NotReady as on a partitioned node: the kubelet
                                             stops heartbeating and hearing from the API
                                             server; its pods run on
  POST /_standin/nodes/NODE/kill             the node dies: its processes end at once, and it
                                             goes NotReady when its lease runs out
  POST /_standin/nodes/NODE/preempt[?notice=S]   a cloud reclaims a spot VM: its termination
                                             taint, its pods evicted (grace up to S, default
                                             30), then the node gone
  POST /_standin/nodes/NODE/link?scale=F     the link's trace times F from now: 0 cuts it,
                                             1 restores it (kernel links only, as root); its
                                             Node's edgetrain.dev/link-mbps follows (once it
                                             is in touch)
  POST /_standin/nodes/NODE/compute?slowdown=F   its compute now F times slower than this
                                             machine (1 to 1000, as in profiles): its Node's
                                             edgetrain.dev/compute-score becomes 1/F and its
                                             emulated-slowdown F (once it is in touch);
                                             running processes are not slowed
  POST /_standin/nodes/NODE/revive           bring it back: the kubelet registers again if need
                                             be, heartbeats, and restarts its pods' lost
                                             containers as restartPolicy says

Each answers 200 with the node's state (preempt: 202, it proceeds in the background)."""

import threading
import time

from .network import LinkFaultUnsupported, NodeLinksError

PREEMPTION_TAINTS = (  # (spot label, value or None for any) -> the provider's notice taint
    (("eks.amazonaws.com/capacityType", "SPOT"),
     {"key": "aws-node-termination-handler/spot-itn", "effect": "NoExecute"}),
    (None, {"key": "cloud.google.com/impending-node-termination", "effect": "NoSchedule"}),
)


class Faults:
    def __init__(self, cluster):
        self.cluster = cluster
        self.client = cluster.client

    def state(self, name):
        k = self.cluster.kubelets.get(name)
        out = {"name": name, "kubelet": None}
        if k is not None:
            out["kubelet"] = {"alive": k.alive, "connected": k.connected}
            out["computeSlowdown"] = k.slowdown
            out["linkScale"] = k.link_factor
            try:
                out["linkMbps"] = self.cluster.network.link_rate(name)
            except NodeLinksError:
                out["linkMbps"] = None
        return out

    def handle(self, method, parts, params):
        if not parts:
            return 200, {"nodes": [self.state(n["name"]) for n in self.cluster.nodes]}
        name = parts[0]
        action = parts[1] if len(parts) > 1 else ""
        k = self.cluster.kubelets.get(name)
        if k is None:
            return 404, _status(404, f'node "{name}" runs no kubelet here (not in the profile, '
                                     f'or only on paper)')
        if method == "GET" and not action:
            return 200, self.state(name)
        if method != "POST":
            return 405, _status(405, "POST a fault")
        if action == "partition":
            k.partition()
        elif action == "kill":
            k.kill()
        elif action == "revive":
            k.revive()
        elif action == "link":
            try:
                factor = float(params.get("scale", "1"))
                self.cluster.network.scale_link(name, factor)
            except (LinkFaultUnsupported, NodeLinksError, ValueError) as e:
                return 409, _status(409, str(e))
            k.rescale_link(factor)
        elif action == "compute":
            try:
                slowdown = float(params.get("slowdown", ""))
            except ValueError:
                slowdown = 0.0
            if not 1 <= slowdown <= 1000:
                return 400, _status(400, "slowdown must be a number from 1 to 1000 (how many "
                                         "times longer a step takes than on this machine)")
            k.slow_down(slowdown)
        elif action == "preempt":
            notice = float(params.get("notice", "30"))
            threading.Thread(target=self._preempt, args=(k, notice), daemon=True,
                             name=f"preempt-{name}").start()
            return 202, self.state(name)
        else:
            return 404, _status(404, f'no fault "{action}" (partition, kill, preempt, link, '
                                     f'compute, revive)')
        return 200, self.state(name)

    def _preempt(self, kubelet, notice):
        """What a cloud does to a spot VM it takes back: a notice taint, the pods evicted
        within the notice, then the machine (and so its Node) gone."""
        name = kubelet.node_name
        node = self.client.get("nodes", "", name)
        if node is None:
            return
        labels = node["metadata"].get("labels") or {}
        taint = next(t for label, t in PREEMPTION_TAINTS
                     if label is None or labels.get(label[0]) == label[1])

        def add_taint(n):
            taints = n.setdefault("spec", {}).setdefault("taints", [])
            if any(t.get("key") == taint["key"] for t in taints):
                return False
            taints.append(dict(taint))
        self.client.mutate("nodes", "", name, add_taint)
        deadline = time.monotonic() + notice
        pods = self.client.list("pods", field_selector=f"spec.nodeName={name}")
        for p in pods:
            grace = min(int(notice), (p.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
            self.client.delete("pods", p["metadata"]["namespace"], p["metadata"]["name"],
                               grace_seconds=max(grace, 1))
        while time.monotonic() < deadline and \
                self.client.list("pods", field_selector=f"spec.nodeName={name}"):
            time.sleep(0.05)
        kubelet.kill()
        self.client.delete("nodes", "", name)


def _status(code, message):
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "message": message}
