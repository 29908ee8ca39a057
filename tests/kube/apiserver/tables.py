"""Server-side printing: the meta.k8s.io/v1 Table that `kubectl get` asks for.

kubectl does not format objects itself: it sends
`Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints the columns the
server returns (priority > 0 only with -o wide). Built-ins get the columns kubectl users
know; custom resources get Name + the CRD's additionalPrinterColumns (+ Age). Date
columns are rendered by the server as ages ("5m"), like apimachinery's HumanDuration.
"""

import re
from datetime import datetime, timezone

from .errors import bad_request


def parse_time(s):
    try:
        return datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        return None


def human_duration(seconds):
    """apimachinery's duration.HumanDuration: coarser as the duration grows."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 60 * 2:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 60 * 3:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        y = h // (24 * 365)
        d = (h % (24 * 365)) // 24
        return f"{y}y{d}d" if d else f"{y}y"
    return f"{h // (24 * 365)}y"


def age(ts, now):
    t = parse_time(ts)
    return "<unknown>" if t is None else human_duration((now - t).total_seconds())


# -- JSONPath (the subset CRD printer columns use) ------------------------------------

_TOKEN = re.compile(r"\.([A-Za-z0-9_\-$]+)|\[(\d+|\*)\]|\[\?\(@\.([A-Za-z0-9_.\-]+)\s*==\s*"
                    r"['\"]([^'\"]*)['\"]\)\]|\['([^']+)'\]")


def compile_jsonpath(expr):
    expr = expr.strip()
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1]
    if expr.startswith("$"):
        expr = expr[1:]
    steps, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            raise bad_request(f"unsupported JSONPath {expr!r}")
        field, index, filt_field, filt_value, quoted = m.groups()
        if field is not None or quoted is not None:
            steps.append(("field", field if field is not None else quoted))
        elif index is not None:
            steps.append(("index", index))
        else:
            steps.append(("filter", filt_field.split("."), filt_value))
        pos = m.end()
    return steps


def eval_jsonpath(steps, obj):
    values = [obj]
    for step in steps:
        out = []
        for v in values:
            if step[0] == "field" and isinstance(v, dict) and step[1] in v:
                out.append(v[step[1]])
            elif step[0] == "index" and isinstance(v, list):
                if step[1] == "*":
                    out.extend(v)
                elif int(step[1]) < len(v):
                    out.append(v[int(step[1])])
            elif step[0] == "filter" and isinstance(v, list):
                for item in v:
                    x = item
                    for f in step[1]:
                        x = x.get(f) if isinstance(x, dict) else None
                    if x is not None and str(x) == step[2]:
                        out.append(item)
        values = out
    return values


# -- column specs ---------------------------------------------------------------------

class Column:
    def __init__(self, name, type_, cell, priority=0, format_="", description=""):
        self.name, self.type, self.cell = name, type_, cell
        self.priority, self.format, self.description = priority, format_, description

    def definition(self):
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description, "priority": self.priority}


def _md(o, k):
    return (o.get("metadata") or {}).get(k)


def _g(o, *path, default=None):
    for p in path:
        if not isinstance(o, dict):
            return default
        o = o.get(p)
    return default if o is None else o


NAME = Column("Name", "string", lambda o, now: _md(o, "name"), format_="name",
              description="Name must be unique within a namespace.")
AGE = Column("Age", "string", lambda o, now: age(_md(o, "creationTimestamp"), now),
             description="CreationTimestamp is a timestamp representing the server time "
                         "when this object was created.")


def _node_status(o, now):
    ready = next((c for c in _g(o, "status", "conditions", default=[])
                  if c.get("type") == "Ready"), None)
    s = "Ready" if ready and ready.get("status") == "True" else "NotReady" if ready else "Unknown"
    if _g(o, "spec", "unschedulable"):
        s += ",SchedulingDisabled"
    return s


def _node_roles(o, now):
    roles = sorted(k.split("/", 1)[1] for k in (_md(o, "labels") or {})
                   if k.startswith("node-role.kubernetes.io/"))
    return ",".join(roles) or "<none>"


def _node_address(kind):
    def cell(o, now):
        a = next((a.get("address") for a in _g(o, "status", "addresses", default=[])
                  if a.get("type") == kind), None)
        return a or "<none>"
    return cell


def _pod_ready(o, now):
    statuses = _g(o, "status", "containerStatuses", default=[])
    total = len(_g(o, "spec", "containers", default=[]))
    return f"{sum(1 for c in statuses if c.get('ready'))}/{total}"


def _pod_status(o, now):
    if _md(o, "deletionTimestamp"):
        return "Terminating"
    reason = _g(o, "status", "reason")
    if reason:
        return reason
    for c in _g(o, "status", "containerStatuses", default=[]):
        waiting = _g(c, "state", "waiting", "reason")
        if waiting:
            return waiting
        term = _g(c, "state", "terminated", "reason")
        if term:
            return term
    return _g(o, "status", "phase", default="Pending")


def _pod_restarts(o, now):
    return sum(c.get("restartCount", 0) for c in _g(o, "status", "containerStatuses", default=[]))


def _svc_ports(o, now):
    ports = _g(o, "spec", "ports", default=[])
    return ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in ports) or "<none>"


def _event_object(o, now):
    io = o.get("involvedObject") or {}
    return f"{(io.get('kind') or '').lower()}/{io.get('name', '')}"


def _last_seen(o, now):
    ts = o.get("lastTimestamp") or o.get("eventTime") or _md(o, "creationTimestamp")
    return age(ts, now)


def _data_count(o, now):
    return len(o.get("data") or {}) + len(o.get("binaryData") or {})


_ACCESS_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
                 "ReadWriteOncePod": "RWOP"}


def _access_modes(o, now):
    return ",".join(_ACCESS_MODES.get(m, m) for m in _g(o, "spec", "accessModes", default=[]))


def _storage_class_name(o, now):
    default = _g(o, "metadata", "annotations", "storageclass.kubernetes.io/is-default-class")
    return _md(o, "name") + (" (default)" if default == "true" else "")


def _claim_ref(o, now):
    ref = _g(o, "spec", "claimRef")
    return f"{ref.get('namespace')}/{ref.get('name')}" if ref else ""


def _int(*path):
    return lambda o, now: _g(o, *path, default=0)


def _text(*path):
    return lambda o, now: _g(o, *path, default="")


UNSET_VOLUME_ATTRIBUTES_CLASS = Column("VolumeAttributesClass", "string",
                                       lambda o, now: "<unset>")

BUILTIN_COLUMNS = {
    ("", "namespaces"): [NAME, Column("Status", "string",
                                      lambda o, now: _g(o, "status", "phase", default="")), AGE],
    ("", "nodes"): [
        NAME, Column("Status", "string", _node_status), Column("Roles", "string", _node_roles),
        AGE, Column("Version", "string",
                    lambda o, now: _g(o, "status", "nodeInfo", "kubeletVersion", default="")),
        Column("Internal-IP", "string", _node_address("InternalIP"), priority=1),
        Column("External-IP", "string", _node_address("ExternalIP"), priority=1),
        Column("OS-Image", "string",
               lambda o, now: _g(o, "status", "nodeInfo", "osImage", default=""), priority=1),
        Column("Kernel-Version", "string",
               lambda o, now: _g(o, "status", "nodeInfo", "kernelVersion", default=""),
               priority=1),
        Column("Container-Runtime", "string",
               lambda o, now: _g(o, "status", "nodeInfo", "containerRuntimeVersion",
                                 default=""), priority=1)],
    ("", "pods"): [
        NAME, Column("Ready", "string", _pod_ready), Column("Status", "string", _pod_status),
        Column("Restarts", "string", lambda o, now: str(_pod_restarts(o, now))), AGE,
        Column("IP", "string", lambda o, now: _g(o, "status", "podIP", default="<none>"),
               priority=1),
        Column("Node", "string", lambda o, now: _g(o, "spec", "nodeName", default="<none>"),
               priority=1)],
    ("", "services"): [
        NAME, Column("Type", "string", lambda o, now: _g(o, "spec", "type", default="")),
        Column("Cluster-IP", "string", lambda o, now: _g(o, "spec", "clusterIP", default="")),
        Column("External-IP", "string", lambda o, now: "<none>"),
        Column("Port(s)", "string", _svc_ports), AGE],
    ("", "configmaps"): [NAME, Column("Data", "integer", _data_count), AGE],
    ("", "secrets"): [NAME, Column("Type", "string", lambda o, now: o.get("type", "")),
                      Column("Data", "integer", _data_count), AGE],
    ("", "events"): [
        Column("Last Seen", "string", _last_seen), Column("Type", "string",
                                                          lambda o, now: o.get("type", "")),
        Column("Reason", "string", lambda o, now: o.get("reason", "")),
        Column("Object", "string", _event_object),
        Column("Message", "string", lambda o, now: o.get("message", ""))],
    ("", "serviceaccounts"): [NAME, AGE],
    ("coordination.k8s.io", "leases"): [
        NAME, Column("Holder", "string",
                     lambda o, now: _g(o, "spec", "holderIdentity", default="")), AGE],
    ("apps", "deployments"): [
        NAME, Column("Ready", "string", lambda o, now:
                     f"{_g(o, 'status', 'readyReplicas', default=0)}/"
                     f"{_g(o, 'spec', 'replicas', default=1)}"),
        Column("Up-to-date", "integer",
               lambda o, now: _g(o, "status", "updatedReplicas", default=0)),
        Column("Available", "integer",
               lambda o, now: _g(o, "status", "availableReplicas", default=0)), AGE],
    ("apps", "replicasets"): [
        NAME, Column("Desired", "integer", _int("spec", "replicas")),
        Column("Current", "integer", _int("status", "replicas")),
        Column("Ready", "integer", _int("status", "readyReplicas")), AGE],
    ("", "persistentvolumeclaims"): [
        NAME, Column("Status", "string", _text("status", "phase")),
        Column("Volume", "string", _text("spec", "volumeName")),
        Column("Capacity", "string", _text("status", "capacity", "storage")),
        Column("Access Modes", "string", _access_modes),
        Column("StorageClass", "string", _text("spec", "storageClassName")),
        UNSET_VOLUME_ATTRIBUTES_CLASS, AGE],
    ("", "persistentvolumes"): [
        NAME, Column("Capacity", "string", _text("spec", "capacity", "storage")),
        Column("Access Modes", "string", _access_modes),
        Column("Reclaim Policy", "string", _text("spec", "persistentVolumeReclaimPolicy")),
        Column("Status", "string", _text("status", "phase")),
        Column("Claim", "string", _claim_ref),
        Column("StorageClass", "string", _text("spec", "storageClassName")),
        UNSET_VOLUME_ATTRIBUTES_CLASS, Column("Reason", "string", _text("status", "reason")),
        AGE],
    ("storage.k8s.io", "storageclasses"): [
        Column("Name", "string", _storage_class_name, format_="name"),
        Column("Provisioner", "string", _text("provisioner")),
        Column("ReclaimPolicy", "string", _text("reclaimPolicy")),
        Column("VolumeBindingMode", "string", _text("volumeBindingMode")),
        Column("AllowVolumeExpansion", "string",
               lambda o, now: "true" if o.get("allowVolumeExpansion") else "false"), AGE],
    ("apiextensions.k8s.io", "customresourcedefinitions"): [
        NAME, Column("Created At", "date", lambda o, now: _md(o, "creationTimestamp"))],
}


def crd_columns(printer_columns):
    cols = [NAME]
    has_age = False
    for pc in printer_columns or []:
        steps = compile_jsonpath(pc.get("jsonPath", ""))
        typ = pc.get("type", "string")
        if pc.get("jsonPath") == ".metadata.creationTimestamp":
            has_age = True

        def cell(o, now, steps=steps, typ=typ):
            vals = eval_jsonpath(steps, o)
            if not vals:
                return None
            v = vals[0] if len(vals) == 1 else " ".join(str(x) for x in vals)
            if typ == "date":
                return age(v, now) if isinstance(v, str) else None
            if typ == "integer" and isinstance(v, float) and v.is_integer():
                return int(v)
            return v
        cols.append(Column(pc["name"], "string" if typ == "date" else typ, cell,
                           priority=pc.get("priority", 0), format_=pc.get("format", ""),
                           description=pc.get("description", "")))
    if not has_age:
        cols.append(AGE)
    return cols


def columns_for(rt):
    if rt.crd is not None:
        return crd_columns(rt.crd.printer_columns(rt.version))
    return BUILTIN_COLUMNS.get((rt.group, rt.plural), [NAME, AGE])


def partial_metadata(obj):
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {})}


def table(rt, objs, now, include_object="Metadata", list_meta=None, with_columns=True):
    cols = columns_for(rt)
    rows = []
    for o in objs:
        row = {"cells": [c.cell(o, now) for c in cols]}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = partial_metadata(o)
        rows.append(row)
    t = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta or {},
         "rows": rows}
    if with_columns:
        t["columnDefinitions"] = [c.definition() for c in cols]
    else:
        t["columnDefinitions"] = None
    return t
