"""Per-kind behaviour of built-in resources: defaults filled in on create, the few
validations and immutable fields clients trip over, and the name rules.

A real API server has a registry strategy per kind with hundreds of rules; only what
the operator, kubectl and Helm-rendered manifests can observe is here (pods get
their phase, restart policy and scheduler name; services a cluster IP; namespaces
their finalizer and phase; secrets fold stringData into data).
"""

import base64
import itertools
import re
import threading

from .errors import FieldError
from .selectors import selector_matches

# \Z, not $: Python's $ also matches before a last newline, which Go's does
# not, and a name "digits-cnn\n" was created, then could not be deleted by
# its URL (a user's trial).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def dns_subdomain_errors(name, field="metadata.name"):
    if len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        return [FieldError("invalid", field, "a lowercase RFC 1123 subdomain must consist of "
                           "lower case alphanumeric characters, '-' or '.', and must start and "
                           "end with an alphanumeric character", value=name)]
    return []


def dns_label_errors(name, field="metadata.name"):
    if len(name) > 63 or not DNS_LABEL.match(name):
        return [FieldError("invalid", field, "a lowercase RFC 1123 label must consist of lower "
                           "case alphanumeric characters or '-', and must start and end with an "
                           "alphanumeric character", value=name)]
    return []


def path_segment_errors(name, field="metadata.name"):
    if name in (".", "..") or "/" in name or "%" in name:
        return [FieldError("invalid", field, "may not contain '/' or '%'", value=name)]
    return []


class Strategy:
    name_errors = staticmethod(dns_subdomain_errors)

    def decode_error(self, obj):
        """Why the typed decoder of a real server would refuse obj (a 400), or None."""
        return None

    def defaults(self, obj):
        """Field defaults, applied on every write as the typed decoder does."""

    def prepare_create(self, obj):
        """What only a create does (allocations, initial status)."""

    def prepare_update(self, new, old):
        """What an update carries over from the old object."""

    def validate(self, obj, old):
        return []


class NamespaceStrategy(Strategy):
    name_errors = staticmethod(dns_label_errors)

    def prepare_create(self, obj):
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
        labels = obj["metadata"].setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]

    def prepare_update(self, new, old):
        new["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = \
            new["metadata"]["name"]
        # spec.finalizers only changes through the /finalize subresource.
        new["spec"] = old.get("spec", {})


class PodStrategy(Strategy):
    MUTABLE_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")

    def defaults(self, obj):
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("securityContext", {})
        for c in spec.get("containers") or []:
            image = c.get("image", "")
            tag = image.rsplit("/", 1)[-1]
            latest = ":" not in tag or tag.endswith(":latest")
            c.setdefault("imagePullPolicy", "Always" if latest and "@" not in tag
                         else "IfNotPresent")
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            c.setdefault("resources", {})

    def prepare_create(self, obj):
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj["spec"])}

    def validate(self, obj, old):
        errs = []
        containers = (obj.get("spec") or {}).get("containers")
        if not containers:
            errs.append(FieldError("required", "spec.containers"))
        for i, c in enumerate(containers or []):
            if not c.get("name"):
                errs.append(FieldError("required", f"spec.containers[{i}].name"))
            if not c.get("image") and old is None:
                errs.append(FieldError("required", f"spec.containers[{i}].image"))
        if old is not None and _pod_spec_core(obj) != _pod_spec_core(old):
            errs.append(FieldError("forbidden", "spec", "pod updates may not change fields "
                                   "other than `spec.containers[*].image`, "
                                   "`spec.initContainers[*].image`, "
                                   "`spec.activeDeadlineSeconds`, `spec.tolerations` (only "
                                   "additions to existing tolerations), "
                                   "`spec.terminationGracePeriodSeconds`"))
        return errs


def _pod_spec_core(pod):
    spec = dict(pod.get("spec") or {})
    for f in PodStrategy.MUTABLE_SPEC:
        spec.pop(f, None)
    for key in ("containers", "initContainers"):
        spec[key] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get(key) or []]
    return spec


def _qos_class(spec):
    res = [c.get("resources") or {} for c in spec.get("containers") or []]
    if not any(r.get("requests") or r.get("limits") for r in res):
        return "BestEffort"
    if all(r.get("limits") and r.get("requests", r.get("limits")) == r.get("limits")
           for r in res):
        return "Guaranteed"
    return "Burstable"


class ServiceStrategy(Strategy):
    name_errors = staticmethod(dns_label_errors)
    _ips = itertools.count(10)
    _lock = threading.Lock()

    def defaults(self, obj):
        spec = obj.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for p in spec.get("ports") or []:
            p.setdefault("protocol", "TCP")
            p.setdefault("targetPort", p.get("port"))

    def prepare_create(self, obj):
        spec = obj["spec"]
        if spec.get("clusterIP") != "None":
            with self._lock:
                n = next(self._ips)
            spec["clusterIP"] = f"10.96.{n // 250}.{n % 250 + 1}"
        spec["clusterIPs"] = [spec["clusterIP"]]
        obj["status"] = {"loadBalancer": {}}

    def validate(self, obj, old):
        if old is not None and (old.get("spec") or {}).get("clusterIP") != \
                (obj.get("spec") or {}).get("clusterIP"):
            return [FieldError("invalid", "spec.clusterIP", "field is immutable",
                               value=(obj.get("spec") or {}).get("clusterIP", ""))]
        return []

    def prepare_update(self, new, old):
        spec = new.setdefault("spec", {})
        if "clusterIP" not in spec:
            spec["clusterIP"] = (old.get("spec") or {}).get("clusterIP")
            spec["clusterIPs"] = (old.get("spec") or {}).get("clusterIPs")


