"""Label and field selectors, parsed from query strings as the API server parses them.

Label selectors: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`,
joined by commas (AND). Field selectors: `f=v`, `f==v`, `f!=v`, joined by commas; the
resource type decides which fields exist (others are a 400, as on a real server).
"""

import re

from .errors import bad_request

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")


def _split_top_level(s):
    """Splits on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


class LabelSelector:
    def __init__(self, text):
        self.requirements = []  # (op, key, values)
        for part in _split_top_level(text or ""):
            m = _EQ_RE.match(part)
            if m:
                key, op, val = m.groups()
                self.requirements.append(("!=" if op == "!=" else "=", key, {val}))
                continue
            m = _SET_RE.match(part)
            if not m:
                raise bad_request(f'unable to parse requirement: found "{part.strip()}", '
                                  f'expected: label selector')
            neg, key, setop, vals = m.groups()
            if setop:
                if neg:
                    raise bad_request(f"unable to parse requirement: {part.strip()}")
                values = {v.strip() for v in vals.split(",") if v.strip()}
                self.requirements.append((setop, key, values))
            else:
                self.requirements.append(("!exists" if neg else "exists", key, None))

    @property
    def empty(self):
        return not self.requirements

    def matches(self, labels):
        labels = labels or {}
        for op, key, values in self.requirements:
            has = key in labels
            v = labels.get(key)
            if op == "=" and not (has and v in values):
                return False
            if op == "!=" and has and v in values:
                return False
            if op == "in" and not (has and v in values):
                return False
            if op == "notin" and has and v in values:
                return False
            if op == "exists" and not has:
                return False
            if op == "!exists" and has:
                return False
        return True


class FieldSelector:
    def __init__(self, text, rt):
        self.requirements = []  # (negate, field, value)
        for part in _split_top_level(text or ""):
            m = re.match(r"^\s*([^=!]+?)\s*(==|=|!=)\s*(.*?)\s*$", part)
            if not m:
                raise bad_request(f'invalid selector: \'{text}\'; can\'t understand \'{part}\'')
            field, op, value = m.groups()
            if not rt.supports_field_label(field):
                raise bad_request(f'field label not supported: {field}')
            self.requirements.append((op == "!=", field, value))
        self.rt = rt

    @property
    def empty(self):
        return not self.requirements

    def matches(self, obj):
        for negate, field, value in self.requirements:
            actual = self.rt.field_label_value(obj, field)
            if (actual == value) == negate:
                return False
        return True

    def single_name(self):
        """The name if the selector pins exactly metadata.name=X (kubectl's single-object
        LIST+WATCH)."""
        for negate, field, value in self.requirements:
            if field == "metadata.name" and not negate:
                return value
        return None


class Filter:
    """Both selectors plus a namespace: what a list or watch is restricted to."""

    def __init__(self, rt, namespace, label_selector, field_selector):
        self.namespace = namespace
        self.labels = LabelSelector(label_selector)
        self.fields = FieldSelector(field_selector, rt)

    def matches(self, obj):
        if obj is None:
            return False
        md = obj.get("metadata", {})
        if self.namespace and md.get("namespace") != self.namespace:
            return False
        if not self.labels.empty and not self.labels.matches(md.get("labels")):
            return False
        if not self.fields.empty and not self.fields.matches(obj):
            return False
        return True


def selector_text(selector):
    """A metav1.LabelSelector ({matchLabels, matchExpressions}) as the string form above,
    keys sorted, as LabelSelectorAsSelector(...).String() writes it (a Scale's
    status.selector; what controllers list their pods with)."""
    parts = []
    for k, v in (selector or {}).get("matchLabels", {}).items():
        parts.append((k, f"{k}={v}"))
    for e in (selector or {}).get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], sorted(e.get("values") or [])
        text = {"In": f"{key} in ({','.join(values)})",
                "NotIn": f"{key} notin ({','.join(values)})",
                "Exists": key, "DoesNotExist": f"!{key}"}[op]
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts))


def selector_matches(selector, labels):
    """Whether labels match a metav1.LabelSelector; an empty selector matches everything,
    as on a real server (a missing one, nothing)."""
    if selector is None:
        return False
    return LabelSelector(selector_text(selector)).matches(labels)
