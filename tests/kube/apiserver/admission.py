"""Admission plugins a kube-apiserver runs on every create by default, which the node
emulator's pods rely on (enabled with --nodes; see tests/kube/README.md):

- DefaultTolerationSeconds: every pod tolerates node.kubernetes.io/not-ready and
  node.kubernetes.io/unreachable (NoExecute) for --default-toleration-seconds (300),
  unless it says otherwise; the node lifecycle controller evicts it after that.
- DefaultStorageClass: a PersistentVolumeClaim that names no storageClassName gets the
  default StorageClass's (annotated storageclass.kubernetes.io/is-default-class, the
  newest if several; `storageClassName: ""` asks for none).
- StorageObjectInUseProtection: PersistentVolumeClaims get the kubernetes.io/pvc-protection
  finalizer and PersistentVolumes kubernetes.io/pv-protection, which the emulated
  protection controllers remove once no pod uses the claim, or no claim the volume.
- Priority: a pod's priorityClassName (or the globalDefault PriorityClass's, else none)
  gives it spec.priority and spec.preemptionPolicy; a class that does not exist refuses
  the pod (403). The API server creates the system-cluster-critical and
  system-node-critical classes at start, as a real one does.
- ServiceAccount: spec.serviceAccountName defaults to `default`, and unless
  automountServiceAccountToken is false (on the pod or its ServiceAccount) every
  container mounts a projected `kube-api-access-*` volume at
  /var/run/secrets/kubernetes.io/serviceaccount: token, ca.crt (from the namespace's
  kube-root-ca.crt ConfigMap) and namespace.

And one a kube-apiserver runs only when enabled, as OpenShift's does, with
--enable-admission-plugins=OwnerReferencesPermissionEnforcement (with or without --nodes):

- OwnerReferencesPermissionEnforcement: an object created with an owner reference whose
  blockOwnerDeletion is true is refused (403) unless its creator may `update` the owner's
  `finalizers` subresource, as RBAC judges it; the check is recorded as a request of
  the creator's. (The real plugin judges updates that change owner references too, and
  asks them for `delete` on the object; the stand-in runs admission on creates alone.)
"""

import random
import string

from . import errors, rbac
from .tokens import POD_TOKEN_EXPIRATION_SECONDS

SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


def default_toleration_seconds(seconds):
    def admit(rt, pod):
        if rt.key != ("", "pods"):
            return
        tolerations = pod.setdefault("spec", {}).setdefault("tolerations", [])
        for key in (NOT_READY, UNREACHABLE):
            if any((t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
                   and t.get("effect") in (None, "", "NoExecute") for t in tolerations):
                continue
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": seconds})
    return admit


def service_account(store, registry):
    sa_key = registry.lookup("", "v1", "serviceaccounts").key

    def admit(rt, pod):
        if rt.key != ("", "pods"):
            return
        spec = pod.setdefault("spec", {})
        name = spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", name)
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            sa = store.get(sa_key, pod["metadata"].get("namespace", ""), name)
            automount = (sa.obj.get("automountServiceAccountToken") if sa else None) is not False
        if not automount:
            return
        containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
        if any(m.get("mountPath") == SA_MOUNT for c in containers
               for m in c.get("volumeMounts") or []):
            return
        volume = "kube-api-access-" + "".join(random.choice(string.ascii_lowercase + string.digits)
                                              for _ in range(5))
        spec.setdefault("volumes", []).append({"name": volume, "projected": {
            "defaultMode": 0o644,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": POD_TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                    "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})
        for c in containers:
            c.setdefault("volumeMounts", []).append({"name": volume, "readOnly": True,
                                                     "mountPath": SA_MOUNT})
    return admit


DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def default_storage_class(store, registry):
    classes = registry.lookup("storage.k8s.io", "v1", "storageclasses").key

    def admit(rt, claim):
        if rt.key != ("", "persistentvolumeclaims"):
            return
        spec = claim.setdefault("spec", {})
        if "storageClassName" in spec:
            return
        defaults = [s.obj for s in store.list(classes)[0]
                    if (s.obj["metadata"].get("annotations") or {}).get(DEFAULT_CLASS) == "true"]
        if defaults:
            newest = max(defaults, key=lambda c: (c["metadata"]["creationTimestamp"],
                                                  c["metadata"]["name"]))
            spec["storageClassName"] = newest["metadata"]["name"]
    return admit


def storage_object_in_use_protection(rt, obj):
    finalizer = {("", "persistentvolumeclaims"): PVC_PROTECTION,
                 ("", "persistentvolumes"): PV_PROTECTION}.get(rt.key)
    if finalizer:
        fins = obj["metadata"].setdefault("finalizers", [])
        if finalizer not in fins:
            fins.append(finalizer)


SYSTEM_PRIORITY_CLASSES = (("system-node-critical", 2000001000),
                           ("system-cluster-critical", 2000000000))


def system_priority_classes():
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": name}, "value": value, "preemptionPolicy":
             "PreemptLowerPriority", "description": "Used for system critical pods that must "
             "not be moved from their current node." if name == "system-node-critical" else
             "Used for system critical pods that must run in the cluster, but can be moved "
             "to another node if necessary."} for name, value in SYSTEM_PRIORITY_CLASSES]


def priority(store, registry):
    classes = registry.lookup("scheduling.k8s.io", "v1", "priorityclasses").key

    def admit(rt, pod):
        if rt.key != ("", "pods"):
            return
        spec = pod.setdefault("spec", {})
        name = spec.get("priorityClassName")
        if name:
            found = store.get(classes, "", name)
            if found is None:
                raise errors.forbidden(rt, pod["metadata"].get("name", ""),
                                       f"no PriorityClass with name {name} was found")
            chosen = found.obj
        else:
            chosen = next((s.obj for s in store.list(classes)[0]
                           if s.obj.get("globalDefault")), None)
            if chosen is not None:
                spec["priorityClassName"] = chosen["metadata"]["name"]
        spec["priority"] = chosen.get("value", 0) if chosen else 0
        spec["preemptionPolicy"] = (chosen or {}).get("preemptionPolicy",
                                                      "PreemptLowerPriority")
    return admit


def owner_references_permission_enforcement(authorizer, registry):
    def admit(rt, obj):
        user = rbac.requester()
        if user is None or user.privileged:
            return
        md = obj.get("metadata") or {}
        for ref in md.get("ownerReferences") or []:
            if not ref.get("blockOwnerDeletion"):
                continue
            owner = registry.find_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
            if owner is None:
                raise errors.ApiError(
                    403, "Forbidden", f'{rt.qualified_plural} "{md.get("name", "")}" is forbidden: cannot set '
                    f"blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion "
                    f'{ref.get("apiVersion")} Kind {ref.get("kind")}', {"kind": rt.plural})
            attrs = rbac.RequestAttributes("update", "", True, owner.group, owner.plural, "finalizers",
                                           md.get("namespace", ""), ref.get("name", ""))
            decision = authorizer.authorize(user, attrs)
            authorizer.log.record(user, attrs, decision.allowed)
            if not decision.allowed:
                details = {"kind": rt.plural, "name": md.get("name", "")}
                if rt.group:
                    details["group"] = rt.group
                raise errors.ApiError(
                    403, "Forbidden", f'{rt.qualified_plural} "{md.get("name", "")}" is forbidden: cannot set '
                    f"blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: "
                    f'User "{user.name}" cannot update resource "{owner.plural}/finalizers" in API group '
                    f'"{owner.group}" in the namespace "{md.get("namespace", "")}"', details)
    return admit
