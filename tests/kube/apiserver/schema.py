"""Structural-schema handling of custom resources, in the order the API server applies it:

  1. unknown fields: listed (fieldValidation=Strict turns them into a 400, Warn into
     Warning headers), then pruned unless x-kubernetes-preserve-unknown-fields;
  2. defaulting (top-down, so defaults inside a defaulted object apply too); nulls of
     non-nullable fields are dropped first;
  3. validation: types, formats, enum, ranges, lengths, patterns, required, list types
     (set/map uniqueness), anyOf/oneOf/allOf/not, producing field errors with the
     messages a real server sends. Validation ratchets as in Kubernetes 1.32: on an
     update, a value equal to the old value at the same place is not re-validated.
     A schema error of the blocking kinds (a required field missing, a value of the
     wrong type, outside its enum, too long or too many) skips every CEL rule, as
     the API server does, with its one fieldless note that rules went unchecked.

CEL rules (x-kubernetes-validations) are evaluated by cel.py, driven from here so they
see the same defaulted, pruned object and the same old-object correlation.
"""

import base64
import copy
import ipaddress
import re
import uuid
from datetime import datetime

from .errors import FieldError

OBJECT_META_FIELDS = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
}

MISSING = object()  # "no old value to correlate with" (create, or uncorrelatable list item)



def go_anchors(pattern):
    """A schema's pattern as Go's regexp reads it, for Python's re: each $
    outside a character class (and not escaped) as \\Z, since Python's $ also
    matches before a last newline and Go's does not ("5s\\n" fit a duration)."""
    out, in_class, escaped = [], False, False
    for c in pattern:
        if escaped:
            out.append(c)
            escaped = False
        elif c == "\\":
            out.append(c)
            escaped = True
        elif c == "[" and not in_class:
            in_class = True
            out.append(c)
        elif c == "]" and in_class:
            in_class = False
            out.append(c)
        elif c == "$" and not in_class:
            out.append("\\Z")
        else:
            out.append(c)
    return "".join(out)

def _join(path, key):
    return f"{path}.{key}" if path else key


def is_int64(v):
    """Kubernetes decodes a whole number past int64 as a float, which no integer field takes."""
    return isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63


def type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if is_int64(v):
        return "integer"
    if isinstance(v, int):
        return "number"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _fmt_num(n):
    if isinstance(n, float) and n.is_integer():
        return str(int(n))
    return str(n)


