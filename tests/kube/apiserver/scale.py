"""The scale subresource (`<workload>/<name>/scale`, an autoscaling/v1 Scale) of
Deployments, ReplicaSets and StatefulSets: what `kubectl scale` and autoscalers read and
write instead of the whole object. A write changes only the workload's spec.replicas, and
a resourceVersion in the Scale is a precondition on the workload's, as on a real server."""

import copy
import json

from . import errors
from .patch import apply_patch
from .rest import decode_body
from .selectors import selector_text

SCALABLE = {("apps", "deployments"), ("apps", "replicasets"), ("apps", "statefulsets")}
SCALE_GVK = {"group": "autoscaling", "version": "v1", "kind": "Scale"}


def scale_of(obj):
    md = obj["metadata"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                            "creationTimestamp") if k in md},
            "spec": {"replicas": spec.get("replicas", 1)},
            "status": {"replicas": status.get("replicas", 0),
                       "selector": selector_text(spec.get("selector"))}}


def read(api, rt, ns, name):
    return scale_of(api.get(rt, ns, name).obj)


def update(api, rt, ns, name, body, params):
    return _write(api, rt, ns, name, decode_body(body), params)


def patch(api, rt, ns, name, content_type, body, params):
    """Applied to the current Scale and retried on conflicts, unless the patch itself names
    a resourceVersion (then a stale one is the caller's conflict)."""
    for _attempt in range(20):
        current = read(api, rt, ns, name)
        new = apply_patch(content_type, current, body, False)
        pinned = (new.get("metadata") or {}).get("resourceVersion") != \
            current["metadata"]["resourceVersion"]
        try:
            return _write(api, rt, ns, name, new, params)
        except errors.ApiError as e:
            if e.code != 409 or pinned:
                raise
    raise errors.conflict(rt, name, "too many conflicting writes while patching")


def _write(api, rt, ns, name, scale, params):
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise errors.ApiError(422, "Invalid", f'Scale.autoscaling "{name}" is invalid: '
                              f"spec.replicas: Invalid value: {json.dumps(replicas)}: must be "
                              f"greater than or equal to 0", {"name": name, "group":
                                                             "autoscaling", "kind": "Scale"})
    cur = api.get(rt, ns, name)
    wanted = (scale.get("metadata") or {}).get("resourceVersion")
    if wanted and wanted != str(cur.rv):
        raise errors.conflict(rt, name)
    obj = copy.deepcopy(cur.obj)
    obj.setdefault("spec", {})["replicas"] = replicas
    obj["metadata"]["resourceVersion"] = str(cur.rv)
    written, _ = api.update(rt, ns, name, json.dumps(obj).encode(), params)
    return scale_of(written)

