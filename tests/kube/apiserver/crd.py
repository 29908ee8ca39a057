"""CustomResourceDefinitions: checking them, and turning them into served resource types.

What apiextensions-apiserver does on a CRD write, reduced to what a test can observe:
the name must be <plural>.<group>; exactly one version is the storage version; every
served version's schema must be structural, and its CEL rules must compile (otherwise
the CRD is rejected with 422, as on a real server). An accepted CRD is Established at
once (a real server takes a moment), and its kind is served until the CRD is deleted.
"""

from .errors import FieldError
from .resources import ResourceType
from .schema import StructuralSchema
from .tables import compile_jsonpath, eval_jsonpath

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


class CustomResource:
    """What the REST layer needs about one CRD: schemas per version, columns, scale."""

    def __init__(self, crd, cel):
        spec = crd["spec"]
        self.name = crd["metadata"]["name"]
        self.uid = crd["metadata"].get("uid")
        self.group = spec["group"]
        self.names = spec["names"]
        self.scope = spec.get("scope", "Namespaced")
        self.versions = {v["name"]: v for v in spec["versions"]}
        self.storage_version = next(v["name"] for v in spec["versions"] if v.get("storage"))
        self.version_priority = {v["name"]: i for i, v in enumerate(spec["versions"])}
        self.schemas = {}
        self.rule_errors = []
        for vname, v in self.versions.items():
            schema = (v.get("schema") or {}).get("openAPIV3Schema") or {}
            s = StructuralSchema(schema, cel, rule_prefix=f"{self.name}/{vname}:")
            self.schemas[vname] = s
            self.rule_errors += [(f"spec.versions[{vname}].schema.openAPIV3Schema" +
                                  p.removeprefix("openAPIV3Schema"), m) for p, m in s.rule_errors]

    def printer_columns(self, version):
        return self.versions[version].get("additionalPrinterColumns") or []

    def has_status(self, version):
        return "status" in (self.versions[version].get("subresources") or {})

    def schema(self, version):
        return self.schemas[version]


def resource_types(cr):
    """One ResourceType per served version (conversion strategy None: same object)."""
    out = []
    served = tuple(v for v, d in cr.versions.items() if d.get("served", True))
    for vname in served:
        v = cr.versions[vname]
        labels = {}
        for sf in v.get("selectableFields") or []:
            steps = compile_jsonpath(sf["jsonPath"])
            labels[sf["jsonPath"].lstrip(".")] = (
                lambda o, steps=steps: "" if not eval_jsonpath(steps, o)
                else _scalar(eval_jsonpath(steps, o)[0]))
        out.append(ResourceType(
            cr.group, vname, cr.names["kind"], cr.names["plural"], cr.scope == "Namespaced",
            singular=cr.names.get("singular") or cr.names["kind"].lower(),
            short_names=tuple(cr.names.get("shortNames") or ()),
            categories=tuple(cr.names.get("categories") or ()),
            status_subresource=cr.has_status(vname), tracks_generation=True,
            allow_unconditional_update=False, returns_deleted_object=True,
            field_labels=labels, crd=cr, served_versions=served))
    return out


def _scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def default_crd(crd):
    """The defaults a real server fills into a CRD on write."""
    spec = crd.setdefault("spec", {})
    spec.setdefault("conversion", {"strategy": "None"})
    names = spec.setdefault("names", {})
    if names.get("kind") and not names.get("singular"):
        names["singular"] = names["kind"].lower()
    if names.get("kind") and not names.get("listKind"):
        names["listKind"] = names["kind"] + "List"
    return crd


def validate_crd(crd):
    """Field errors for a CRD object (before its schemas are compiled)."""
    errs = []
    md, spec = crd.get("metadata", {}), crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group"), names.get("plural")
    if not group:
        errs.append(FieldError("required", "spec.group"))
    if not plural:
        errs.append(FieldError("required", "spec.names.plural"))
    if not names.get("kind"):
        errs.append(FieldError("required", "spec.names.kind"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        errs.append(FieldError("unsupported", "spec.scope", 'supported values: "Cluster", '
                               '"Namespaced"', value=spec.get("scope", "")))
    if group and plural and md.get("name") != f"{plural}.{group}":
        errs.append(FieldError("invalid", "metadata.name",
                               'must be spec.names.plural+"."+spec.group',
                               value=md.get("name", "")))
    versions = spec.get("versions") or []
    if not versions:
        errs.append(FieldError("required", "spec.versions", "must have exactly one version "
                               "marked as storage version"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        errs.append(FieldError("invalid", "spec.versions", "must have exactly one version "
                               "marked as storage version", value=len(versions)))
    for i, v in enumerate(versions):
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            errs.append(FieldError("required", f"spec.versions[{i}].schema.openAPIV3Schema",
                                   "schemas are required"))
        elif schema.get("type") != "object":
            errs.append(FieldError("required", f"spec.versions[{i}].schema.openAPIV3Schema.type",
                                   "must not be empty at the root"))
        for j, pc in enumerate(v.get("additionalPrinterColumns") or []):
            try:
                compile_jsonpath(pc.get("jsonPath", ""))
            except Exception:
                errs.append(FieldError("invalid", f"spec.versions[{i}].additionalPrinterColumns"
                                       f"[{j}].jsonPath", "must be a simple json path",
                                       value=pc.get("jsonPath")))
    return errs


def crd_accepted_status(crd, now):
    spec = crd["spec"]
    return {
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
        "acceptedNames": {k: v for k, v in spec["names"].items()},
        "storedVersions": [v["name"] for v in spec["versions"] if v.get("storage")],
    }

