"""The REST semantics of the API server, independent of HTTP.

Each verb does what the generic registry store of kube-apiserver does:
  create: defaults, drops .status when a status subresource exists, generation 1,
          uid/creationTimestamp, 409 AlreadyExists;
  update: 409 on a stale resourceVersion, 422 without one for custom resources,
          status preserved on the main resource and only status taken on /status,
          generation bumped on spec changes only, a no-op keeps the resourceVersion,
          removing the last finalizer of a deleting object deletes it;
  patch:  applied to the current object and retried on conflicts (GuaranteedUpdate),
          unless the patch itself names a resourceVersion;
  delete: finalizers (and the orphan/foreground propagation finalizers) hold the
          object with a deletionTimestamp; otherwise it is gone at once.
Custom resources go through their CRD's structural schema and CEL rules on every write.
"""

import base64
import copy
import json
import random
import uuid
from datetime import datetime, timezone

from . import crd as crds
from . import errors, objectmeta
from .errors import ApiError, FieldError, bad_request
from .patch import apply_patch
from .schema import MISSING
from .selectors import Filter
from .store import Conflict, Exists, Expired, Missing
from .strategies import strategy_for

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
NAMESPACE_FINALIZER = "kubernetes"
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def now_rfc3339():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def decode_body(body):
    try:
        obj = json.loads(body or b"")
    except ValueError as e:
        raise bad_request(f"the object provided is unrecognized or malformed: {e}")
    if not isinstance(obj, dict):
        raise bad_request("the object provided is unrecognized (must be a JSON object)")
    return obj


