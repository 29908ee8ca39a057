"""The three patch formats the API server accepts.

- JSON merge patch (RFC 7386): objects merge, null deletes, everything else replaces.
- JSON patch (RFC 6902): add/remove/replace/move/copy/test at JSON pointers.
- Strategic merge patch (built-in kinds only): like merge patch, but lists with a
  patch merge key (containers by name, ports by containerPort, ...) merge element by
  element, and the directives kubectl's three-way apply emits are honoured:
  `$patch: delete|replace|merge`, `$setElementOrder/<list>`,
  `$deleteFromPrimitiveList/<list>`, `$retainKeys`.
  The merge keys are the ones the Kubernetes types declare; only the fields the
  stand-in's users patch are listed (MERGE_KEYS).
"""

import copy
import json

from .errors import ApiError, bad_request

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


class PatchError(Exception):
    pass


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# -- JSON patch -----------------------------------------------------------------------

def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f'invalid JSON pointer "{path}"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, tokens):
    for t in tokens:
        if isinstance(doc, dict):
            if t not in doc:
                raise PatchError(f"missing value at {t}")
            doc = doc[t]
        elif isinstance(doc, list):
            try:
                doc = doc[int(t)]
            except (ValueError, IndexError):
                raise PatchError(f"invalid array index {t}")
        else:
            raise PatchError(f"cannot descend into {t}")
    return doc


def _add(doc, tokens, value, replace=False):
    if not tokens:
        return value
    parent = _walk(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError(f"replace operation does not apply: doc is missing key: {last}")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
            return doc
        try:
            i = int(last)
        except ValueError:
            raise PatchError(f"invalid array index {last}")
        if replace:
            if not 0 <= i < len(parent):
                raise PatchError(f"replace operation does not apply: index {i} out of range")
            parent[i] = value
        else:
            if not 0 <= i <= len(parent):
                raise PatchError(f"add operation does not apply: index {i} out of range")
            parent.insert(i, value)
    else:
        raise PatchError("add operation does not apply: parent is not a container")
    return doc


def _remove(doc, tokens):
    parent = _walk(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"remove operation does not apply: doc is missing key: {last}")
        return parent.pop(last)
    if isinstance(parent, list):
        try:
            return parent.pop(int(last))
        except (ValueError, IndexError):
            raise PatchError(f"remove operation does not apply: invalid index {last}")
    raise PatchError("remove operation does not apply")


def json_patch(target, ops):
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(target)
    for op in ops:
        kind = op.get("op")
        path = _pointer(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            doc = _add(doc, path, copy.deepcopy(op.get("value")), replace=True)
        elif kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            value = _remove(doc, src) if kind == "move" else copy.deepcopy(_walk(doc, src))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _walk(doc, path) != op.get("value"):
                raise PatchError(f"testing value {op.get('path')} failed: test failed")
        else:
            raise PatchError(f'Unexpected kind: {kind}')
    return doc


# -- strategic merge patch ------------------------------------------------------------

# List field name -> patch merge key, as declared on the Kubernetes Go types. Context
# decides between container ports (containerPort) and service ports (port).
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "env": "name", "volumes": "name", "volumeMounts": "mountPath",
    "volumeDevices": "devicePath", "imagePullSecrets": "name", "hostAliases": "ip",
    "conditions": "type", "ownerReferences": "uid", "topologySpreadConstraints":
    "topologyKey", "addresses": "type", "resourceClaims": "name", "secrets": "name",
    "schedulingGates": "name",
}
# Lists of scalars whose patch strategy is merge (a union), e.g. metadata.finalizers.
MERGED_SCALAR_LISTS = {"finalizers"}


def _merge_key(path, name):
    if name == "ports":
        return "containerPort" if path and path[-1] in ("containers", "initContainers") \
            or "containers" in path or "initContainers" in path else "port"
    return MERGE_KEYS.get(name)


def strategic_merge_patch(target, patch, path=()):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    orders = {}
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys"):
            continue
        if k.startswith("$setElementOrder/"):
            orders[k.split("/", 1)[1]] = v
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = [x for x in out[field] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list):
            out[k] = _merge_list(out.get(k), v, path + (k,), k)
        else:
            merged = strategic_merge_patch(out.get(k), v, path + (k,))
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
    for field, order in orders.items():
        if isinstance(out.get(field), list):
            out[field] = _apply_order(out[field], order, _merge_key(path, field))
    if retain is not None:
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(current, patch, path, name):
    key = _merge_key(path[:-1], name)
    current = current if isinstance(current, list) else []
    if name in MERGED_SCALAR_LISTS and all(not isinstance(x, dict) for x in patch):
        return current + [x for x in patch if x not in current]
    if key is None:
        # No merge key: the list is atomic, unless it is a `$patch: replace` wrapper.
        return [copy.deepcopy(x) for x in patch if not (isinstance(x, dict) and "$patch" in x)]
    if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
        return [copy.deepcopy(x) for x in patch if not (isinstance(x, dict) and "$patch" in x)]
    out = [copy.deepcopy(x) for x in current]
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"strategic merge patch: list {name} expects objects")
        k = item.get(key)
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == k),
                   None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append({kk: vv for kk, vv in item.items() if kk != "$patch"})
        else:
            out[idx] = strategic_merge_patch(out[idx], item, path)
    return out


def _apply_order(items, order, key):
    if key is None:
        return items
    rank = {o.get(key) if isinstance(o, dict) else o: i for i, o in enumerate(order)}
    return sorted(items, key=lambda x: rank.get(x.get(key) if isinstance(x, dict) else x,
                                                len(rank)))


def apply_patch(content_type, current, body, custom_resource):
    """Applies a patch body (bytes) of the given content type to current (a dict)."""
    media = (content_type or "").split(";")[0].strip()
    try:
        patch = json.loads(body or b"null")
    except ValueError as e:
        raise bad_request(f"error decoding patch: {e}")
    try:
        if media == MERGE:
            if not isinstance(patch, dict):
                raise bad_request("merge patch must be a JSON object")
            return merge_patch(current, patch)
        if media == JSON_PATCH:
            return json_patch(current, patch)
        if media == STRATEGIC and not custom_resource:
            if not isinstance(patch, dict):
                raise bad_request("strategic merge patch must be a JSON object")
            return strategic_merge_patch(current, patch)
    except PatchError as e:
        raise ApiError(422, "Invalid", f"the server rejected our request due to an error in "
                       f"our request: {e}")
    if media == APPLY:
        raise ApiError(415, "UnsupportedMediaType",
                       "server-side apply is not emulated by the stand-in "
                       "(use client-side kubectl apply)")
    accepted = "application/json-patch+json, application/merge-patch+json"
    if not custom_resource:
        accepted += ", application/strategic-merge-patch+json"
    raise ApiError(415, "UnsupportedMediaType",
                   f"the body of the request was in an unknown format - accepted media types "
                   f"include: {accepted}")
