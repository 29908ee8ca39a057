"""EMULATION of kube-controller-manager's endpoints controller: every Service with a
selector gets an Endpoints object of its name listing the pods it selects that have an
address - the ready ones as `addresses`, the others as `notReadyAddresses` (all as
addresses with publishNotReadyAddresses) - with each pod's hostname where its
spec.subdomain names the Service, so that DNS answers <hostname>.<service>."""

from apiserver.errors import ApiError
from apiserver.selectors import LabelSelector

from .client import Loop


def _ready(pod):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _target_port(service_port, pod):
    tp = service_port.get("targetPort", service_port.get("port"))
    if isinstance(tp, int) or str(tp).isdigit():
        return int(tp)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == tp:
                return p["containerPort"]
    return None


def endpoints_for(service, pods):
    spec = service.get("spec") or {}
    everyone = spec.get("publishNotReadyAddresses", False)
    ready, not_ready = [], []
    ports = None
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        ip = (pod.get("status") or {}).get("podIP")
        if not ip or pod["metadata"].get("deletionTimestamp") or \
                (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        address = {"ip": ip, "nodeName": pod["spec"].get("nodeName"),
                   "targetRef": {"kind": "Pod", "namespace": pod["metadata"]["namespace"],
                                 "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}}
        if pod["spec"].get("hostname") and pod["spec"].get("subdomain") == \
                service["metadata"]["name"]:
            address["hostname"] = pod["spec"]["hostname"]
        (ready if everyone or _ready(pod) else not_ready).append(address)
        if ports is None:
            ports = [{"name": p.get("name", ""), "port": _target_port(p, pod),
                      "protocol": p.get("protocol", "TCP")} for p in spec.get("ports") or []]
            ports = [{k: v for k, v in p.items() if v != ""} for p in ports if p["port"]]
    subset = {}
    if ready:
        subset["addresses"] = ready
    if not_ready:
        subset["notReadyAddresses"] = not_ready
    if subset and ports:
        subset["ports"] = ports
    return [subset] if subset else []


class EndpointsController(Loop):
    watches = ("services", "pods")

    def __init__(self, client, timings):
        super().__init__(client, timings.resync * 10, "endpoints-emulation")

    def resync(self):
        for svc in self.client.list("services"):
            self._sync(svc["metadata"]["namespace"], svc["metadata"]["name"])

    def on_event(self, ev):
        ns = ev.obj["metadata"].get("namespace")
        if ev.key == ("", "services"):
            if ev.type == "DELETED":
                self.client.delete("endpoints", ns, ev.obj["metadata"]["name"])
            else:
                self._sync(ns, ev.obj["metadata"]["name"])
            return
        labels = [ev.obj["metadata"].get("labels") or {}]
        if ev.old is not None:
            labels.append(ev.old["metadata"].get("labels") or {})
        for svc in self.client.list("services", ns):
            selector = (svc.get("spec") or {}).get("selector")
            if selector and any(all(l.get(k) == v for k, v in selector.items()) for l in labels):
                self._sync(ns, svc["metadata"]["name"])

    def _sync(self, ns, name):
        svc = self.client.get("services", ns, name)
        selector = (svc.get("spec") or {}).get("selector") if svc else None
        if not selector:
            return  # no selector: its Endpoints are someone else's (the `kubernetes` one)
        text = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        pods = [p for p in self.client.list("pods", ns)
                if LabelSelector(text).matches(p["metadata"].get("labels"))]
        subsets = endpoints_for(svc, pods)
        current = self.client.get("endpoints", ns, name)
        try:
            if current is None:
                self.client.create("endpoints", ns, {"metadata": {
                    "name": name, "namespace": ns, "labels": svc["metadata"].get("labels") or {}},
                    "subsets": subsets})
            elif current.get("subsets", []) != subsets:
                current = dict(current, subsets=subsets)
                self.client.update("endpoints", current)
        except ApiError:
            pass  # changed meanwhile: the event that follows brings us back
