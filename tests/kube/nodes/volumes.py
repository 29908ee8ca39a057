"""A pod's volumes as directories of its own, as the kubelet's volume manager makes them:
ConfigMap, Secret, downward API and projected volumes written by an atomic writer (files
are links into a `..data` folder swapped in one rename, so a reader never sees half an
update), and refreshed when their sources change; emptyDir; PersistentVolumeClaims and
hostPath as the directories they name - a claim's only once it is bound, and only on a
node its volume's node affinity admits (MountVolume.NodeAffinity, as the kubelet checks)."""

import base64
import os
import shutil
import threading
import time

from apiserver.errors import ApiError
from apiserver.tokens import POD_TOKEN_EXPIRATION_SECONDS

from .downward import FieldError, field_value
from .node_affinity import volume_allows


class VolumeError(Exception):
    """The volume cannot be set up yet (a missing ConfigMap): the pod waits in
    ContainerCreating, and an event says why (FailedMount)."""


def write_atomically(target, files, mode, group=None):
    """Makes `target` hold exactly `files` ({relative path: bytes}), the way the kubelet's
    AtomicWriter does: a fresh timestamped folder, `..data` pointing at it by a rename,
    and one link per top-level name into `..data`. With `group` (the pod's fsGroup) the
    files are that group's, as the kubelet's volume ownership makes them: a mode of 0440
    is then readable by a container that runs as another user of that group."""
    os.makedirs(target, exist_ok=True)
    stamp = f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns()}"
    fresh = os.path.join(target, stamp)
    os.mkdir(fresh)
    os.chmod(fresh, 0o755)
    for rel, data in files.items():
        path = os.path.join(fresh, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        if group is not None:
            os.chown(path, -1, group)
    link = os.path.join(target, "..data")
    tmp = os.path.join(target, "..data_tmp")
    if os.path.lexists(tmp):
        os.unlink(tmp)
    old = os.readlink(link) if os.path.lexists(link) else None
    os.symlink(stamp, tmp)
    os.rename(tmp, link)
    tops = {rel.split("/", 1)[0] for rel in files}
    for name in tops:
        entry = os.path.join(target, name)
        if not os.path.lexists(entry):
            os.symlink(os.path.join("..data", name), entry)
    for name in os.listdir(target):
        if not name.startswith("..") and name not in tops:
            os.unlink(os.path.join(target, name))
    if old and old != stamp:
        shutil.rmtree(os.path.join(target, old), ignore_errors=True)


class PodVolumes:
    def __init__(self, client, pod, folder, authn, node_labels):
        self.client, self.pod, self.folder = client, pod, folder
        self.authn = authn
        self.token = None  # the pod's service-account token, asked for once
        self.node_labels = node_labels  # what volumes' node affinity is checked against
        self.paths = {}                 # volume name -> host directory
        # The pod's worker sets the volumes up while the kubelet's sync may refresh them
        # (a source changed, or the periodic sync): two atomic writers in one folder
        # would race on its ..data link, so one writes at a time.
        self.lock = threading.Lock()

    @property
    def namespace(self):
        return self.pod["metadata"]["namespace"]

    def sources(self):
        """(kind, name) of the ConfigMaps and Secrets the volumes read, for refreshes."""
        out = set()
        for v in (self.pod.get("spec") or {}).get("volumes") or []:
            for src in [v] + [s for s in (v.get("projected") or {}).get("sources") or []]:
                if "configMap" in src:
                    out.add(("configmaps", src["configMap"].get("name")))
                if "secret" in src:
                    out.add(("secrets", src["secret"].get("secretName") or src["secret"].get("name")))
        return out

    def set_up(self):
        with self.lock:
            for v in (self.pod.get("spec") or {}).get("volumes") or []:
                self.paths[v["name"]] = self._set_up(v)
            return self.paths

    def refresh(self, pod=None):
        """Rewrites the volumes whose content comes from the API (a kubelet's periodic
        sync); emptyDirs and claims are left alone."""
        with self.lock:
            if pod is not None:
                self.pod = pod
            for v in (self.pod.get("spec") or {}).get("volumes") or []:
                if any(k in v for k in ("configMap", "secret", "projected", "downwardAPI")):
                    self._set_up(v)

    def _set_up(self, v):
        path = os.path.join(self.folder, "volumes", v["name"])
        if "emptyDir" in v:
            os.makedirs(path, exist_ok=True)
            os.chmod(path, 0o777)  # as the kubelet makes it: any user of the pod may write
            return path
        if "persistentVolumeClaim" in v:
            return self._claim(v["persistentVolumeClaim"]["claimName"])
        if "hostPath" in v:
            return _host_path(v["hostPath"])
        mode = 0o644
        files = {}
        if "configMap" in v:
            files = self._config_map(v["configMap"])
            mode = v["configMap"].get("defaultMode", mode)
        elif "secret" in v:
            files = self._secret(v["secret"])
            mode = v["secret"].get("defaultMode", mode)
        elif "downwardAPI" in v:
            files = self._downward(v["downwardAPI"].get("items") or [])
            mode = v["downwardAPI"].get("defaultMode", mode)
        elif "projected" in v:
            mode = v["projected"].get("defaultMode", mode)
            for s in v["projected"].get("sources") or []:
                if "serviceAccountToken" in s:
                    files[s["serviceAccountToken"]["path"]] = self._token(s["serviceAccountToken"])
                elif "configMap" in s:
                    files.update(self._config_map(s["configMap"]))
                elif "secret" in s:
                    files.update(self._secret(s["secret"]))
                elif "downwardAPI" in s:
                    files.update(self._downward(s["downwardAPI"].get("items") or []))
        else:
            raise VolumeError(f'volume "{v["name"]}": this kind of volume is not emulated')
        write_atomically(path, files, mode, ((self.pod.get("spec") or {}).get("securityContext") or {}).get("fsGroup"))
        return path

    def _keyed(self, src, data, kind):
        if data is None:
            if src.get("optional"):
                return {}
            raise VolumeError(f'{kind} "{src.get("name") or src.get("secretName")}" not found')
        items = src.get("items")
        if not items:
            return dict(data)
        out = {}
        for it in items:
            if it["key"] not in data:
                if src.get("optional"):
                    continue
                raise VolumeError(f'{kind} has no key "{it["key"]}"')
            out[it["path"]] = data[it["key"]]
        return out

    def _config_map(self, src):
        cm = self.client.get("configmaps", self.namespace, src.get("name"))
        data = None
        if cm is not None:
            data = {k: v.encode() for k, v in (cm.get("data") or {}).items()}
            data.update({k: base64.b64decode(v) for k, v in (cm.get("binaryData") or {}).items()})
        return self._keyed(src, data, "configmap")

    def _secret(self, src):
        name = src.get("secretName") or src.get("name")
        s = self.client.get("secrets", self.namespace, name)
        data = None
        if s is not None:
            data = {k: base64.b64decode(v) for k, v in (s.get("data") or {}).items()}
        return self._keyed(dict(src, name=name), data, "secret")

    def _token(self, src):
        """The kubelet's TokenRequest for the pod's ServiceAccount, bound to the pod (so it
        stops working when the pod goes); asked for once, not on every refresh."""
        if self.token is None:
            try:
                self.token = self.authn.issue_for_pod(self.pod, src.get("expirationSeconds") or POD_TOKEN_EXPIRATION_SECONDS)
            except ApiError as e:
                raise VolumeError(f"failed to fetch token: {e.message}")
        return self.token.encode()

    def _downward(self, items):
        out = {}
        for it in items:
            if "fieldRef" in it:
                try:
                    out[it["path"]] = field_value(self.pod, it["fieldRef"]["fieldPath"]).encode()
                except FieldError as e:
                    raise VolumeError(str(e))
        return out

    def _claim(self, claim_name):
        pvc = self.client.get("persistentvolumeclaims", self.namespace, claim_name)
        if pvc is None:
            raise VolumeError(f'persistentvolumeclaim "{claim_name}" not found')
        pv_name = (pvc.get("spec") or {}).get("volumeName")
        pv = pv_name and self.client.get("persistentvolumes", "", pv_name)
        if not pv or (pvc.get("status") or {}).get("phase") != "Bound":
            raise VolumeError(f'persistentvolumeclaim "{claim_name}" is not bound yet')
        if not volume_allows(pv, self.node_labels):
            raise VolumeError(f'MountVolume.NodeAffinity check failed for volume "{pv_name}" : '
                              f'no matching NodeSelectorTerms')
        spec = pv.get("spec") or {}
        if "hostPath" in spec:
            return _host_path(spec["hostPath"])
        path = (spec.get("local") or {}).get("path")
        if not path or not os.path.isdir(path):
            raise VolumeError(f'persistentvolume "{pv_name}": no directory {path}')
        return path


def _host_path(source):
    """A hostPath: this machine's path, which every node of the site shares."""
    path = source["path"]
    if source.get("type") == "DirectoryOrCreate":
        os.makedirs(path, exist_ok=True)
    if not os.path.exists(path):
        raise VolumeError(f"hostPath type check failed: {path} does not exist")
    return path