class StructuralSchema:
    """One version's openAPIV3Schema, with the CEL rules found in it compiled."""

    def __init__(self, schema, cel=None, rule_prefix=""):
        self.root = schema or {}
        self.cel = cel
        self.rules = {}  # id(schema node) -> [(rule dict, compiled id, uses_old_self)]
        self.rule_errors = []  # CEL compile errors: (path, message)
        self._compile_rules(self.root, "", rule_prefix)

    # -- CEL rule compilation ---------------------------------------------------------

    def _compile_rules(self, node, path, prefix):
        if not isinstance(node, dict):
            return
        rules = node.get("x-kubernetes-validations") or []
        if rules:
            compiled = []
            for i, r in enumerate(rules):
                rid = f"{prefix}{path or '<root>'}#{i}"
                if self.cel is None:
                    continue
                ok, info = self.cel.compile(rid, r.get("rule", ""), r.get("messageExpression"),
                                            node)
                if ok:
                    compiled.append((r, rid, info))
                else:
                    self.rule_errors.append(
                        (f"{path or 'openAPIV3Schema'}.x-kubernetes-validations[{i}].rule",
                         f"compilation failed: {info}"))
            self.rules[id(node)] = compiled
        for k, sub in (node.get("properties") or {}).items():
            self._compile_rules(sub, _join(path, f"properties[{k}]"), prefix)
        if isinstance(node.get("items"), dict):
            self._compile_rules(node["items"], _join(path, "items"), prefix)
        if isinstance(node.get("additionalProperties"), dict):
            self._compile_rules(node["additionalProperties"],
                                _join(path, "additionalProperties"), prefix)

    # -- 1. unknown fields and pruning -------------------------------------------------

    def prune(self, obj):
        """Removes unknown fields in place; returns their paths (for Strict / Warn)."""
        unknown = []
        self._prune(obj, self.root, "", unknown, root=True)
        return unknown

    def _prune(self, value, schema, path, unknown, root=False):
        if isinstance(value, dict):
            embedded = root or schema.get("x-kubernetes-embedded-resource")
            props = schema.get("properties") or {}
            addl = schema.get("additionalProperties")
            preserve = schema.get("x-kubernetes-preserve-unknown-fields")
            for k in list(value.keys()):
                sub_path = _join(path, k)
                if embedded and k in ("apiVersion", "kind"):
                    continue
                if embedded and k == "metadata" and isinstance(value[k], dict):
                    if root:
                        for mk in list(value[k].keys()):
                            if mk not in OBJECT_META_FIELDS:
                                unknown.append(_join(sub_path, mk))
                                del value[k][mk]
                    continue
                if k in props:
                    self._prune(value[k], props[k], sub_path, unknown)
                elif isinstance(addl, dict):
                    self._prune(value[k], addl, sub_path, unknown)
                elif addl is True or preserve:
                    continue
                else:
                    unknown.append(sub_path)
                    del value[k]
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                self._prune(item, schema["items"], f"{path}[{i}]", unknown)

    # -- 2. defaulting -----------------------------------------------------------------

    def default(self, obj):
        self._default(obj, self.root)
        return obj

    def _default(self, value, schema):
        if isinstance(value, dict):
            props = schema.get("properties") or {}
            for k, sub in props.items():
                if k in value and value[k] is None and not sub.get("nullable"):
                    del value[k]
                if k not in value and "default" in sub:
                    value[k] = copy.deepcopy(sub["default"])
                if k in value:
                    self._default(value[k], sub)
            addl = schema.get("additionalProperties")
            if isinstance(addl, dict):
                for k in list(value.keys()):
                    if k not in props:
                        self._default(value[k], addl)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for item in value:
                self._default(item, schema["items"])

    # -- 3. validation -----------------------------------------------------------------

    # Schema errors after which the API server evaluates none of the object's
    # CEL rules (apiextensions-apiserver's hasBlockingErr): it says so once,
    # in a field error without a field, rather than let rules read a value of
    # the wrong shape or a field that is missing.
    BLOCKING = ("unsupported", "required", "toolong", "toomany", "typeinvalid")
    RULES_NOT_CHECKED = ("some validation rules were not checked because the object was invalid; "
                         "correct the existing errors to complete validation")

    def validate(self, obj, old=MISSING):
        errors = []
        self._validate(obj, old, self.root, "", errors, root=True)
        if any(self.rules.values()) and any(isinstance(e, FieldError) and e.kind in self.BLOCKING
                                            for e in errors):
            return [e for e in errors if not isinstance(e, _RuleCheck)] + \
                [FieldError("invalid", "<nil>", self.RULES_NOT_CHECKED, value="null")]
        # The walk left a _RuleCheck where each CEL rule's error would go: all
        # are evaluated at once, and each becomes its error or nothing, in place.
        checks = [e for e in errors if isinstance(e, _RuleCheck)]
        if not checks:
            return errors
        outcomes = iter(self.cel.evaluate_all(
            [(c.rule_id, c.value, c.old if c.uses_old_self else MISSING) for c in checks]))
        resolved = []
        for e in errors:
            if not isinstance(e, _RuleCheck):
                resolved.append(e)
                continue
            fe = e.error(*next(outcomes))
            if fe is not None:
                resolved.append(fe)
        return resolved

    def _validate(self, v, old, s, path, errors, root=False):
        # Ratcheting: an unchanged value is not re-validated (KEP-4008, on by default).
        if old is not MISSING and v == old and not root:
            return
        if v is None:
            if not s.get("nullable"):
                self._type_error(v, s, path, errors)
            return
        if not self._check_type(v, s, path, errors):
            return
        self._check_value(v, s, path, errors)
        for sub_key in ("allOf", "anyOf", "oneOf", "not"):
            if sub_key in s:
                self._check_junctions(v, s, path, errors)
                break
        if isinstance(v, dict):
            props = s.get("properties") or {}
            for req in s.get("required") or []:
                if req not in v:
                    errors.append(FieldError("required", _join(path, req)))
            addl = s.get("additionalProperties")
            for k, sub_v in v.items():
                if root and k in ("apiVersion", "kind", "metadata"):
                    continue
                sub_s = props.get(k, addl if isinstance(addl, dict) else None)
                if sub_s is None:
                    continue
                sub_old = old.get(k, MISSING) if isinstance(old, dict) else MISSING
                self._validate(sub_v, sub_old, sub_s, _join(path, k), errors)
        elif isinstance(v, list) and isinstance(s.get("items"), dict):
            self._check_list_type(v, s, path, errors)
            for i, item in enumerate(v):
                self._validate(item, self._correlate(item, old, s), s["items"],
                               f"{path}[{i}]", errors)
        self._check_rules(v, old, s, path, errors)

    @staticmethod
    def _correlate(item, old, s):
        """The old list element an element corresponds to: only map lists correlate."""
        if s.get("x-kubernetes-list-type") != "map" or not isinstance(old, list) \
                or not isinstance(item, dict):
            return MISSING
        keys = s.get("x-kubernetes-list-map-keys") or []
        for o in old:
            if isinstance(o, dict) and all(o.get(k) == item.get(k) for k in keys):
                return o
        return MISSING

    def _type_error(self, v, s, path, errors):
        t = s.get("type")
        if s.get("x-kubernetes-int-or-string"):
            t = "integer,string"
        errors.append(FieldError("typeinvalid", path or "<root>",
                                 f'{path} in body must be of type {t}: "{type_name(v)}"',
                                 value=type_name(v)))

    def _check_type(self, v, s, path, errors):
        if s.get("x-kubernetes-int-or-string"):
            ok = is_int64(v) or isinstance(v, str)
        else:
            t = s.get("type")
            ok = {
                None: True,
                "object": isinstance(v, dict),
                "array": isinstance(v, list),
                "string": isinstance(v, str),
                "boolean": isinstance(v, bool),
                "integer": is_int64(v) or (isinstance(v, float) and v.is_integer() and abs(v) < 2**53),
                "number": isinstance(v, (int, float)) and not isinstance(v, bool),
            }.get(t, True)
        if not ok:
            self._type_error(v, s, path, errors)
        return ok

    def _check_value(self, v, s, path, errors):
        if "enum" in s and v not in s["enum"]:
            supported = ", ".join(f'"{e}"' if isinstance(e, str) else str(e) for e in s["enum"])
            errors.append(FieldError("unsupported", path, f"supported values: {supported}",
                                     value=v))
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if "minimum" in s:
                if s.get("exclusiveMinimum") and not v > s["minimum"]:
                    errors.append(FieldError("invalid", path, f"{path} in body should be greater "
                                             f"than {_fmt_num(s['minimum'])}", value=v))
                elif v < s["minimum"]:
                    errors.append(FieldError("invalid", path, f"{path} in body should be greater "
                                             f"than or equal to {_fmt_num(s['minimum'])}", value=v))
            if "maximum" in s:
                if s.get("exclusiveMaximum") and not v < s["maximum"]:
                    errors.append(FieldError("invalid", path, f"{path} in body should be less "
                                             f"than {_fmt_num(s['maximum'])}", value=v))
                elif v > s["maximum"]:
                    errors.append(FieldError("invalid", path, f"{path} in body should be less "
                                             f"than or equal to {_fmt_num(s['maximum'])}", value=v))
            if s.get("multipleOf") and (v / s["multipleOf"]) % 1 != 0:
                errors.append(FieldError("invalid", path, f"{path} in body should be a multiple "
                                         f"of {_fmt_num(s['multipleOf'])}", value=v))
        if isinstance(v, str):
            if "minLength" in s and len(v) < s["minLength"]:
                errors.append(FieldError("invalid", path, f"{path} in body should be at least "
                                         f"{s['minLength']} chars long", value=v))
            if "maxLength" in s and len(v) > s["maxLength"]:
                errors.append(FieldError("toolong", path,
                                         f"may not be more than {s['maxLength']} bytes",
                                         show_value=False))
            if "pattern" in s and not re.search(go_anchors(s["pattern"]), v):
                errors.append(FieldError("invalid", path, f"{path} in body should match "
                                         f"'{s['pattern']}'", value=v))
            fmt = s.get("format")
            if fmt and not _format_ok(fmt, v):
                errors.append(FieldError("invalid", path, f"{path} in body must be of type "
                                         f"{fmt}: {FieldErrorValue(v)}", value=v))
        if isinstance(v, list):
            if "minItems" in s and len(v) < s["minItems"]:
                errors.append(FieldError("invalid", path, f"{path} in body should have at "
                                         f"least {s['minItems']} items", value=len(v)))
            if "maxItems" in s and len(v) > s["maxItems"]:
                errors.append(FieldError("toomany", path, f"must have at most {s['maxItems']} "
                                         f"items", value=len(v)))
            if s.get("uniqueItems"):
                self._duplicates(v, path, errors)
        if isinstance(v, dict):
            if "minProperties" in s and len(v) < s["minProperties"]:
                errors.append(FieldError("invalid", path, f"{path} in body should have at "
                                         f"least {s['minProperties']} properties", value=len(v)))
            if "maxProperties" in s and len(v) > s["maxProperties"]:
                errors.append(FieldError("toomany", path, f"must have at most "
                                         f"{s['maxProperties']} items", value=len(v)))

    def _check_junctions(self, v, s, path, errors):
        def passes(sub):
            e = []
            self._check_value_deep(v, sub, path, e)
            return not e
        for sub in s.get("allOf") or []:
            self._check_value_deep(v, sub, path, errors)
        if "anyOf" in s and not any(passes(sub) for sub in s["anyOf"]):
            errors.append(FieldError("invalid", path, "must validate at least one schema "
                                     "(anyOf)", value=v))
        if "oneOf" in s and sum(1 for sub in s["oneOf"] if passes(sub)) != 1:
            errors.append(FieldError("invalid", path, "must validate one and only one schema "
                                     "(oneOf)", value=v))
        if "not" in s and passes(s["not"]):
            errors.append(FieldError("invalid", path, "must not validate the schema (not)",
                                     value=v))

    def _check_value_deep(self, v, s, path, errors):
        """Value validations of a junction subschema (no pruning, no CEL)."""
        if not self._check_type(v, s, path, errors):
            return
        self._check_value(v, s, path, errors)
        if isinstance(v, dict):
            for req in s.get("required") or []:
                if req not in v:
                    errors.append(FieldError("required", _join(path, req)))
            for k, sub in (s.get("properties") or {}).items():
                if k in v and v[k] is not None:
                    self._check_value_deep(v[k], sub, _join(path, k), errors)

    def _check_list_type(self, v, s, path, errors):
        lt = s.get("x-kubernetes-list-type")
        if lt == "set":
            self._duplicates(v, path, errors)
        elif lt == "map":
            keys = s.get("x-kubernetes-list-map-keys") or []
            seen = set()
            for i, item in enumerate(v):
                if not isinstance(item, dict):
                    continue
                k = tuple(repr(item.get(key)) for key in keys)
                if k in seen:
                    shown = ", ".join(f'"{key}":{FieldErrorValue(item.get(key))}' for key in keys)
                    errors.append(FieldError("duplicate", f"{path}[{i}]",
                                             value=f"map[string]interface {{}}{{{shown}}}"))
                seen.add(k)

    @staticmethod
    def _duplicates(v, path, errors):
        seen = []
        for i, item in enumerate(v):
            if item in seen:
                errors.append(FieldError("duplicate", f"{path}[{i}]", value=item))
            else:
                seen.append(item)

    # -- CEL ---------------------------------------------------------------------------

    def _check_rules(self, v, old, s, path, errors):
        for rule, rid, uses_old_self in self.rules.get(id(s), ()):
            if uses_old_self and old is MISSING:
                continue  # transition rules only run on updates with a correlated old value
            errors.append(_RuleCheck(rule, rid, uses_old_self, v, old, path))


