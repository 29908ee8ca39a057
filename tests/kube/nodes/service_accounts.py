"""EMULATION of kube-controller-manager's service account controller and root CA
publisher: every namespace gets a `default` ServiceAccount and a `kube-root-ca.crt`
ConfigMap holding the API server's CA (empty without --tls), which pods' projected
service-account volumes read."""

from apiserver.errors import ApiError

from .client import Loop


class ServiceAccountController(Loop):
    watches = ("namespaces", "serviceaccounts", "configmaps")

    def __init__(self, client, timings, ca_pem):
        super().__init__(client, timings.resync * 10, "service-accounts-emulation")
        self.ca = (ca_pem or b"").decode()

    def resync(self):
        for ns in self.client.list("namespaces"):
            self._ensure(ns["metadata"]["name"])

    def on_event(self, ev):
        ns = ev.obj["metadata"].get("namespace") if ev.key != ("", "namespaces") \
            else ev.obj["metadata"]["name"]
        if ns and (ev.key == ("", "namespaces") or ev.type == "DELETED"):
            self._ensure(ns)

    def _ensure(self, ns):
        space = self.client.get("namespaces", "", ns)
        if space is None or space["metadata"].get("deletionTimestamp"):
            return
        for plural, obj in (("serviceaccounts", {"metadata": {"name": "default"}}),
                            ("configmaps", {"metadata": {"name": "kube-root-ca.crt"},
                                            "data": {"ca.crt": self.ca}})):
            if self.client.get(plural, ns, obj["metadata"]["name"]) is None:
                try:
                    self.client.create(plural, ns, obj)
                except ApiError:
                    pass  # created meanwhile, or the namespace is going
