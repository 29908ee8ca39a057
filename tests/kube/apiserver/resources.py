"""The resource types the stand-in serves, and the registry that maps URLs to them.

A ResourceType says everything the generic REST machinery needs to know about a kind:
where it lives (group/version/plural, namespaced or not), which subresources it has,
whether it tracks metadata.generation, which field labels it can be selected by, how
it prints as a table. Built-in kinds are declared here; custom resources get a
ResourceType derived from their CRD (see crd.py) and are added at run time.
"""

import threading
from dataclasses import dataclass, field

from . import eventsv1
from .eventsv1 import EventsV1Codec


def _get(obj, *path):
    for p in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj


def _text(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def field_label(*path):
    return lambda obj: _text(_get(obj, *path))


@dataclass
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    short_names: tuple = ()
    categories: tuple = ()
    status_subresource: bool = False
    # Nodes are registered by their kubelet with status in one create; others drop it.
    status_on_create: bool = False
    # metadata.generation counts spec changes (workload kinds and every custom resource).
    tracks_generation: bool = False
    # PUT without metadata.resourceVersion is allowed for most built-ins, never for CRs.
    allow_unconditional_update: bool = True
    # DELETE answers with the deleted object (pods, custom resources) or with a Status.
    returns_deleted_object: bool = False
    # field selector label -> function(obj) -> str; metadata.name/namespace always work.
    field_labels: dict = field(default_factory=dict)
    verbs: tuple = ("create", "delete", "deletecollection", "get", "list", "patch", "update",
                    "watch")
    crd: object = None          # crd.CustomResource for custom resources
    # A second view of another resource's objects (events.k8s.io Events): converts
    # between the stored form and this view (see eventsv1.py).
    codec: object = None
    served_versions: tuple = ()  # for CRs served under several versions (conversion None)

    def __post_init__(self):
        if not self.singular:
            self.singular = self.kind.lower()
        if not self.served_versions:
            self.served_versions = (self.version,)

    @property
    def key(self):
        """Storage key: a kind is stored once whatever version or view it is read through."""
        return self.codec.storage_key if self.codec else (self.group, self.plural)

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    def api_version_for(self, version):
        return f"{self.group}/{version}" if self.group else version

    @property
    def qualified_plural(self):
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def is_custom(self):
        return self.crd is not None

    def field_label_value(self, obj, label):
        if label == "metadata.name":
            return _text(_get(obj, "metadata", "name"))
        if label == "metadata.namespace" and self.namespaced:
            return _text(_get(obj, "metadata", "namespace"))
        fn = self.field_labels.get(label)
        return None if fn is None else fn(obj)

    def supports_field_label(self, label):
        return (label == "metadata.name" or (label == "metadata.namespace" and self.namespaced)
                or label in self.field_labels)


POD_FIELDS = {
    "spec.nodeName": field_label("spec", "nodeName"),
    "spec.restartPolicy": field_label("spec", "restartPolicy"),
    "spec.schedulerName": field_label("spec", "schedulerName"),
    "spec.serviceAccountName": field_label("spec", "serviceAccountName"),
    "spec.hostNetwork": lambda o: "true" if _get(o, "spec", "hostNetwork") else "false",
    "status.phase": field_label("status", "phase"),
    "status.podIP": field_label("status", "podIP"),
    "status.nominatedNodeName": field_label("status", "nominatedNodeName"),
}

EVENT_FIELDS = {
    f"involvedObject.{f}": field_label("involvedObject", f)
    for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
}
EVENT_FIELDS.update({
    "reason": field_label("reason"),
    "reportingComponent": field_label("reportingComponent"),
    "source": field_label("source", "component"),
    "type": field_label("type"),
})


def builtin_types():
    """The built-in kinds, stored generically so rendered charts and the operator's
    objects can be applied (their per-kind behaviour is in strategies.py and tables.py)."""
    R = ResourceType
    return [
        R("", "v1", "Namespace", "namespaces", False, short_names=("ns",),
          status_subresource=True, verbs=("create", "delete", "get", "list", "patch",
                                          "update", "watch"),
          field_labels={"status.phase": field_label("status", "phase")}),
        R("", "v1", "Node", "nodes", False, short_names=("no",), status_subresource=True,
          status_on_create=True,
          field_labels={"spec.unschedulable":
                        lambda o: "true" if _get(o, "spec", "unschedulable") else "false"}),
        R("", "v1", "Pod", "pods", True, short_names=("po",), categories=("all",),
          status_subresource=True, returns_deleted_object=True, field_labels=POD_FIELDS),
        R("", "v1", "Service", "services", True, short_names=("svc",), categories=("all",),
          status_subresource=True),
        R("", "v1", "Endpoints", "endpoints", True, short_names=("ep",), singular="endpoints"),
        R("", "v1", "ConfigMap", "configmaps", True, short_names=("cm",)),
        R("", "v1", "Secret", "secrets", True, field_labels={"type": field_label("type")}),
        R("", "v1", "Event", "events", True, short_names=("ev",), field_labels=EVENT_FIELDS),
        R("", "v1", "ServiceAccount", "serviceaccounts", True, short_names=("sa",)),
        R("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True,
          short_names=("pvc",), status_subresource=True),
        R("", "v1", "PersistentVolume", "persistentvolumes", False, short_names=("pv",),
          status_subresource=True),
        R("", "v1", "ResourceQuota", "resourcequotas", True, short_names=("quota",),
          status_subresource=True),
        R("", "v1", "LimitRange", "limitranges", True, short_names=("limits",)),
        R("apps", "v1", "Deployment", "deployments", True, short_names=("deploy",),
          categories=("all",), status_subresource=True, tracks_generation=True),
        R("apps", "v1", "StatefulSet", "statefulsets", True, short_names=("sts",),
          categories=("all",), status_subresource=True, tracks_generation=True),
        R("apps", "v1", "DaemonSet", "daemonsets", True, short_names=("ds",),
          categories=("all",), status_subresource=True, tracks_generation=True),
        R("apps", "v1", "ReplicaSet", "replicasets", True, short_names=("rs",),
          categories=("all",), status_subresource=True, tracks_generation=True),
        R("batch", "v1", "Job", "jobs", True, categories=("all",), status_subresource=True,
          tracks_generation=True),
        R("coordination.k8s.io", "v1", "Lease", "leases", True),
        R("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, short_names=("sc",)),
        R("events.k8s.io", "v1", "Event", "events", True, short_names=("ev",),
          codec=EventsV1Codec(), field_labels=eventsv1.field_labels(EVENT_FIELDS)),
        R("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
        R("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
        R("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
        R("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
        R("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True,
          short_names=("pdb",), status_subresource=True, tracks_generation=True),
        R("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False,
          short_names=("pc",)),
        R("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True,
          short_names=("netpol",)),
        R("apiextensions.k8s.io", "v1", "CustomResourceDefinition",
          "customresourcedefinitions", False, short_names=("crd", "crds"),
          categories=("api-extensions",), status_subresource=True, tracks_generation=True),
    ]


# Preferred version per group, in the order discovery lists groups.
GROUP_ORDER = ["", "apps", "events.k8s.io", "batch", "coordination.k8s.io", "storage.k8s.io",
               "rbac.authorization.k8s.io", "policy", "scheduling.k8s.io",
               "networking.k8s.io", "apiextensions.k8s.io"]


class Registry:
    """Maps (group, version, plural) to ResourceType; custom resources come and go.

    Readers take a snapshot dict; writers replace it, so lookups need no lock."""

    def __init__(self, types):
        self._lock = threading.Lock()
        self._by_gvr = {}
        self._custom = {}  # crd name -> [ResourceType per served version]
        for t in types:
            self._by_gvr[(t.group, t.version, t.plural)] = t
        self.generation = 0  # bumped on every change, feeds the discovery/openapi hash

    def lookup(self, group, version, plural):
        return self._by_gvr.get((group, version, plural))

    def all(self):
        return list(self._by_gvr.values())

    def by_key(self, key):
        """The storage-version ResourceType for a storage key (group, plural)."""
        for t in self._by_gvr.values():
            if t.key == key and t.codec is None and \
                    (t.crd is None or t.version == t.crd.storage_version):
                return t
        return None

    def find_kind(self, api_version, kind):
        group, _, version = api_version.rpartition("/")
        for t in self._by_gvr.values():
            if t.group == group and t.version == version and t.kind == kind:
                return t
        return None

    def group_versions(self):
        """{group: [versions]} in discovery order (preferred version first)."""
        out = {}
        for t in self._by_gvr.values():
            out.setdefault(t.group, [])
            if t.version not in out[t.group]:
                out[t.group].append(t.version)
        order = {g: i for i, g in enumerate(GROUP_ORDER)}
        for g, vs in out.items():
            custom = [t for t in self._by_gvr.values() if t.group == g and t.crd is not None]
            if custom:
                prio = custom[0].crd.version_priority
                vs.sort(key=lambda v: prio.get(v, 99))
        return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

    def set_custom(self, crd_name, types):
        with self._lock:
            table = dict(self._by_gvr)
            for t in self._custom.pop(crd_name, []):
                table.pop((t.group, t.version, t.plural), None)
            for t in types:
                table[(t.group, t.version, t.plural)] = t
            if types:
                self._custom[crd_name] = list(types)
            self._by_gvr = table
            self.generation += 1

    def custom_types(self):
        return [t for ts in self._custom.values() for t in ts]
