"""events.k8s.io/v1 Events are a second view of the core/v1 Events, not separate
objects: a real server stores one Event and converts field names per group. So an
operator that records events.k8s.io/v1 Events shows them in `kubectl describe`, which
reads core/v1 ones. Stored form: core/v1."""

# events.k8s.io/v1 field -> core/v1 field
FIELDS = {
    "regarding": "involvedObject", "note": "message",
    "reportingController": "reportingComponent", "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp", "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
CORE_FIELDS = {v: k for k, v in FIELDS.items()}


class EventsV1Codec:
    """Converts between the stored core/v1 Event and the events.k8s.io/v1 view."""

    storage_key = ("", "events")

    def present(self, stored):
        out = {CORE_FIELDS.get(k, k): v for k, v in stored.items()}
        out["apiVersion"] = "events.k8s.io/v1"
        out["kind"] = "Event"
        return out

    def store(self, view):
        out = {FIELDS.get(k, k): v for k, v in view.items()}
        out["apiVersion"] = "v1"
        out["kind"] = "Event"
        return out


def field_labels(core_event_labels):
    """events.k8s.io field selectors, evaluated on the stored core/v1 form."""
    labels = {}
    for name, fn in core_event_labels.items():
        head, _, rest = name.partition(".")
        view = CORE_FIELDS.get(head, head)
        labels[f"{view}.{rest}" if rest else view] = fn
    return labels