def _spec_part(obj):
    """Everything generation tracks: all top-level fields but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion",
                                                      "kind")}


def _without_rv(obj):
    o = dict(obj)
    md = dict(o.get("metadata") or {})
    md.pop("resourceVersion", None)
    md.pop("managedFields", None)
    o["metadata"] = md
    return o


class WriteOptions:
    def __init__(self, params):
        self.dry_run = "All" in params.get("dryRun", [])
        validation = params.get("fieldValidation", [""])[-1]
        self.field_validation = validation or "Warn"
        if self.field_validation not in ("Ignore", "Warn", "Strict"):
            raise bad_request(f'fieldValidation must be one of "Ignore", "Warn", or "Strict", '
                              f'got "{self.field_validation}"')


class Api:
    def __init__(self, store, registry, cel):
        self.store = store
        self.registry = registry
        self.cel = cel
        self.ns_rt = registry.lookup("", "v1", "namespaces")
        # With the node emulator (--nodes): a pod bound to a node is deleted gracefully
        # (its kubelet stops it, then deletes it for good), and admission plugins run on
        # every create (apiserver/admission.py).
        self.graceful_pod_deletion = False
        self.admission = []
        self.crd_rt = registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")

    # -- helpers -----------------------------------------------------------------------

    def to_version(self, obj, rt):
        """Custom resources served under several versions (conversion None) differ only
        in apiVersion; views (events.k8s.io Events) convert field names."""
        if rt.codec is not None:
            return rt.codec.present(obj)
        if obj.get("apiVersion") != rt.api_version:
            obj = dict(obj)
            obj["apiVersion"] = rt.api_version
        return obj

    def _storage_rt(self, rt):
        if rt.codec is not None:
            return self.registry.by_key(rt.key)
        if rt.crd is not None and rt.version != rt.crd.storage_version:
            return self.registry.lookup(rt.group, rt.crd.storage_version, rt.plural) or rt
        return rt

    def _check_type_meta(self, rt, obj):
        if "kind" in obj and obj["kind"] != rt.kind or \
                "apiVersion" in obj and obj["apiVersion"] not in \
                [rt.api_version_for(v) for v in rt.served_versions]:
            raise bad_request(f'the API version in the data ({obj.get("apiVersion")}) does not '
                              f'match the expected API version ({rt.api_version})'
                              if obj.get("kind") == rt.kind else
                              f'{obj.get("kind")} in version "{rt.version}" cannot be handled '
                              f'as a {rt.kind}: no kind "{obj.get("kind")}" is registered')
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version

    def _check_namespace_for_create(self, rt, ns, name):
        if not rt.namespaced:
            return
        cur = self.store.get(self.ns_rt.key, "", ns)
        if cur is None:
            raise errors.not_found(self.ns_rt, ns)
        if cur.obj["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(rt, name, f"unable to create new content in namespace {ns} "
                                   f"because it is being terminated")

    def get(self, rt, ns, name):
        cur = self.store.get(rt.key, ns if rt.namespaced else "", name)
        if cur is None:
            raise errors.not_found(rt, name)
        return cur

    # -- admission: schema, defaults, validation ---------------------------------------

    def _admit(self, rt, obj, old, opts, name):
        """Prunes, defaults and validates obj in place; returns warnings."""
        warnings = []
        errs = []
        if rt.crd is not None:
            schema = rt.crd.schema(rt.version)
            unknown = schema.prune(obj)
            if unknown and opts.field_validation == "Strict":
                listed = ", ".join(f'unknown field "{u}"' for u in unknown)
                raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                                  f'{rt.kind}: strict decoding error: {listed}')
            if unknown and opts.field_validation == "Warn":
                warnings += [f'unknown field "{u}"' for u in unknown]
            schema.default(obj)
            errs += schema.validate(obj, MISSING if old is None else old)
        why = strategy_for(rt).decode_error(obj)
        if why:
            raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                              f'{rt.kind}: {why}')
        md = obj["metadata"]
        if old is None:
            errs += strategy_for(rt).name_errors(md.get("name", ""))
        errs += strategy_for(rt).validate(obj, old)
        errs += objectmeta.errors(md, old)
        if rt.key == self.crd_rt.key:
            errs += crds.validate_crd(obj)
        if errs:
            raise errors.invalid(rt, name, errs)
        return warnings

    def _prepare_crd(self, obj):
        """Compiles a CRD's schemas and rules; 422 if they do not compile."""
        cr = crds.CustomResource(obj, self.cel)
        if cr.rule_errors:
            raise errors.invalid(self.crd_rt, obj["metadata"]["name"],
                                 [FieldError("invalid", p, m, value="") for p, m in
                                  cr.rule_errors])
        return cr

    def _after_crd_write(self, obj, cr):
        if cr is not None:
            self.registry.set_custom(obj["metadata"]["name"], crds.resource_types(cr))

    # -- create ------------------------------------------------------------------------

    def create(self, rt, ns, body, params):
        opts = WriteOptions(params)
        obj = decode_body(body)
        self._check_type_meta(rt, obj)
        if rt.codec is not None:
            obj = rt.codec.store(obj)
        md = obj.setdefault("metadata", {})
        if not isinstance(md, dict):
            raise bad_request("metadata must be an object")
        if rt.namespaced:
            if md.get("namespace") and md["namespace"] != ns:
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            md["namespace"] = ns
        else:
            md.pop("namespace", None)
        if not md.get("name"):
            if md.get("generateName"):
                md["name"] = md["generateName"] + "".join(random.choice(_NAME_CHARS)
                                                          for _ in range(5))
            else:
                raise errors.invalid(rt, "", [FieldError(
                    "required", "metadata.name", "name or generateName is required")])
        name = md["name"]
        if rt.crd is not None and rt.crd.name in self._terminating_crds():
            raise errors.method_not_allowed("create not allowed while custom resource "
                                            "definition is terminating")
        for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "selfLink", "managedFields"):
            md.pop(k, None)
        md["uid"] = str(uuid.uuid4())
        md["creationTimestamp"] = now_rfc3339()
        if rt.status_subresource and not rt.status_on_create:
            obj.pop("status", None)
        if rt.tracks_generation:
            md["generation"] = 1
        else:
            md.pop("generation", None)
        strategy_for(rt).defaults(obj)
        strategy_for(rt).prepare_create(obj)
        for plugin in self.admission:
            plugin(rt, obj)
        cr = None
        if rt.key == self.crd_rt.key:
            crds.default_crd(obj)
        warnings = self._admit(rt, obj, None, opts, name)
        if rt.key == self.crd_rt.key:
            cr = self._prepare_crd(obj)
            obj["status"] = crds.crd_accepted_status(obj, md["creationTimestamp"])
            fins = md.setdefault("finalizers", [])
            if crds.CLEANUP_FINALIZER not in fins:
                fins.append(crds.CLEANUP_FINALIZER)
        self._check_namespace_for_create(rt, ns, name)
        srt = self._storage_rt(rt)
        obj["apiVersion"] = srt.api_version
        if opts.dry_run:
            if self.store.get(rt.key, md.get("namespace", ""), name):
                raise errors.already_exists(rt, name)
            return self.to_version(obj, rt), warnings
        try:
            stored = self.store.create(rt.key, obj)
        except Exists:
            raise errors.already_exists(rt, name)
        self._after_crd_write(stored, cr)
        return self.to_version(stored, rt), warnings

    def _terminating_crds(self):
        items, _ = self.store.list(self.crd_rt.key)
        return {s.obj["metadata"]["name"] for s in items
                if s.obj["metadata"].get("deletionTimestamp")}

    # -- update / patch ----------------------------------------------------------------

    def update(self, rt, ns, name, body, params, subresource=None):
        opts = WriteOptions(params)
        new = decode_body(body)
        self._check_type_meta(rt, new)
        if rt.codec is not None:
            new = rt.codec.store(new)
        md = new.setdefault("metadata", {})
        if md.get("name", name) != name:
            raise bad_request(f"the name of the object ({md.get('name')}) does not match the "
                              f"name on the URL ({name})")
        if rt.namespaced and md.get("namespace", ns) != ns:
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        cur = self.get(rt, ns, name)
        rv = md.get("resourceVersion")
        if not rv:
            if not rt.allow_unconditional_update:
                raise errors.invalid(rt, name, [FieldError(
                    "invalid", "metadata.resourceVersion", "must be specified for an update",
                    value="0x0")])
        elif rv != str(cur.rv):
            raise errors.conflict(rt, name)
        return self._write_update(rt, name, new, cur, opts, subresource)

    def patch(self, rt, ns, name, content_type, body, params, subresource=None):
        opts = WriteOptions(params)
        for _attempt in range(20):
            cur = self.get(rt, ns, name)
            current = self.to_version(copy.deepcopy(cur.obj), rt)
            new = apply_patch(content_type, current, body, rt.crd is not None)
            if not isinstance(new, dict):
                raise bad_request("patch did not produce an object")
            self._check_type_meta(rt, new)
            if rt.codec is not None:
                new = rt.codec.store(new)
            md = new.setdefault("metadata", {})
            if md.get("name") != name:
                raise bad_request("metadata.name cannot be changed by a patch")
            # A patch is a precondition only if it names a resourceVersion
            # itself: the one `new` carries otherwise is the current object's,
            # and a write in between means re-applying, as GuaranteedUpdate does.
            bare = copy.deepcopy(current)
            bare.get("metadata", {}).pop("resourceVersion", None)
            try:
                asked = apply_patch(content_type, bare, body, rt.crd is not None)
                wanted_rv = asked.get("metadata", {}).get("resourceVersion") if isinstance(asked, dict) else None
            except Exception:  # a JSON patch that needs the field is about it: a precondition
                wanted_rv = md.get("resourceVersion")
            if wanted_rv and wanted_rv != str(cur.rv):
                raise errors.conflict(rt, name)
            try:
                return self._write_update(rt, name, new, cur, opts, subresource)
            except Conflict:
                if wanted_rv:
                    raise errors.conflict(rt, name)
                continue  # someone wrote in between: re-apply the patch to the new state
        raise errors.conflict(rt, name, "too many conflicting writes while patching")

    def _write_update(self, rt, name, new, cur, opts, subresource):
        old = cur.obj
        if subresource == "status":
            status = new.get("status")
            new = copy.deepcopy(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
        else:
            md, omd = new["metadata"], old["metadata"]
            if md.get("uid") and md["uid"] != omd.get("uid"):
                raise errors.conflict(rt, name, f"Precondition failed: UID in precondition: "
                                      f"{md['uid']}, UID in object meta: {omd.get('uid')}")
            for k in ("uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "namespace", "generation"):
                if k in omd:
                    md[k] = omd[k]
                else:
                    md.pop(k, None)
            md.pop("managedFields", None)
            if rt.status_subresource:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            strategy_for(rt).defaults(new)
            strategy_for(rt).prepare_update(new, old)
        new["apiVersion"] = self._storage_rt(rt).api_version
        cr = None
        if rt.key == self.crd_rt.key and subresource != "status":
            crds.default_crd(new)
        warnings = self._admit(rt, new, old, opts, name)
        if rt.key == self.crd_rt.key and subresource != "status":
            cr = self._prepare_crd(new)
        if rt.tracks_generation and _spec_part(new) != _spec_part(old):
            new["metadata"]["generation"] = old["metadata"].get("generation", 0) + 1
        if _without_rv(new) == _without_rv(old):
            return self.to_version(old, rt), warnings  # no-op: nothing written, same RV
        if opts.dry_run:
            return self.to_version(new, rt), warnings
        try:
            stored = self.store.replace(rt.key, new, cur.rv)
        except Missing:
            raise errors.not_found(rt, name)
        self._after_crd_write(stored, cr)
        if stored["metadata"].get("deletionTimestamp") and self._releasable(rt, stored):
            self._remove(rt, stored)
        return self.to_version(stored, rt), warnings

    def _releasable(self, rt, obj):
        if obj["metadata"].get("finalizers"):
            return False
        if rt.key == self.ns_rt.key and (obj.get("spec") or {}).get("finalizers"):
            return False
        return True

    def _remove(self, rt, obj):
        try:
            gone = self.store.remove(rt.key, obj, int(obj["metadata"]["resourceVersion"]))
        except (Missing, Conflict):
            return None
        if rt.key == self.crd_rt.key:
            self.registry.set_custom(obj["metadata"]["name"], [])
        return gone

    def finalize_namespace(self, name, body):
        """PUT namespaces/<name>/finalize: the only way spec.finalizers changes."""
        new = decode_body(body)
        cur = self.get(self.ns_rt, "", name)
        obj = copy.deepcopy(cur.obj)
        obj.setdefault("spec", {})["finalizers"] = (new.get("spec") or {}).get("finalizers", [])
        stored = self.store.replace(self.ns_rt.key, obj, cur.rv)
        if stored["metadata"].get("deletionTimestamp") and self._releasable(self.ns_rt, stored):
            self._remove(self.ns_rt, stored)
        return stored

    def bind_pod(self, ns, name, body):
        """POST pods/<name>/binding: what the scheduler does to place a pod."""
        binding = decode_body(body)
        node = (binding.get("target") or {}).get("name")
        pods = self.registry.lookup("", "v1", "pods")
        cur = self.get(pods, ns, name)
        if (cur.obj.get("spec") or {}).get("nodeName"):
            raise errors.conflict(pods, name, f"pod {name} is already assigned to node "
                                  f'"{cur.obj["spec"]["nodeName"]}"')
        obj = copy.deepcopy(cur.obj)
        obj["spec"]["nodeName"] = node
        try:
            self.store.replace(pods.key, obj, cur.rv)
        except (Conflict, Missing):
            raise errors.conflict(pods, name)
        return errors.success_status({})

    # -- delete ------------------------------------------------------------------------

    def delete(self, rt, ns, name, body, params):
        options = decode_body(body) if body and body.strip() else {}
        policy = options.get("propagationPolicy") or params.get("propagationPolicy", [None])[-1]
        if options.get("orphanDependents") is True:
            policy = "Orphan"
        dry_run = "All" in (options.get("dryRun") or params.get("dryRun", []))
        pre = options.get("preconditions") or {}
        grace = options.get("gracePeriodSeconds")
        if grace is None and params.get("gracePeriodSeconds"):
            grace = int(params["gracePeriodSeconds"][-1])
        for _attempt in range(20):
            cur = self.get(rt, ns, name)
            if self.graceful_pod_deletion and rt.key == ("", "pods") and not dry_run and \
                    (not pre.get("uid") or pre["uid"] == cur.obj["metadata"].get("uid")):
                graceful = self._delete_pod_gracefully(rt, cur, grace)
                if graceful is Conflict:
                    continue
                if graceful is not None:
                    return 200, self.to_version(graceful, rt)
            obj = copy.deepcopy(cur.obj)
            md = obj["metadata"]
            if pre.get("uid") and pre["uid"] != md.get("uid"):
                raise errors.conflict(rt, name, f"Precondition failed: UID in precondition: "
                                      f"{pre['uid']}, UID in object meta: {md.get('uid')}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != str(cur.rv):
                raise errors.conflict(rt, name, f"Precondition failed: ResourceVersion in "
                                      f"precondition: {pre['resourceVersion']}, ResourceVersion "
                                      f"in object meta: {cur.rv}")
            fins = list(md.get("finalizers") or [])
            if policy == "Orphan" and ORPHAN not in fins:
                fins.append(ORPHAN)
            if policy == "Foreground" and FOREGROUND not in fins:
                fins.append(FOREGROUND)
            held = bool(fins) or (rt.key == self.ns_rt.key and
                                  (obj.get("spec") or {}).get("finalizers"))
            if dry_run:
                return 200, self.to_version(obj, rt)
            if held:
                if md.get("deletionTimestamp") and fins == (md.get("finalizers") or []):
                    return 200, self.to_version(cur.obj, rt)  # already being deleted
                md["finalizers"] = fins
                if not md.get("deletionTimestamp"):
                    md["deletionTimestamp"] = now_rfc3339()
                    md["deletionGracePeriodSeconds"] = 0
                    if md.get("generation"):
                        md["generation"] += 1
                if rt.key == self.ns_rt.key:
                    obj["status"] = {"phase": "Terminating"}
                try:
                    stored = self.store.replace(rt.key, obj, cur.rv)
                except (Conflict, Missing):
                    continue
                return 200, self.to_version(stored, rt)
            try:
                gone = self.store.remove(rt.key, cur.obj, cur.rv)
            except (Conflict, Missing):
                continue
            if rt.key == self.crd_rt.key:
                self.registry.set_custom(name, [])
            if rt.returns_deleted_object:
                return 200, self.to_version(gone, rt)
            details = {"name": name, "kind": rt.plural, "uid": md.get("uid")}
            if rt.group:
                details["group"] = rt.group
            return 200, errors.success_status(details)
        raise errors.conflict(rt, name)

    def _delete_pod_gracefully(self, rt, cur, grace):
        """A pod running on a node gets deletionTimestamp = now + grace and stays until its
        kubelet has stopped it and deletes it with grace 0; a grace of 0 (a force delete),
        or a pod no kubelet runs (unbound, or finished), goes the ordinary way (None).
        A second delete may only shorten the grace."""
        pod = cur.obj
        md, spec = pod["metadata"], pod.get("spec") or {}
        if not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in \
                ("Succeeded", "Failed"):
            return None
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        if grace <= 0:
            return None
        old = md.get("deletionGracePeriodSeconds")
        if md.get("deletionTimestamp") and old is not None and old <= grace:
            return pod
        obj = copy.deepcopy(pod)
        obj["metadata"]["deletionTimestamp"] = datetime.fromtimestamp(
            datetime.now(timezone.utc).timestamp() + grace, timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        obj["metadata"]["deletionGracePeriodSeconds"] = grace
        try:
            return self.store.replace(rt.key, obj, cur.rv)
        except (Conflict, Missing):
            return Conflict

    def delete_collection(self, rt, ns, body, params):
        items, _ = self.list(rt, ns, params)[:2]
        for s in items:
            try:
                self.delete(rt, ns, s.obj["metadata"]["name"], body, params)
            except ApiError as e:
                if e.code != 404:
                    raise
        return self.list_object(rt, [s.obj for s in items], self.store.revision)

    # -- list --------------------------------------------------------------------------

    def list(self, rt, ns, params):
        """Returns (items, resourceVersion, continue token, remaining count)."""
        filt = Filter(rt, ns if rt.namespaced else None, params.get("labelSelector", [""])[-1],
                      params.get("fieldSelector", [""])[-1])
        token = params.get("continue", [""])[-1]
        items, rv = self.store.list(rt.key, ns if rt.namespaced else None)
        start = None
        if token:
            try:
                t = json.loads(base64.urlsafe_b64decode(token.encode()))
                start, token_rv = tuple(t["start"]), int(t["rv"])
            except (ValueError, KeyError, TypeError):
                raise bad_request("continue key is not valid: incorrect encoded start "
                                  "resourceVersion (version meta.k8s.io/v1)")
            try:
                self.store.events_after(token_rv)
            except Expired:
                raise errors.gone("The provided continue parameter is too old to display a "
                                  "consistent list result. You can start a new list without "
                                  "the continue parameter.")
            rv = token_rv
        # The store has kept to the namespace: with no selector every item matches.
        matching = items if filt.labels.empty and filt.fields.empty else \
            [s for s in items if filt.matches(s.obj)]
        if start is not None:
            matching = [s for s in matching if _key(s.obj) > start]
        limit = int(params.get("limit", ["0"])[-1] or 0)
        cont, remaining = None, None
        if limit > 0 and len(matching) > limit:
            remaining = len(matching) - limit
            matching = matching[:limit]
            last = _key(matching[-1].obj)
            cont = base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": list(last)})
                                            .encode()).decode()
        return matching, rv, cont, remaining

    def list_object(self, rt, objs, rv, cont=None, remaining=None):
        md = {"resourceVersion": str(rv)}
        if cont:
            md["continue"] = cont
        if remaining is not None:
            md["remainingItemCount"] = remaining
        return {"kind": rt.kind + "List", "apiVersion": rt.api_version, "metadata": md,
                "items": [self.to_version(o, rt) for o in objs]}


def _key(obj):
    md = obj["metadata"]
    return (md.get("namespace") or "", md["name"])