class _RuleCheck:
    """A CEL rule to evaluate on a value, kept where its error belongs among
    the schema's until validate evaluates every rule of the object at once."""

    def __init__(self, rule, rule_id, uses_old_self, value, old, path):
        self.rule, self.rule_id, self.uses_old_self = rule, rule_id, uses_old_self
        self.value, self.old, self.path = value, old, path

    def error(self, ok, valid, message):
        """The FieldError of the bridge's outcome, or None where the rule held."""
        if ok and valid:
            return None
        rule, v, fpath = self.rule, self.value, self.path
        if rule.get("fieldPath"):
            fpath = fpath + rule["fieldPath"] if rule["fieldPath"].startswith(("[", ".")) \
                else _join(fpath, rule["fieldPath"])
        if not ok:
            return FieldError("invalid", fpath or "<root>", f"{rule.get('rule')}: {valid}", value=type_name(v))
        text = message or rule.get("message") or f"failed rule: {rule.get('rule')}"
        kind = {"FieldValueRequired": "required", "FieldValueForbidden": "forbidden",
                "FieldValueDuplicate": "duplicate"}.get(rule.get("reason"), "invalid")
        fe = FieldError(kind, fpath or "<root>", text, value=type_name(v))
        if kind in ("required", "forbidden"):
            fe.show_value = False
        return fe


class FieldErrorValue(str):
    """Renders a value inside a message the way Go's %q / %v would."""

    def __new__(cls, v):
        return str.__new__(cls, f'"{v}"' if isinstance(v, str) else str(v))


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z")


def _format_ok(fmt, v):
    try:
        if fmt == "date-time":
            return bool(_DATE_TIME.match(v))
        if fmt == "date":
            datetime.strptime(v, "%Y-%m-%d")
            return True
        if fmt == "byte":
            base64.b64decode(v, validate=True)
            return True
        if fmt == "uuid":
            uuid.UUID(v)
            return True
        if fmt == "ipv4":
            ipaddress.IPv4Address(v)
            return True
        if fmt == "ipv6":
            ipaddress.IPv6Address(v)
            return True
        if fmt == "hostname":
            return bool(re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*"
                                 r"[a-z0-9])?)*\Z", v, re.I)) and len(v) <= 253
    except ValueError:
        return False
    return True  # unknown formats are not enforced, as on a real server
