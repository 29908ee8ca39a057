"""AUTHORIZATION: Kubernetes RBAC, from the Roles, ClusterRoles, RoleBindings and
ClusterRoleBindings the stand-in holds, as kube-apiserver's RBAC authorizer decides.

A request is first turned into attributes (`request_attributes`, after apiserver's
RequestInfoFactory): the verb (get, list, watch, create, update, patch, delete,
deletecollection; a non-resource path's verb is the HTTP method), the API group, the
resource and subresource (`pods/log`), the namespace and the name. A user in
`system:masters` is allowed everything (the privileged group, checked before RBAC).
Anyone else is allowed when a rule allows it: one of a ClusterRole bound by a
ClusterRoleBinding (everywhere), or of a Role or ClusterRole bound by a RoleBinding (in
that RoleBinding's namespace only), whose subject is the user, one of its groups, or
its ServiceAccount. A rule allows when its verbs, apiGroups and resources each hold the
request's (or `*`; `*/log` matches any resource's log) and its resourceNames, if any,
hold the name; non-resource paths match `nonResourceURLs` (a trailing `*` a prefix).
Otherwise: 403 Forbidden, with the message and Status the real server writes.

Like the real server, the stand-in holds the bootstrap policy (`bootstrap_policy`):
cluster-admin for system:masters; discovery, health, version and self access reviews for
every authenticated user. Not emulated: aggregated ClusterRoles (aggregationRule),
impersonation, SubjectAccessReview for others, SelfSubjectRulesReview (`auth can-i
--list`), escalation checks on writing roles, Node and webhook authorizers.

Every request of a user other than system:masters is recorded with its decision
(`DecisionLog`), so tests can ask which grants a program used and whether any of its
requests was refused (`GET /_standin/authorizations`); access reviews are not requests.
So is what an admission plugin asks of RBAC for the request (OwnerReferencesPermission-
Enforcement's `update` on an owner's finalizers), which `requester()` says whose it is.
"""

import threading
from dataclasses import dataclass

from .errors import ApiError

GROUP = "rbac.authorization.k8s.io"
# What `GET` on a collection is, by ?watch (Go's strconv.ParseBool spellings of true).
TRUE = ("1", "t", "T", "true", "TRUE", "True")
# Namespace subresources: /api/v1/namespaces/NAME/status is the namespace NAME's status.
NAMESPACE_SUBRESOURCES = ("status", "finalize")
METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}

# Who made the request this thread serves (the server's handler sets it), for admission
# plugins that authorize on the requester's behalf; None for the stand-in's own writes.
_serving = threading.local()


def set_requester(user):
    _serving.user = user


def requester():
    return getattr(_serving, "user", None)


@dataclass(frozen=True)
class RequestAttributes:
    """authorizer.Attributes of one request."""
    verb: str
    path: str
    resource_request: bool = False
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def resource_and_subresource(self):
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def request_attributes(method, path, params):
    """The attributes of METHOD PATH?PARAMS, as apiserver's RequestInfoFactory derives them."""
    parts = [p for p in path.split("/") if p]
    if len(parts) < 3 or parts[0] not in ("api", "apis") or (parts[0] == "apis" and len(parts) < 4):
        return RequestAttributes(method.lower(), path)
    group = parts[1] if parts[0] == "apis" else ""
    parts = parts[3:] if parts[0] == "apis" else parts[2:]  # past the group and the version
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    resource = parts[0]
    name = parts[1] if len(parts) > 1 else ""
    subresource = parts[2] if len(parts) > 2 else ""
    verb = METHOD_VERBS.get(method, method.lower())
    if not name and verb == "get":
        verb = "watch" if params.get("watch", [""])[-1] in TRUE else "list"
        # a list or watch of one object by name is authorized as that object
        name = _exact_name(params.get("fieldSelector", [""])[-1])
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestAttributes(verb, path, True, group, resource, subresource, namespace, name)


def _exact_name(field_selector):
    """X of `metadata.name=X` (or `==X`) in a field selector (RequiresExactMatch)."""
    for term in field_selector.split(","):
        key, sep, value = term.partition("=")
        if key.strip() == "metadata.name" and sep:
            return value.removeprefix("=").strip()
    return ""


# -- rules ---------------------------------------------------------------------------------


def _has(values, wanted):
    return "*" in values or wanted in values


