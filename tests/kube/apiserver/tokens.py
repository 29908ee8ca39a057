"""AUTHENTICATION: who a request's Bearer token says it is, and the TokenRequest API that
hands out service-account tokens.

Two kinds of token, as on a K3s server:
- the server's own token (`--token`, or a random one with `--tls`): the user
  `system:admin` in the group `system:masters`, which no authorizer refuses (a
  cluster-admin; kubectl in the tests uses it);
- service-account tokens issued by `POST .../serviceaccounts/NAME/token` (what
  `kubectl create token NAME` sends, and what the emulated kubelets ask for a pod's
  projected `serviceAccountToken` volume): the user `system:serviceaccount:NS:NAME` in
  the groups `system:serviceaccounts`, `system:serviceaccounts:NS` and
  `system:authenticated`, whom RBAC authorizes (rbac.py). Such a token is valid while
  it has not expired, its ServiceAccount exists with the uid it was issued for, and so
  does the object it is bound to (a pod), as the real server checks a bound token.

A server that requires no token (no `--tls`, no `--token`) takes a request with none,
or with one it never issued, for the admin, as it did before RBAC. Tokens are opaque
random strings, not signed JWTs: clients do not look inside them.
"""

import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from . import errors

# What the real server accepts of spec.expirationSeconds, and its default.
MIN_EXPIRATION_SECONDS = 600
DEFAULT_EXPIRATION_SECONDS = 3600
# The lifetime the ServiceAccount admission plugin asks for a pod's kube-api-access
# token: kube-apiserver's WarnOnlyBoundTokenExpirationSeconds, 1 h and 7 s (by which the
# real server recognises such a token). The emulated kubelet also asks for it for a
# projected token whose volume names no expirationSeconds.
POD_TOKEN_EXPIRATION_SECONDS = 3607
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple

    @property
    def privileged(self):
        """In system:masters: kube-apiserver allows it everything before RBAC is asked."""
        return "system:masters" in self.groups


ADMIN = UserInfo("system:admin", ("system:masters", "system:authenticated"))


def service_account_user(namespace, name):
    return UserInfo(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
                    ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                     "system:authenticated"))


@dataclass(frozen=True)
class _Issued:
    namespace: str
    name: str
    uid: str              # the ServiceAccount's: a new account of the same name is not it
    expires: float        # time.time()
    bound: tuple = None   # (storage key, namespace, name, uid) of the object it is bound to


class Authenticator:
    def __init__(self, store, registry, admin_token):
        self.store = store
        self.admin_token = admin_token
        self._sa_key = registry.lookup("", "v1", "serviceaccounts").key
        self._registry = registry
        self._issued = {}  # token -> _Issued
        self._lock = threading.Lock()

    def authenticate(self, authorization):
        """The user of an Authorization header, or None (401)."""
        token = authorization[len("Bearer "):].strip() if authorization.startswith("Bearer ") else ""
        if self.admin_token is not None and token == self.admin_token:
            return ADMIN
        with self._lock:
            issued = self._issued.get(token)
        if issued is not None:
            return self._valid(issued)
        return ADMIN if self.admin_token is None else None

    def _valid(self, t):
        if time.time() >= t.expires:
            return None
        sa = self.store.get(self._sa_key, t.namespace, t.name)
        if sa is None or sa.obj["metadata"].get("uid") != t.uid:
            return None
        if t.bound is not None:
            key, ns, name, uid = t.bound
            obj = self.store.get(key, ns, name)
            if obj is None or obj.obj["metadata"].get("uid") != uid:
                return None
        return service_account_user(t.namespace, t.name)

    def issue(self, namespace, name, expiration_seconds=DEFAULT_EXPIRATION_SECONDS, bound=None):
        """A token for the ServiceAccount NAMESPACE/NAME (404 if there is none), bound to
        the stored object `bound` (a pod) if given: (token, expiry as a datetime)."""
        sa = self.store.get(self._sa_key, namespace, name)
        if sa is None:
            raise errors.not_found(self._registry.lookup("", "v1", "serviceaccounts"), name)
        token = secrets.token_urlsafe(32)
        expires = time.time() + expiration_seconds
        with self._lock:
            self._issued[token] = _Issued(namespace, name, sa.obj["metadata"]["uid"], expires, bound)
        return token, datetime.fromtimestamp(int(expires), timezone.utc)

    def issue_for_pod(self, pod, expiration_seconds):
        """What a kubelet asks for a pod's projected serviceAccountToken volume: a token
        of the pod's ServiceAccount, bound to the pod."""
        md = pod["metadata"]
        pods = self._registry.lookup("", "v1", "pods").key
        token, _ = self.issue(md["namespace"], pod["spec"].get("serviceAccountName") or "default",
                              expiration_seconds, (pods, md["namespace"], md["name"], md["uid"]))
        return token

    def token_request(self, namespace, name, request):
        """POST /api/v1/namespaces/NS/serviceaccounts/NAME/token: the TokenRequest with its
        status filled in (authentication.k8s.io/v1)."""
        spec = dict(request.get("spec") or {})
        seconds = int(spec.get("expirationSeconds") or DEFAULT_EXPIRATION_SECONDS)
        if seconds < MIN_EXPIRATION_SECONDS:
            raise errors.ApiError(422, "Invalid", f'TokenRequest.authentication.k8s.io "{name}" is invalid: '
                                  f"spec.expirationSeconds: Invalid value: {seconds}: may not specify a "
                                  f"duration less than 10 minutes")
        spec["expirationSeconds"] = seconds
        spec["audiences"] = spec.get("audiences") or [API_AUDIENCE]
        bound = self._bound_object(namespace, spec.get("boundObjectRef"))
        token, expires = self.issue(namespace, name, seconds, bound)
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
                "spec": spec,
                "status": {"token": token, "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}}

    def _bound_object(self, namespace, ref):
        """(key, ns, name, uid) of a boundObjectRef to a Pod or Secret of the namespace."""
        if not ref:
            return None
        plural = {"Pod": "pods", "Secret": "secrets"}.get(ref.get("kind"))
        if plural is None:
            raise errors.bad_request(f'cannot bind a token to a {ref.get("kind")!r}: Pod and Secret are emulated')
        rt = self._registry.lookup("", "v1", plural)
        obj = self.store.get(rt.key, namespace, ref.get("name", ""))
        uid = obj.obj["metadata"].get("uid") if obj else None
        if uid is None or (ref.get("uid") and ref["uid"] != uid):
            raise errors.not_found(rt, ref.get("name", ""))
        return rt.key, namespace, ref["name"], uid
