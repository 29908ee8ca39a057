"""Discovery and OpenAPI documents, generated from the registry.

- Legacy discovery: /api (APIVersions), /apis (APIGroupList), /apis/<g> (APIGroup),
  /api/v1 and /apis/<g>/<v> (APIResourceList).
- Aggregated discovery (apidiscovery.k8s.io/v2): the same data in one document per
  root, served only when the client asks with the exact media type below; kubectl
  ignores the answer unless the response Content-Type is exactly that string.
- OpenAPI v3: an index of group-versions, and per group-version a document with one
  path per resource. kubectl apply looks there for the GVK's PATCH operation and its
  `fieldValidation` parameter to decide that the server validates fields itself; the
  components carry the CRD schemas (as a real server publishes them).
"""

import hashlib
import json

from .scale import SCALABLE, SCALE_GVK

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
SERVER_VERSION = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.0-edgetrain-standin",
    "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
    "buildDate": "2024-12-11T00:00:00Z", "goVersion": "go1.23.4", "compiler": "gc",
    "platform": "linux/amd64",
}


def wants_aggregated(accept):
    for part in (accept or "").split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if {"g=apidiscovery.k8s.io", "v=v2", "as=APIGroupDiscoveryList"} <= params:
            return True
    return False


def _verbs(rt):
    return list(rt.verbs)


def _resource_entries(rt):
    out = [{"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
            "kind": rt.kind, "verbs": _verbs(rt),
            "storageVersionHash": hashlib.sha256(rt.qualified_plural.encode()).hexdigest()[:11]}]
    if rt.short_names:
        out[0]["shortNames"] = list(rt.short_names)
    if rt.categories:
        out[0]["categories"] = list(rt.categories)
    if rt.status_subresource:
        out.append({"name": rt.plural + "/status", "singularName": "", "namespaced":
                    rt.namespaced, "kind": rt.kind, "verbs": ["get", "patch", "update"]})
    if rt.key in SCALABLE:
        out.append({"name": rt.plural + "/scale", "singularName": "", "namespaced": True,
                    "group": "autoscaling", "version": "v1", "kind": "Scale",
                    "verbs": ["get", "patch", "update"]})
    if rt.key == ("", "pods"):
        out.append({"name": "pods/binding", "singularName": "", "namespaced": True,
                    "kind": "Binding", "verbs": ["create"]})
    if rt.key == ("", "namespaces"):
        out.append({"name": "namespaces/finalize", "singularName": "", "namespaced": False,
                    "kind": "Namespace", "verbs": ["update"]})
    return out


def resource_list(registry, group, version):
    types = [t for t in registry.all() if t.group == group and t.version == version]
    if not types:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": [e for t in sorted(types, key=lambda t: t.plural)
                          for e in _resource_entries(t)]}


def api_versions(server_address):
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs":
            [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group(name, versions):
    vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": vs, "preferredVersion": vs[0]}


def api_group_list(registry):
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group(g, vs) for g, vs in registry.group_versions().items() if g]}


def api_group(registry, name):
    vs = registry.group_versions().get(name)
    if not vs or not name:
        return None
    g = _group(name, vs)
    g.update({"kind": "APIGroup", "apiVersion": "v1"})
    return g


def aggregated(registry, core):
    """APIGroupDiscoveryList for /api (core=True) or /apis."""
    items = []
    for g, versions in registry.group_versions().items():
        if (g == "") != core:
            continue
        vitems = []
        for v in versions:
            res = []
            for t in sorted((t for t in registry.all() if t.group == g and t.version == v),
                            key=lambda t: t.plural):
                gvk = {"group": g, "version": v, "kind": t.kind}
                r = {"resource": t.plural, "responseKind": gvk,
                     "scope": "Namespaced" if t.namespaced else "Cluster",
                     "singularResource": t.singular, "verbs": _verbs(t)}
                if t.short_names:
                    r["shortNames"] = list(t.short_names)
                if t.categories:
                    r["categories"] = list(t.categories)
                if t.status_subresource:
                    r["subresources"] = [{"subresource": "status", "responseKind": gvk,
                                          "verbs": ["get", "patch", "update"]}]
                if t.key in SCALABLE:
                    r.setdefault("subresources", []).append(
                        {"subresource": "scale", "responseKind": SCALE_GVK,
                         "verbs": ["get", "patch", "update"]})
                res.append(r)
            vitems.append({"version": v, "resources": res, "freshness": "Current"})
        items.append({"metadata": {"name": g, "creationTimestamp": None}, "versions": vitems})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}


# -- OpenAPI v2 -----------------------------------------------------------------------

