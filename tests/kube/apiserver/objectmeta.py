"""ObjectMeta validation shared by every kind, with apimachinery's messages: label and
annotation keys and values, finalizer names, owner references, and the rule that a
deleting object takes no new finalizers. The operator builds names and labels from
user input, so a real server's 422s here must happen in tests too."""

import re

from .errors import FieldError

_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
# \Z, not $, as Go's regexp anchors: Python's $ also matches before a last newline.
QUALIFIED_NAME = re.compile(rf"^{_NAME}\Z")
LABEL_VALUE = re.compile(rf"^({_NAME})?\Z")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
STANDARD_FINALIZERS = {"kubernetes", "orphan", "foregroundDeletion",
                       "customresourcecleanup.apiextensions.k8s.io"}
MAX_ANNOTATIONS_BYTES = 256 * 1024


def qualified_name_problem(key):
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        return "prefix part a lowercase RFC 1123 subdomain must consist of lower case " \
               "alphanumeric characters, '-' or '.', and must start and end with an " \
               "alphanumeric character"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not QUALIFIED_NAME.match(name):
        return "name part must consist of alphanumeric characters, '-', '_' or '.', and " \
               "must start and end with an alphanumeric character"
    return None


def errors(md, old):
    errs = []
    for field in ("labels", "annotations"):
        v = md.get(field)
        if v is None:
            continue
        if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
            errs.append(FieldError("invalid", f"metadata.{field}", "must be a map of strings",
                                   value=v))
            continue
        for key, value in v.items():
            why = qualified_name_problem(key)
            if why:
                errs.append(FieldError("invalid", f"metadata.{field}", why, value=key))
            if field == "labels" and (len(value) > 63 or not LABEL_VALUE.match(value)):
                errs.append(FieldError("invalid", "metadata.labels", "a valid label must be "
                                       "an empty string or consist of alphanumeric characters, "
                                       "'-', '_' or '.', and must start and end with an "
                                       "alphanumeric character (at most 63)", value=value))
        if field == "annotations" and \
                sum(len(k) + len(x) for k, x in v.items()) > MAX_ANNOTATIONS_BYTES:
            errs.append(FieldError("toolong", "metadata.annotations",
                                   f"may not be more than {MAX_ANNOTATIONS_BYTES} bytes",
                                   show_value=False))
    fins = md.get("finalizers") or []
    for i, f in enumerate(fins):
        if f not in STANDARD_FINALIZERS and ("/" not in f or qualified_name_problem(f)):
            errs.append(FieldError("invalid", f"metadata.finalizers[{i}]", "name is neither a "
                                   "standard finalizer name nor is it fully qualified", value=f))
    if old is not None and old["metadata"].get("deletionTimestamp"):
        added = [f for f in fins if f not in (old["metadata"].get("finalizers") or [])]
        if added:
            shown = ", ".join(f'"{f}"' for f in added)
            errs.append(FieldError("forbidden", "metadata.finalizers",
                                   f"no new finalizers can be added if the object is being "
                                   f"deleted, found new finalizers []string{{{shown}}}"))
    controllers = 0
    for i, ref in enumerate(md.get("ownerReferences") or []):
        path = f"metadata.ownerReferences[{i}]"
        for f in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(f):
                errs.append(FieldError("invalid", f"{path}.{f}", f"{f} must not be empty",
                                       value=ref.get(f, "")))
        controllers += 1 if ref.get("controller") else 0
    if controllers > 1:
        errs.append(FieldError("invalid", "metadata.ownerReferences", "Only one reference can "
                               "have Controller set to true", value=controllers))
    return errs