def resource_matches(rule, attrs):
    for r in rule.get("resources") or []:
        if r in ("*", attrs.resource_and_subresource):
            return True
        if attrs.subresource and r == "*/" + attrs.subresource:
            return True
    return False


def non_resource_url_matches(rule, path):
    for url in rule.get("nonResourceURLs") or []:
        if url in ("*", path) or (url.endswith("*") and path.startswith(url[:-1])):
            return True
    return False


def rule_allows(rule, attrs):
    """rbac/v1's RuleAllows."""
    if not _has(rule.get("verbs") or [], attrs.verb):
        return False
    if not attrs.resource_request:
        return non_resource_url_matches(rule, attrs.path)
    names = rule.get("resourceNames") or []
    return (_has(rule.get("apiGroups") or [], attrs.api_group) and resource_matches(rule, attrs)
            and (not names or attrs.name in names))


def subject_applies(subject, user, binding_namespace):
    """Whether a binding's subject is this user (appliesToUser): a ServiceAccount subject
    without a namespace is the binding's namespace's."""
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return bool(ns) and user.name == f"system:serviceaccount:{ns}:{name}"
    return False


# -- the authorizer ------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # "RBAC: allowed by ..." or why no rule could be read


class Authorizer:
    def __init__(self, store, registry):
        self.store = store
        self.keys = {kind: registry.lookup(GROUP, "v1", plural).key for kind, plural in (
            ("Role", "roles"), ("ClusterRole", "clusterroles"), ("RoleBinding", "rolebindings"),
            ("ClusterRoleBinding", "clusterrolebindings"))}
        self.log = DecisionLog()

    def authorize(self, user, attrs):
        """The decision, not recorded (a SelfSubjectAccessReview asks without acting)."""
        if user.privileged:
            return Decision(True, "")
        return self._rbac(user, attrs)

    def check(self, user, attrs):
        """Records the decision on a request, and raises the 403 the real server answers
        when the user may not make it."""
        decision = self.authorize(user, attrs)
        if not user.privileged:
            self.log.record(user, attrs, decision.allowed)
        if not decision.allowed:
            raise forbidden(user, attrs, decision.reason)

    def _rbac(self, user, attrs):
        errors = []
        for source, rules in self._bound_rules(user, attrs.namespace, errors):
            if any(rule_allows(rule, attrs) for rule in rules):
                return Decision(True, f"RBAC: allowed by {source}")
        return Decision(False, "RBAC: " + ", ".join(errors) if errors else "")

    def _bound_rules(self, user, namespace, errors):
        """(description, rules) of every binding that applies to the user: the
        ClusterRoleBindings, then the RoleBindings of the namespace (none for a
        cluster-scoped request), as the RBAC authorizer visits them."""
        bindings = [("ClusterRoleBinding", s.obj) for s in self.store.list(self.keys["ClusterRoleBinding"])[0]]
        if namespace:
            bindings += [("RoleBinding", s.obj) for s in self.store.list(self.keys["RoleBinding"], namespace)[0]]
        for kind, binding in bindings:
            ns = binding["metadata"].get("namespace", "")
            subject = next((s for s in binding.get("subjects") or [] if subject_applies(s, user, ns)), None)
            if subject is None:
                continue
            ref = binding.get("roleRef") or {}
            role = self.store.get(self.keys.get(ref.get("kind"), ("", "")),
                                  ns if ref.get("kind") == "Role" else "", ref.get("name", ""))
            if role is None:
                errors.append(f'{ref.get("kind", "").lower()}.{GROUP} "{ref.get("name")}" not found')
                continue
            yield _describe(kind, binding, ref, subject), role.obj.get("rules") or []


def _describe(kind, binding, ref, subject):
    name = binding["metadata"]["name"]
    if kind == "RoleBinding":
        name += "/" + binding["metadata"]["namespace"]
    who = subject["name"]
    if subject.get("kind") == "ServiceAccount":
        who += "/" + (subject.get("namespace") or binding["metadata"].get("namespace", ""))
    return f'{kind} "{name}" of {ref.get("kind")} "{ref.get("name")}" to {subject.get("kind")} "{who}"'


