"""EMULATION of kube-controller-manager's endpoints controller: every Service with a
selector gets an Endpoints object of its name listing the pods it selects that have an
address - the ready ones as `addresses`, the others as `notReadyAddresses` (all as
addresses with publishNotReadyAddresses) - with each pod's hostname where its
spec.subdomain names the Service, so that DNS answers <hostname>.<service>."""

from apiserver.errors import ApiError

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
    """Services and pods are indexed as they change, as an informer's indexers keep them:
    a pod's change syncs only the Services whose selectors it meets, and a sync reads only
    the pods that carry its selector's rarest label. Listing every Service for each pod's
    change, and every pod for each sync, took most of the stand-in's CPU with a thousand
    jobs' Services and five thousand pods (bench/operator-scale)."""
    watches = ("services", "pods")

    def __init__(self, client, timings):
        super().__init__(client, timings.resync * 10, "endpoints-emulation")
        self._services_key = client.rt("services").key
        self._selectors = {}        # (ns, service) -> its selector, a dict
        self._services_by = {}      # (ns, label, value) -> {service names whose selector has it}
        self._pods = {}             # (ns, pod name) -> the pod
        self._pods_by = {}          # (ns, label, value) -> {pod name: the pod}

    def resync(self):
        self._selectors.clear()
        self._services_by.clear()
        self._pods.clear()
        self._pods_by.clear()
        for pod in self.client.list("pods"):
            self._index_pod(pod)
        for svc in self.client.list("services"):
            md = svc["metadata"]
            self._index_service(md["namespace"], md["name"], (svc.get("spec") or {}).get("selector"))
            self._sync(md["namespace"], md["name"])

    def on_event(self, ev):
        md = ev.obj["metadata"]
        ns, name = md.get("namespace") or "", md["name"]
        if ev.key == self._services_key:
            self._index_service(ns, name, None)
            if ev.type == "DELETED":
                self.client.delete("endpoints", ns, name)
            else:
                self._index_service(ns, name, (ev.obj.get("spec") or {}).get("selector"))
                self._sync(ns, name)
            return
        self._unindex_pod(ns, name)
        if ev.type != "DELETED":
            self._index_pod(ev.obj)
        labels = [md.get("labels") or {}]
        if ev.old is not None:
            labels.append(ev.old["metadata"].get("labels") or {})
        for service in self._services_selecting(ns, labels):
            self._sync(ns, service)

    def _index_service(self, ns, name, selector):
        """Files the Service under its selector's labels; None takes it out."""
        for k, v in (self._selectors.pop((ns, name), None) or {}).items():
            self._services_by.get((ns, k, v), set()).discard(name)
        if selector:
            self._selectors[(ns, name)] = dict(selector)
            for k, v in selector.items():
                self._services_by.setdefault((ns, k, v), set()).add(name)

    def _index_pod(self, pod):
        md = pod["metadata"]
        ns, name = md.get("namespace") or "", md["name"]
        self._pods[(ns, name)] = pod
        for k, v in (md.get("labels") or {}).items():
            self._pods_by.setdefault((ns, k, v), {})[name] = pod

    def _unindex_pod(self, ns, name):
        pod = self._pods.pop((ns, name), None)
        if pod is None:
            return
        for k, v in (pod["metadata"].get("labels") or {}).items():
            self._pods_by.get((ns, k, v), {}).pop(name, None)

    def _services_selecting(self, ns, label_sets):
        """The Services of `ns` whose selector every label of one of `label_sets` meets."""
        found = set()
        for labels in label_sets:
            hits = {}
            for k, v in labels.items():
                for service in self._services_by.get((ns, k, v), ()):
                    hits[service] = hits.get(service, 0) + 1
            found.update(s for s, n in hits.items() if n == len(self._selectors.get((ns, s), ())))
        return sorted(found)

    def _selected_pods(self, ns, selector):
        rarest = min((self._pods_by.get((ns, k, v), {}) for k, v in selector.items()), key=len)
        return [p for p in rarest.values()
                if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())]

    def _sync(self, ns, name):
        svc = self.client.get("services", ns, name)
        selector = (svc.get("spec") or {}).get("selector") if svc else None
        if not selector:
            return  # no selector: its Endpoints are someone else's (the `kubernetes` one)
        pods = self._selected_pods(ns, selector)
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
