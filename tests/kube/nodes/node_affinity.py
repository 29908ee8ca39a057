"""Node selector terms (In, NotIn, Exists, DoesNotExist, Gt, Lt on a node's labels), as a
pod's required node affinity and a PersistentVolume's node affinity use them: the
scheduler filters nodes with them, and a kubelet refuses to mount a volume whose affinity
excludes its node."""


def term_matches(term, labels):
    for e in term.get("matchExpressions") or []:
        v, op, values = labels.get(e["key"]), e["operator"], e.get("values") or []
        ok = {"In": v in values, "NotIn": v not in values, "Exists": v is not None,
              "DoesNotExist": v is None,
              "Gt": v is not None and v.isdigit() and int(v) > int(values[0]),
              "Lt": v is not None and v.isdigit() and int(v) < int(values[0])}.get(op, False)
        if not ok:
            return False
    return True


def volume_allows(volume, labels):
    """Whether a PersistentVolume's required node affinity admits a node with `labels`."""
    terms = (((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}) \
        .get("nodeSelectorTerms")
    return not terms or any(term_matches(t, labels) for t in terms)
