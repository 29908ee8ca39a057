"""EMULATION of Rancher's local-path-provisioner, the dynamic provisioner K3s ships, in its
two configurations:

- `local-path` (the default StorageClass, as on K3s: provisioner rancher.io/local-path,
  WaitForFirstConsumer, reclaim Delete): a claim's volume is a directory on the disk of
  the node the scheduler chose for its first pod (volume.kubernetes.io/selected-node),
  `<node's storage>/pvc-<claim uid>_<namespace>_<claim>`, made mode 0777; the volume is a
  hostPath with required node affinity to that node, so the scheduler sends the claim's
  later pods there and a kubelet elsewhere refuses to mount it. Only ReadWriteOnce (and
  ReadWriteOncePod) can be asked for.
- `shared-path` (provisioner cluster.local/shared-path, Immediate, reclaim Delete): the
  same provisioner deployed a second time with `sharedFileSystemPath`, as a site whose
  nodes all mount one file system (an NFS export of the gateway) runs it: no node
  affinity, every access mode, a volume as soon as the claim exists. This is the class
  for what must be seen from every node - a job's checkpoints, when its coordinator may
  move. K3s does not ship it; a site adds it.

Here every node's disk is a folder of the emulator's (`disks/<node>/`) and the shared file
system another (`shared/`). A volume of a claim that is gone (Released) is deleted with
its directory, as reclaim policy Delete says."""

import os
import shutil

from apiserver.errors import ApiError

from .client import record_event
from .persistent_volumes import (PROVISIONER, SELECTED_NODE, StorageController, claim_ref,
                                 requested)

PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
NODE_LOCAL_MODES = {"ReadWriteOnce", "ReadWriteOncePod"}


def storage_classes():
    """The StorageClasses the site is set up with."""
    return [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "local-path", "annotations": {DEFAULT_CLASS: "true"}},
         "provisioner": "rancher.io/local-path", "reclaimPolicy": "Delete",
         "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "shared-path"},
         "provisioner": "cluster.local/shared-path", "reclaimPolicy": "Delete",
         "volumeBindingMode": "Immediate"},
    ]


class LocalPathProvisioner(StorageController):
    """One provisioner: node-local (folder per node under `root`) or shared (`root`)."""

    def __init__(self, client, timings, name, root, node_local):
        super().__init__(client, timings.resync * 10, f"{name}-provisioner-emulation")
        self.provisioner, self.root, self.node_local = name, root, node_local

    def on_event(self, ev):
        md = ev.obj["metadata"]
        if ev.key == ("", "persistentvolumeclaims"):
            self.enqueue(("claim", md["namespace"], md["name"]))
        elif ev.type != "DELETED":
            self.enqueue(("volume", "", md["name"]))

    def sync_claim(self, claim):
        if self._wants_volume(claim):
            self._provision(claim)

    def sync_volume(self, volume):
        if self._to_delete(volume):
            self._delete_volume(volume)

    def _wants_volume(self, claim):
        md = claim["metadata"]
        return (md.get("annotations") or {}).get(PROVISIONER) == self.provisioner and \
            not claim["spec"].get("volumeName") and not md.get("deletionTimestamp") and \
            self.client.get("persistentvolumes", "", f"pvc-{md['uid']}") is None

    def _provision(self, claim):
        md, spec = claim["metadata"], claim["spec"]
        node = (md.get("annotations") or {}).get(SELECTED_NODE)
        modes = spec.get("accessModes") or []
        why = None
        if self.node_local and not node:
            why = "configuration error, no node was specified"
        elif self.node_local and not set(modes) <= NODE_LOCAL_MODES:
            why = "NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes"
        if why:
            record_event(self.client, claim, "Warning", "ProvisioningFailed",
                         f"failed to provision volume with StorageClass "
                         f'"{spec.get("storageClassName")}": {why}', self.provisioner)
            return
        name = f"pvc-{md['uid']}"
        record_event(self.client, claim, "Normal", "Provisioning",
                     f'External provisioner is provisioning volume for claim '
                     f'"{md["namespace"]}/{md["name"]}"', self.provisioner)
        base = os.path.join(self.root, node) if self.node_local else self.root
        path = os.path.join(base, f"{name}_{md['namespace']}_{md['name']}")
        os.makedirs(path, exist_ok=True)
        os.chmod(path, 0o777)  # as its setup script makes it: any user of the pod may write
        storage_class = self.client.get("storageclasses", "", spec.get("storageClassName"))
        volume = {"apiVersion": "v1", "kind": "PersistentVolume",
                  "metadata": {"name": name, "annotations": {PROVISIONED_BY: self.provisioner}},
                  "spec": {"capacity": {"storage": requested(claim)}, "accessModes": modes,
                           "persistentVolumeReclaimPolicy":
                               (storage_class or {}).get("reclaimPolicy", "Delete"),
                           "storageClassName": spec.get("storageClassName"),
                           "volumeMode": "Filesystem", "claimRef": claim_ref(claim),
                           "hostPath": {"path": path, "type": "DirectoryOrCreate"}}}
        if self.node_local:
            volume["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                       "values": [node]}]}]}}
        try:
            self.client.create("persistentvolumes", "", volume)
        except ApiError as e:
            if e.code != 409:
                raise
            return
        record_event(self.client, claim, "Normal", "ProvisioningSucceeded",
                     f"Successfully provisioned volume {name}", self.provisioner)

    def _to_delete(self, volume):
        return (volume["metadata"].get("annotations") or {}).get(PROVISIONED_BY) == \
            self.provisioner and (volume.get("status") or {}).get("phase") == "Released" and \
            volume["spec"].get("persistentVolumeReclaimPolicy") == "Delete" and \
            not volume["metadata"].get("deletionTimestamp")

    # Not `_delete`: this is a threading.Thread, whose own _delete() runs as the thread
    # ends (the stand-in printed a TypeError for it on every stop).
    def _delete_volume(self, volume):
        path = (volume["spec"].get("hostPath") or {}).get("path")
        if path and os.path.realpath(path).startswith(os.path.realpath(self.root) + os.sep):
            shutil.rmtree(path, ignore_errors=True)
        self.client.delete("persistentvolumes", "", volume["metadata"]["name"])
