"""Values a pod reads about itself: downward-API fields (env fieldRef, downwardAPI volume
items) and $(VAR) references in env values, command and args, as the kubelet expands
them."""

import re


class FieldError(Exception):
    pass


_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def field_value(pod, path):
    md, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    simple = {
        "metadata.name": md.get("name"),
        "metadata.namespace": md.get("namespace"),
        "metadata.uid": md.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
        "status.podIPs": ",".join(p["ip"] for p in status.get("podIPs") or []),
        "status.hostIPs": ",".join(p["ip"] for p in status.get("hostIPs") or []),
    }
    if path in simple:
        return simple[path] or ""
    m = _SUBSCRIPT.match(path)
    if m:
        return (md.get(m.group(1)) or {}).get(m.group(2), "")
    if path in ("metadata.labels", "metadata.annotations"):
        items = md.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(items.items()))
    raise FieldError(f'unsupported fieldPath "{path}"')


def resource_value(container, ref):
    """resourceFieldRef with the default divisor: cpu in whole cores, rounded up;
    memory in bytes."""
    kind, _, name = ref["resource"].partition(".")
    q = ((container.get("resources") or {}).get(kind) or {}).get(name)
    if q is None:
        return "0"
    if name == "cpu":
        return str(max(1, -(-cpu_millis(q) // 1000)))
    return str(memory_bytes(q))


_UNITS = {"Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3, "Ti": 1024 ** 4,
          "k": 1000, "M": 1000 ** 2, "G": 1000 ** 3, "T": 1000 ** 4, "m": 0.001}


def memory_bytes(q):
    q = str(q)
    for unit in sorted(_UNITS, key=len, reverse=True):
        if q.endswith(unit):
            return int(float(q[:-len(unit)]) * _UNITS[unit])
    return int(float(q))


def cpu_millis(q):
    q = str(q)
    return int(float(q[:-1])) if q.endswith("m") else int(float(q) * 1000)


_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text, env):
    """$(NAME) becomes NAME's value where NAME is defined; $$ escapes; anything else is
    left as written (Kubernetes' expansion rules)."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)
    return _REF.sub(sub, text)
