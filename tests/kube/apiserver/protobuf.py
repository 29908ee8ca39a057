"""Just enough of the Kubernetes protobuf encoding for kubectl's imperative commands.

`kubectl create namespace|configmap|secret|serviceaccount` send their object as
`application/vnd.kubernetes.protobuf` and do not fall back to JSON, and so do `kubectl
create token` (a TokenRequest) and `kubectl auth can-i` (a SelfSubjectAccessReview); so
do client-go's typed clients, Helm's among them, for the DeleteOptions of a DELETE (Helm
deletes its release Secrets so when it uninstalls). The envelope is the
magic "k8s\\0" and a runtime.Unknown {typeMeta, raw}; raw is the object in the field
numbering of k8s.io/api's generated.proto (DeleteOptions: apimachinery's meta/v1). Only
those six kinds and DeleteOptions are decoded (others get
415 with a pointer to `kubectl apply`); responses are always JSON, which kubectl accepts.
"""

import base64

from .errors import ApiError

MAGIC = b"k8s\x00"


def _fields(buf):
    """Yields (field number, wire type, value) of one protobuf message."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
        elif wire == 2:
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield num, wire, v


def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _map_entry(buf, value_bytes=False):
    k = v = b""
    for num, _, val in _fields(buf):
        if num == 1:
            k = val
        elif num == 2:
            v = val
    return k.decode(), base64.b64encode(v).decode() if value_bytes else v.decode()


def _object_meta(buf):
    md, labels, annotations, finalizers = {}, {}, {}, []
    strings = {1: "name", 2: "generateName", 3: "namespace"}
    for num, _, v in _fields(buf):
        if num in strings and v:
            md[strings[num]] = v.decode()
        elif num == 11:
            k, val = _map_entry(v)
            labels[k] = val
        elif num == 12:
            k, val = _map_entry(v)
            annotations[k] = val
        elif num == 14:
            finalizers.append(v.decode())
    if labels:
        md["labels"] = labels
    if annotations:
        md["annotations"] = annotations
    if finalizers:
        md["finalizers"] = finalizers
    return md


def _namespace(fields, obj):
    for num, _, v in fields:
        if num == 2:
            fins = [f.decode() for n, _, f in _fields(v) if n == 1]
            if fins:
                obj["spec"] = {"finalizers": fins}


def _configmap(fields, obj):
    for num, wire, v in fields:
        if num == 2:
            obj.setdefault("data", {}).update([_map_entry(v)])
        elif num == 3:
            obj.setdefault("binaryData", {}).update([_map_entry(v, value_bytes=True)])
        elif num == 4 and wire == 0:
            obj["immutable"] = bool(v)


def _secret(fields, obj):
    for num, wire, v in fields:
        if num == 2:
            obj.setdefault("data", {}).update([_map_entry(v, value_bytes=True)])
        elif num == 3 and v:
            obj["type"] = v.decode()
        elif num == 4:
            obj.setdefault("stringData", {}).update([_map_entry(v)])
        elif num == 5 and wire == 0:
            obj["immutable"] = bool(v)


def _serviceaccount(fields, obj):
    for num, wire, v in fields:
        if num == 4 and wire == 0:
            obj["automountServiceAccountToken"] = bool(v)


def _strings(buf, names):
    """The string fields of a message: {json name: value} for field numbers in names."""
    return {names[num]: v.decode() for num, wire, v in _fields(buf) if num in names and wire == 2}


def _spec(fields, obj):
    """A request object's spec (field 2): the JSON spec to fill, and its fields."""
    spec = obj.setdefault("spec", {})
    return spec, [f for num, _, v in fields if num == 2 for f in _fields(v)]


def _token_request(fields, obj):
    spec, spec_fields = _spec(fields, obj)  # TokenRequestSpec
    for num, wire, v in spec_fields:
        if num == 1:
            spec.setdefault("audiences", []).append(v.decode())
        elif num == 3:
            spec["boundObjectRef"] = _strings(v, {1: "kind", 2: "apiVersion", 3: "name", 4: "uid"})
        elif num == 4 and wire == 0:
            spec["expirationSeconds"] = _int64(v)


RESOURCE_ATTRIBUTES = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource",
                       6: "subresource", 7: "name"}


def _self_subject_access_review(fields, obj):
    spec, spec_fields = _spec(fields, obj)  # SelfSubjectAccessReviewSpec
    for num, _, v in spec_fields:
        if num == 1:
            spec["resourceAttributes"] = _strings(v, RESOURCE_ATTRIBUTES)
        elif num == 2:
            spec["nonResourceAttributes"] = _strings(v, {1: "path", 2: "verb"})


def _int64(v):
    """A varint read as a signed int64 (negative numbers are ten-byte varints)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def _delete_options(fields, obj):
    for num, wire, v in fields:
        if num == 1 and wire == 0:
            obj["gracePeriodSeconds"] = _int64(v)
        elif num == 2:
            pre = {}
            for n, _, pv in _fields(v):
                if n == 1:
                    pre["uid"] = pv.decode()
                elif n == 2:
                    pre["resourceVersion"] = pv.decode()
            obj["preconditions"] = pre
        elif num == 3 and wire == 0:
            obj["orphanDependents"] = bool(v)
        elif num == 4 and v:
            obj["propagationPolicy"] = v.decode()
        elif num == 5:
            obj.setdefault("dryRun", []).append(v.decode())
        elif num == 6 and wire == 0:
            obj["ignoreStoreReadErrorWithClusterBreakingPotential"] = bool(v)


KINDS = {"Namespace": _namespace, "ConfigMap": _configmap, "Secret": _secret,
         "ServiceAccount": _serviceaccount, "TokenRequest": _token_request,
         "SelfSubjectAccessReview": _self_subject_access_review}
# Options, not objects: no ObjectMeta in field 1.
OPTIONS = {"DeleteOptions": _delete_options}


def decode(body):
    """The JSON form of a protobuf-encoded object of one of KINDS."""
    if not body.startswith(MAGIC):
        raise ApiError(400, "BadRequest", "protobuf body without the k8s envelope")
    api_version = kind = ""
    raw = b""
    for num, _, v in _fields(body[len(MAGIC):]):
        if num == 1:
            for n, _, tv in _fields(v):
                if n == 1:
                    api_version = tv.decode()
                elif n == 2:
                    kind = tv.decode()
        elif num == 2:
            raw = v
    if kind in OPTIONS:
        obj = {"apiVersion": api_version, "kind": kind}
        OPTIONS[kind](list(_fields(raw)), obj)
        return obj
    if kind not in KINDS:
        raise ApiError(415, "UnsupportedMediaType",
                       f"the stand-in decodes protobuf only for {', '.join(sorted(KINDS))} "
                       f"and {', '.join(sorted(OPTIONS))}; "
                       f"send {kind or 'this object'} as JSON (kubectl apply -f does)")
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {}}
    rest = []
    for num, wire, v in _fields(raw):
        if num == 1:
            obj["metadata"] = _object_meta(v)
        else:
            rest.append((num, wire, v))
    KINDS[kind](rest, obj)
    return obj
