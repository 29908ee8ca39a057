"""Objects the protocol and schema tests create: a small test CRD (Widget) whose schema
exercises every structural-schema and CEL feature the stand-in enforces, and builders
that read like the objects they make."""

GROUP = "test.standin.dev"
WIDGETS = f"/apis/{GROUP}/v1/namespaces/{{ns}}/widgets"

_condition = {
    "type": "object", "required": ["type", "status"],
    "properties": {"type": {"type": "string"}, "status": {"type": "string",
                                                           "enum": ["True", "False", "Unknown"]},
                   "reason": {"type": "string"}, "message": {"type": "string"},
                   "lastTransitionTime": {"type": "string", "format": "date-time"},
                   "observedGeneration": {"type": "integer"}},
}

WIDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "green", "blue"], "default": "red"},
                "title": {"type": "string", "maxLength": 10, "pattern": "^[a-z]+$"},
                "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                "replicas": {"type": "integer"},
                "mode": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3,
                         "x-kubernetes-list-type": "set"},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string"},
                                                   "port": {"type": "integer",
                                                            "default": 80}}}},
                "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "serial": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "serial is immutable"}]},
                "budget": {"type": "object", "default": {},
                           "properties": {"minutes": {"type": "integer", "default": 10}}},
            },
            "x-kubernetes-validations": [
                {"rule": "!has(self.replicas) || self.replicas <= self.size",
                 "message": "replicas must not exceed size", "fieldPath": ".replicas"},
                {"rule": "!has(self.mode) || self.mode != 'pipeline'",
                 "messageExpression": "'mode ' + self.mode + ' is not supported yet'"},
                {"rule": "!has(self.tags) || self.tags.all(t, t.lowerAscii() == t)",
                 "message": "tags must be lower case"},
            ],
        },
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string"},
                "observedGeneration": {"type": "integer"},
                "conditions": {"type": "array", "items": _condition,
                               "x-kubernetes-list-type": "map",
                               "x-kubernetes-list-map-keys": ["type"]},
            },
        },
    },
}

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "shortNames": ["wd"], "categories": ["all"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": WIDGET_SCHEMA},
            "subresources": {"status": {}},
            "selectableFields": [{"jsonPath": ".spec.color"}],
            "additionalPrinterColumns": [
                {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                {"name": "Ready", "type": "string",
                 "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            ],
        }],
    },
}


def widget(name, namespace=None, **spec):
    spec.setdefault("size", 3)
    md = {"name": name}
    if namespace:
        md["namespace"] = namespace
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": md, "spec": spec}


def configmap(name, labels=None, **data):
    md = {"name": name}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data}


def namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def node(name, labels=None, ready=True):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0"}}}


def pod(name, node_name=None, labels=None):
    spec = {"containers": [{"name": "main", "image": "edgetrain-agent:dev"}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def lease(name, holder, duration=15):
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                     "acquireTime": "2025-01-01T00:00:00.000000Z",
                     "renewTime": "2025-01-01T00:00:00.000000Z", "leaseTransitions": 0}}