class SecretStrategy(Strategy):
    def _fold(self, obj):
        string_data = obj.pop("stringData", None) or {}
        if string_data:
            data = obj.setdefault("data", {})
            for k, v in string_data.items():
                data[k] = base64.b64encode(v.encode()).decode()

    def defaults(self, obj):
        obj.setdefault("type", "Opaque")
        self._fold(obj)


class ReplicaSetStrategy(Strategy):
    """apps/v1 workloads: a selector is required, must select the pod template's labels,
    and never changes."""

    def defaults(self, obj):
        obj.setdefault("spec", {}).setdefault("replicas", 1)

    def validate(self, obj, old):
        spec = obj.get("spec") or {}
        selector = spec.get("selector")
        if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
            return [FieldError("required", "spec.selector")]
        errs = []
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not selector_matches(selector, labels):
            errs.append(FieldError("invalid", "spec.template.metadata.labels",
                                   "`selector` does not match template `labels`", value=labels))
        if old is not None and (old.get("spec") or {}).get("selector") != selector:
            errs.append(FieldError("invalid", "spec.selector", "field is immutable",
                                   value=selector))
        replicas = spec.get("replicas")
        if isinstance(replicas, int) and replicas < 0:
            errs.append(FieldError("invalid", "spec.replicas",
                                   "must be greater than or equal to 0", value=replicas))
        return errs


class DeploymentStrategy(ReplicaSetStrategy):
    def defaults(self, obj):
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        spec.setdefault("strategy", {"type": "RollingUpdate"})
        if spec["strategy"].get("type", "RollingUpdate") == "RollingUpdate":
            spec["strategy"]["type"] = "RollingUpdate"
            rolling = spec["strategy"].setdefault("rollingUpdate", {})
            rolling.setdefault("maxSurge", "25%")
            rolling.setdefault("maxUnavailable", "25%")

    def validate(self, obj, old):
        errs = super().validate(obj, old)
        rolling = ((obj.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
        if rolling and str(rolling.get("maxSurge")) in ("0", "0%") and \
                str(rolling.get("maxUnavailable")) in ("0", "0%"):
            errs.append(FieldError("invalid", "spec.strategy.rollingUpdate.maxUnavailable",
                                   "may not be 0 when `maxSurge` is 0",
                                   value=rolling.get("maxUnavailable")))
        return errs


class PersistentVolumeClaimStrategy(Strategy):
    def defaults(self, obj):
        obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")

    def prepare_create(self, obj):
        obj["status"] = {"phase": "Pending"}

    def validate(self, obj, old):
        spec = obj.get("spec") or {}
        errs = []
        if not spec.get("accessModes"):
            errs.append(FieldError("required", "spec.accessModes", "at least 1 access mode "
                                   "is required"))
        if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
            errs.append(FieldError("required", "spec.resources[storage]"))
        return errs


class PersistentVolumeStrategy(Strategy):
    def defaults(self, obj):
        spec = obj.setdefault("spec", {})
        spec.setdefault("volumeMode", "Filesystem")
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")

    def prepare_create(self, obj):
        obj["status"] = {"phase": "Pending"}


MICRO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})\Z")


class LeaseStrategy(Strategy):
    def decode_error(self, obj):
        # acquireTime/renewTime are metav1.MicroTime: exactly six fractional digits.
        spec = obj.get("spec") or {}
        for f in ("acquireTime", "renewTime"):
            v = spec.get(f)
            if v is not None and not (isinstance(v, str) and MICRO_TIME.match(v)):
                return (f'parsing time "{v}" as "2006-01-02T15:04:05.000000Z07:00": '
                        f'spec.{f} is not an RFC 3339 time with microseconds')
        for f in ("leaseDurationSeconds", "leaseTransitions"):
            v = spec.get(f)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                return (f'json: cannot unmarshal {type(v).__name__} into Go struct field '
                        f'LeaseSpec.spec.{f} of type int32')
        if not isinstance(spec.get("holderIdentity", ""), (str, type(None))):
            return "json: cannot unmarshal into Go struct field LeaseSpec.spec.holderIdentity " \
                   "of type string"
        return None

    def validate(self, obj, old):
        spec = obj.get("spec") or {}
        d = spec.get("leaseDurationSeconds")
        if d is not None and (not isinstance(d, int) or d <= 0):
            return [FieldError("invalid", "spec.leaseDurationSeconds", "must be greater than 0",
                               value=d)]
        return []


class PathSegmentStrategy(Strategy):
    name_errors = staticmethod(path_segment_errors)


STRATEGIES = {
    ("", "namespaces"): NamespaceStrategy(),
    ("", "pods"): PodStrategy(),
    ("", "services"): ServiceStrategy(),
    ("", "secrets"): SecretStrategy(),
    ("apps", "deployments"): DeploymentStrategy(),
    ("apps", "replicasets"): ReplicaSetStrategy(),
    ("", "persistentvolumeclaims"): PersistentVolumeClaimStrategy(),
    ("", "persistentvolumes"): PersistentVolumeStrategy(),
    ("coordination.k8s.io", "leases"): LeaseStrategy(),
    ("rbac.authorization.k8s.io", "roles"): PathSegmentStrategy(),
    ("rbac.authorization.k8s.io", "rolebindings"): PathSegmentStrategy(),
    ("rbac.authorization.k8s.io", "clusterroles"): PathSegmentStrategy(),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): PathSegmentStrategy(),
}
DEFAULT = Strategy()


def strategy_for(rt):
    return STRATEGIES.get(rt.key, DEFAULT)
