"""EMULATION of kube-controller-manager's pvc-protection and pv-protection controllers:
a PersistentVolumeClaim being deleted keeps its kubernetes.io/pvc-protection finalizer
(and so stays, Terminating) while a pod that has not finished uses it; a PersistentVolume
being deleted keeps kubernetes.io/pv-protection while it is Bound. So a job's output
volume cannot go from under pods still writing to it."""

from apiserver.admission import PV_PROTECTION, PVC_PROTECTION

from .persistent_volumes import StorageController


def claims_of(pod):
    return {v["persistentVolumeClaim"]["claimName"]
            for v in (pod.get("spec") or {}).get("volumes") or [] if "persistentVolumeClaim" in v}


def finished(pod):
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class StorageProtectionController(StorageController):
    watches = ("persistentvolumeclaims", "persistentvolumes", "pods")

    def __init__(self, client, timings):
        super().__init__(client, timings.resync * 10, "storage-protection-emulation")

    def on_event(self, ev):
        md = ev.obj["metadata"]
        if ev.key == ("", "pods"):
            if ev.type == "DELETED" or finished(ev.obj):
                for name in claims_of(ev.obj):
                    self.enqueue(("claim", md["namespace"], name))
        elif ev.key == ("", "persistentvolumeclaims"):
            self.enqueue(("claim", md["namespace"], md["name"]))
        else:
            self.enqueue(("volume", "", md["name"]))

    def sync_claim(self, claim):
        md = claim["metadata"]
        if md.get("deletionTimestamp") and not any(
                md["name"] in claims_of(p) and not finished(p)
                for p in self.client.list("pods", md["namespace"])):
            self._release("persistentvolumeclaims", md["namespace"], md["name"], PVC_PROTECTION)

    def sync_volume(self, volume):
        if volume["metadata"].get("deletionTimestamp") and \
                (volume.get("status") or {}).get("phase") != "Bound":
            self._release("persistentvolumes", "", volume["metadata"]["name"], PV_PROTECTION)

    def _release(self, plural, ns, name, finalizer):
        def change(obj):
            fins = obj["metadata"].get("finalizers") or []
            if finalizer not in fins:
                return False
            obj["metadata"]["finalizers"] = [f for f in fins if f != finalizer]
        self.client.mutate(plural, ns, name, change)
