"""EMULATION of kube-controller-manager's PersistentVolume controller (the binder), with
the phases and annotations Kubernetes gives claims and volumes:

- a claim that names a volume (spec.volumeName), or for which an Available volume fits
  (its class, access modes and at least the storage it asks), is bound to it: the
  volume's claimRef names the claim (phase Bound); the claim gets spec.volumeName,
  pv.kubernetes.io/bind-completed (and bound-by-controller when the controller chose),
  and status Bound with the volume's capacity and access modes;
- a claim nothing fits waits Pending: for a StorageClass with WaitForFirstConsumer until
  someone (the scheduler, once it has picked a node for a pod of the claim) names a node
  in volume.kubernetes.io/selected-node, then, as for an Immediate class at once, it is
  handed to the class's provisioner by volume.kubernetes.io/storage-provisioner; the
  provisioner makes a volume whose claimRef names the claim, and the binder completes it;
- a bound claim whose volume is gone, or bound elsewhere, is Lost;
- a volume without claimRef is Available; one whose claim is gone is Released, and then
  its reclaim policy applies: Delete is the provisioner's to carry out, Retain leaves it.

Pods bound to a node by someone else (spec.nodeName) never pass the scheduler, so a
WaitForFirstConsumer claim of theirs waits for ever - as on a real cluster."""

from .client import Controller, record_event

SELECTED_NODE = "volume.kubernetes.io/selected-node"
PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
COMPONENT = "persistentvolume-controller"

_UNITS = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "k": 10 ** 3,
          "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12}


def storage_bytes(quantity):
    q = str(quantity)
    for unit in sorted(_UNITS, key=len, reverse=True):
        if q.endswith(unit):
            return float(q[:-len(unit)]) * _UNITS[unit]
    return float(q)


def requested(claim):
    return ((claim["spec"].get("resources") or {}).get("requests") or {}).get("storage", "0")


def claim_ref(claim):
    md = claim["metadata"]
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": md["namespace"],
            "name": md["name"], "uid": md["uid"], "resourceVersion": md["resourceVersion"]}


def refers_to(volume, claim):
    ref = volume["spec"].get("claimRef") or {}
    md = claim["metadata"]
    return ref.get("namespace") == md["namespace"] and ref.get("name") == md["name"] and \
        ref.get("uid") in (None, "", md["uid"])


def fits(volume, claim):
    spec, want = volume["spec"], claim["spec"]
    return (spec.get("storageClassName") or "") == (want.get("storageClassName") or "") and \
        set(want.get("accessModes") or []) <= set(spec.get("accessModes") or []) and \
        storage_bytes((spec.get("capacity") or {}).get("storage", "0")) >= \
        storage_bytes(requested(claim))


def delays_binding(storage_class):
    return (storage_class or {}).get("volumeBindingMode") == "WaitForFirstConsumer"


class StorageController(Controller):
    """A controller of claims and volumes: its keys are ("claim", namespace, name) and
    ("volume", "", name), and it syncs each object that still exists."""
    watches = ("persistentvolumeclaims", "persistentvolumes")

    def resync(self):
        for claim in self.client.list("persistentvolumeclaims"):
            self.enqueue(("claim", claim["metadata"]["namespace"], claim["metadata"]["name"]))
        for volume in self.client.list("persistentvolumes"):
            self.enqueue(("volume", "", volume["metadata"]["name"]))

    def reconcile(self, key):
        kind, ns, name = key
        if kind == "claim":
            claim = self.client.get("persistentvolumeclaims", ns, name)
            if claim is not None:
                self.sync_claim(claim)
        else:
            volume = self.client.get("persistentvolumes", "", name)
            if volume is not None:
                self.sync_volume(volume)
        return None

    def sync_claim(self, claim):
        pass

    def sync_volume(self, volume):
        pass