def forbidden(user, attrs, reason=""):
    """The 403 of apiserver's WithAuthorization: its message names the user, verb,
    resource (with subresource), group and namespace; the Status's details name the
    resource as `kind`."""
    if not attrs.resource_request:
        why = f'User "{user.name}" cannot {attrs.verb} path "{attrs.path}"'
    else:
        scope = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
        why = (f'User "{user.name}" cannot {attrs.verb} resource "{attrs.resource_and_subresource}" '
               f'in API group "{attrs.api_group}" {scope}')
    if reason:
        why += ": " + reason
    if not attrs.resource_request:
        return ApiError(403, "Forbidden", f"forbidden: {why}", {})
    qualified = attrs.resource + (f".{attrs.api_group}" if attrs.api_group else "")
    details = {"kind": attrs.resource}
    if attrs.api_group:
        details["group"] = attrs.api_group
    if attrs.name:
        details["name"] = attrs.name
        return ApiError(403, "Forbidden", f'{qualified} "{attrs.name}" is forbidden: {why}', details)
    return ApiError(403, "Forbidden", f"{qualified} is forbidden: {why}", details)


def access_review(authorizer, user, review):
    """A SelfSubjectAccessReview (authorization.k8s.io/v1) answered for the user who sent
    it (`kubectl auth can-i`)."""
    spec = review.get("spec") or {}
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if ra:
        attrs = RequestAttributes(ra.get("verb", ""), "", True, ra.get("group", ""), ra.get("resource", ""),
                                  ra.get("subresource", ""), ra.get("namespace", ""), ra.get("name", ""))
    elif nra:
        attrs = RequestAttributes(nra.get("verb", ""), nra.get("path", ""))
    else:
        raise ApiError(422, "Invalid", 'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
                       "[spec.resourceAttributes: Invalid value: \"null\": exactly one of "
                       "nonResourceAttributes or resourceAttributes must be specified]")
    decision = authorizer.authorize(user, attrs)
    status = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}


# -- what was decided -----------------------------------------------------------------------


class DecisionLog:
    """TEST HOOK: per user, every distinct request attributes with the decision and how
    often it was made."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = {}  # user name -> {(attrs, allowed): count}

    def record(self, user, attrs, allowed):
        with self._lock:
            mine = self._counts.setdefault(user.name, {})
            mine[(attrs, allowed)] = mine.get((attrs, allowed), 0) + 1

    def decisions(self, user_name):
        with self._lock:
            mine = dict(self._counts.get(user_name, {}))
        out = [{**_record(attrs), "allowed": allowed, "count": count}
               for (attrs, allowed), count in mine.items()]
        return sorted(out, key=lambda d: sorted(d.items()))

    def users(self):
        with self._lock:
            return sorted(self._counts)


def _record(attrs):
    if not attrs.resource_request:
        return {"verb": attrs.verb, "nonResourceURL": attrs.path}
    return {"verb": attrs.verb, "apiGroup": attrs.api_group, "resource": attrs.resource,
            "subresource": attrs.subresource, "namespace": attrs.namespace, "name": attrs.name}


# -- the bootstrap policy -------------------------------------------------------------------

_DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
                   "/readyz", "/version", "/version/"]
_PUBLIC_INFO_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]


def bootstrap_policy():
    """The ClusterRoles and ClusterRoleBindings a new cluster has that these tests meet:
    cluster-admin, and what every authenticated user may do (discovery, its own access
    reviews) - a subset of kube-apiserver's rbac/bootstrap-roles."""
    def role(name, rules):
        return {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole",
                "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                             "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
                "rules": rules}

    def binding(name, *groups):
        b = role(name, None)
        del b["rules"]
        b["kind"] = "ClusterRoleBinding"
        b["roleRef"] = {"apiGroup": GROUP, "kind": "ClusterRole", "name": name}
        b["subjects"] = [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups]
        return b

    return [
        role("cluster-admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                               {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        binding("cluster-admin", "system:masters"),
        role("system:discovery", [{"nonResourceURLs": _DISCOVERY_URLS, "verbs": ["get"]}]),
        binding("system:discovery", "system:authenticated"),
        role("system:public-info-viewer", [{"nonResourceURLs": _PUBLIC_INFO_URLS, "verbs": ["get"]}]),
        binding("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
        role("system:basic-user", [{"apiGroups": ["authorization.k8s.io"],
                                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                                    "verbs": ["create"]},
                                   {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
                                    "verbs": ["create"]}]),
        binding("system:basic-user", "system:authenticated"),
    ]