# What a real server answers with (kubectl asks for "...spec.v2@v1.0+protobuf",
# but Go's mime parser refuses an "@" in a Content-Type).
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _proto_string(field, text):
    data = text.encode()
    return bytes([field << 3 | 2, len(data)]) + data


def openapi_v2(accept):
    """A Swagger 2.0 document with no schemas in it, as protobuf (what kubectl asks
    for) or JSON: the stand-in publishes its schemas in OpenAPI v3 only. kubectl
    reads v2 when v3 does not know a kind (a typo in `kind:`), and a 404 there
    became "failed to download openapi" where a real server's answer lets
    kubectl say that no such kind exists."""
    if "protobuf" in accept:
        info = _proto_string(1, "Kubernetes") + _proto_string(2, "v1.32.0")
        # openapi_v2.Document: swagger = 1, info = 2 (title = 1, version = 2).
        return _proto_string(1, "2.0") + bytes([2 << 3 | 2, len(info)]) + info, OPENAPI_V2_PROTOBUF
    return json.dumps({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
                       "paths": {}, "definitions": {}}).encode(), "application/json"


# -- OpenAPI v3 -----------------------------------------------------------------------

def _gv_path(group, version):
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def openapi_index(registry):
    paths = {}
    for g, versions in registry.group_versions().items():
        for v in versions:
            doc = openapi_document(registry, g, v)
            digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()
            p = _gv_path(g, v)
            paths[p] = {"serverRelativeURL": f"/openapi/v3/{p}?hash={digest[:128]}"}
    return {"paths": paths}


def _schema_name(rt):
    group = ".".join(reversed(rt.group.split("."))) if rt.group else "io.k8s.api.core"
    return f"{group}.{rt.version}.{rt.kind}"


def _param(name, where="query", required=False):
    return {"name": name, "in": where, "required": required, "schema": {"type": "string",
                                                                        "uniqueItems": True}}


def openapi_document(registry, group, version):
    types = [t for t in registry.all() if t.group == group and t.version == version]
    if not types:
        return None
    paths, schemas = {}, {}
    for t in sorted(types, key=lambda t: t.plural):
        gvk = {"group": group, "version": version, "kind": t.kind}
        ref = {"$ref": f"#/components/schemas/{_schema_name(t)}"}
        body = {"content": {"*/*": {"schema": ref}}, "required": True}
        ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
        write = [_param("dryRun"), _param("fieldManager"), _param("fieldValidation")]
        base = "/" + _gv_path(group, version)
        coll = f"{base}/namespaces/{{namespace}}/{t.plural}" if t.namespaced \
            else f"{base}/{t.plural}"
        item = coll + "/{name}"

        def op(action, params=(), request=None, op_id=None):
            o = {"operationId": op_id or f"{action}{t.kind}", "parameters": list(params),
                 "responses": ok, "x-kubernetes-action": action,
                 "x-kubernetes-group-version-kind": gvk}
            if request:
                o["requestBody"] = request
            return o
        # A custom resource takes no strategic merge patch (it has no patch
        # merge keys), and its patch operation does not offer one: kubectl
        # reads that and sends a JSON merge patch. Offered, kubectl tried to
        # compute one from the schema and warned at every re-apply.
        patch_types = ("application/json-patch+json", "application/merge-patch+json",
                       "application/apply-patch+yaml") if t.crd is not None else (
            "application/json-patch+json", "application/merge-patch+json",
            "application/strategic-merge-patch+json", "application/apply-patch+yaml")
        patch_body = {"content": {m: {"schema": {"type": "object"}} for m in patch_types}, "required": True}
        scope = [_param("namespace", "path", True)] if t.namespaced else []
        paths[coll] = {"get": op("list", [_param("labelSelector"), _param("fieldSelector"),
                                          _param("watch")]),
                       "post": op("post", write, body),
                       "parameters": scope}
        paths[item] = {"get": op("get"), "put": op("put", write, body),
                       "patch": op("patch", write + [_param("force")], patch_body),
                       "delete": op("delete", [_param("dryRun")]),
                       "parameters": scope + [_param("name", "path", True)]}
        if t.status_subresource:
            paths[item + "/status"] = {"get": op("get"), "put": op("put", write, body),
                                       "patch": op("patch", write, patch_body),
                                       "parameters": scope + [_param("name", "path", True)]}
        if t.crd is not None:
            s = dict(t.crd.versions[version].get("schema", {}).get("openAPIV3Schema") or {})
            s["x-kubernetes-group-version-kind"] = [gvk]
        else:
            # Built-in schemas are not published: kubectl then computes strategic merge
            # patches from its compiled-in types, which carry the real patch merge keys.
            s = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        schemas[_schema_name(t)] = s
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": schemas}}