class PersistentVolumeController(StorageController):
    def __init__(self, client, timings):
        super().__init__(client, timings.resync * 10, "persistentvolume-controller-emulation")

    def on_event(self, ev):
        md = ev.obj["metadata"]
        if ev.key == ("", "persistentvolumeclaims"):
            self.enqueue(("claim", md["namespace"], md["name"]))
            for volume in self.client.list("persistentvolumes"):
                if refers_to(volume, ev.obj):
                    self.enqueue(("volume", "", volume["metadata"]["name"]))
            return
        self.enqueue(("volume", "", md["name"]))
        ref = ev.obj["spec"].get("claimRef")
        if ref:
            self.enqueue(("claim", ref.get("namespace"), ref.get("name")))
        elif ev.type != "DELETED":  # an Available volume may fit a claim that waits
            for claim in self.client.list("persistentvolumeclaims"):
                if not claim["spec"].get("volumeName"):
                    self.enqueue(("claim", claim["metadata"]["namespace"],
                                  claim["metadata"]["name"]))

    # -- claims -------------------------------------------------------------------------

    def sync_claim(self, claim):
        md, spec = claim["metadata"], claim["spec"]
        if (md.get("annotations") or {}).get(BIND_COMPLETED) == "yes":
            volume = self.client.get("persistentvolumes", "", spec.get("volumeName") or "")
            if volume is None or not refers_to(volume, claim):
                self._claim_phase(claim, "Lost")
                record_event(self.client, claim, "Warning", "ClaimLost",
                             "Bound claim has lost its PersistentVolume. Data on the volume "
                             "is lost!", COMPONENT)
            else:
                self._complete(claim, volume, by_controller=False)
            return
        if spec.get("volumeName"):
            volume = self.client.get("persistentvolumes", "", spec["volumeName"])
            if volume is not None and (not volume["spec"].get("claimRef") or
                                       refers_to(volume, claim)):
                self._complete(claim, volume, by_controller=False)
            return
        volume = self._matching_volume(claim)
        if volume is not None:
            self._complete(claim, volume, by_controller=True)
            return
        self._provision_or_wait(claim)

    def _matching_volume(self, claim):
        """A volume pre-bound to the claim first (a provisioner's), else the smallest
        Available one that fits."""
        candidates = []
        for volume in self.client.list("persistentvolumes"):
            if volume["metadata"].get("deletionTimestamp") or not fits(volume, claim):
                continue
            if volume["spec"].get("claimRef"):
                if refers_to(volume, claim):
                    return volume
                continue
            if (volume.get("status") or {}).get("phase") == "Available":
                candidates.append(volume)
        return min(candidates, key=lambda v: storage_bytes(v["spec"]["capacity"]["storage"]),
                   default=None)

    def _provision_or_wait(self, claim):
        class_name = claim["spec"].get("storageClassName")
        storage_class = self.client.get("storageclasses", "", class_name) if class_name else None
        notes = claim["metadata"].get("annotations") or {}
        if storage_class is None or not storage_class.get("provisioner"):
            record_event(self.client, claim, "Warning", "FailedBinding",
                         "no persistent volumes available for this claim and no storage class "
                         "is set" if not class_name else
                         f'storageclass.storage.k8s.io "{class_name}" not found', COMPONENT)
            return
        if delays_binding(storage_class) and not notes.get(SELECTED_NODE):
            record_event(self.client, claim, "Normal", "WaitForFirstConsumer",
                         "waiting for first consumer to be created before binding", COMPONENT)
            return
        provisioner = storage_class["provisioner"]
        if notes.get(PROVISIONER) != provisioner:
            def hand_over(c):
                a = c["metadata"].setdefault("annotations", {})
                a[PROVISIONER] = a[BETA_PROVISIONER] = provisioner
            md = claim["metadata"]
            self.client.mutate("persistentvolumeclaims", md["namespace"], md["name"], hand_over)
            record_event(self.client, claim, "Normal", "ExternalProvisioning",
                         f"Waiting for a volume to be created either by the external "
                         f"provisioner '{provisioner}' or manually by the system administrator. "
                         f"If volume creation is delayed, please verify that the provisioner is "
                         f"running and correctly registered.", COMPONENT)

    def _complete(self, claim, volume, by_controller):
        """Both halves of a binding: the volume's claimRef first, then the claim."""
        if not volume["spec"].get("claimRef"):
            def point_at(v):
                v["spec"]["claimRef"] = claim_ref(claim)
                v.setdefault("metadata", {}).setdefault("annotations", {})[
                    BOUND_BY_CONTROLLER] = "yes"
            volume = self.client.mutate("persistentvolumes", "", volume["metadata"]["name"],
                                        point_at) or volume
        self._volume_phase(volume, "Bound")
        md = claim["metadata"]

        def bind(c):
            notes = c["metadata"].setdefault("annotations", {})
            changed = c["spec"].get("volumeName") != volume["metadata"]["name"] or \
                notes.get(BIND_COMPLETED) != "yes"
            c["spec"]["volumeName"] = volume["metadata"]["name"]
            notes[BIND_COMPLETED] = "yes"
            if by_controller:
                changed = changed or notes.get(BOUND_BY_CONTROLLER) != "yes"
                notes[BOUND_BY_CONTROLLER] = "yes"
            return changed
        claim = self.client.mutate("persistentvolumeclaims", md["namespace"], md["name"],
                                   bind) or claim
        status = {"phase": "Bound", "accessModes": volume["spec"].get("accessModes") or [],
                  "capacity": dict(volume["spec"].get("capacity") or {})}

        def bound(c):
            if c.get("status") == status:
                return False
            c["status"] = status
        self.client.mutate("persistentvolumeclaims", md["namespace"], md["name"], bound,
                           "status")

    def _claim_phase(self, claim, phase):
        def change(c):
            if (c.get("status") or {}).get("phase") == phase:
                return False
            c["status"] = {"phase": phase}
        md = claim["metadata"]
        self.client.mutate("persistentvolumeclaims", md["namespace"], md["name"], change,
                           "status")

    # -- volumes ------------------------------------------------------------------------

    def sync_volume(self, volume):
        ref = volume["spec"].get("claimRef")
        if not ref:
            self._volume_phase(volume, "Available")
            return
        claim = self.client.get("persistentvolumeclaims", ref.get("namespace"), ref.get("name"))
        if claim is not None and ref.get("uid") not in (None, "", claim["metadata"]["uid"]):
            claim = None  # another claim of the same name: ours is gone
        phase = (volume.get("status") or {}).get("phase")
        if claim is None:
            if phase == "Bound" or ref.get("uid"):
                self._volume_phase(volume, "Released")
            return
        if claim["spec"].get("volumeName") == volume["metadata"]["name"]:
            self._volume_phase(volume, "Bound")
        elif phase != "Bound":
            self._volume_phase(volume, "Available")  # pre-bound: the claim's sync binds it

    def _volume_phase(self, volume, phase):
        def change(v):
            if (v.get("status") or {}).get("phase") == phase:
                return False
            v["status"] = {"phase": phase}
        self.client.mutate("persistentvolumes", "", volume["metadata"]["name"], change, "status")
