"""HTTP/1.1 front end: routing, content negotiation, authentication and RBAC
(tokens.py, rbac.py), watch streams.

Connections are keep-alive (every response has a Content-Length, or is chunked for
watches). A watch is a chunked response with one JSON event per line; it ends cleanly
(zero-length chunk) at timeoutSeconds, when the test hooks drop watches, or after a
410 ERROR event. TLS is optional; the handshake runs on the connection's own thread so
a stalled client cannot block the accept loop.
"""

import json
import random
import select
import socket
import ssl
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from . import discovery, errors, protobuf, rbac, scale, tables
from .errors import ApiError
from .selectors import Filter
from .store import Expired, encode

TABLE_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"
UNAUTHENTICATED_PATHS = ("/healthz", "/livez", "/readyz", "/version")
# A request (not a watch or a log's stream) served slower than this is logged: what
# a benchmark's tail of latencies is read against.
SLOW_REQUEST_S = 0.1


class StandinHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address, api, hooks, authn, authz, tls_context=None, verbose=False,
                 nodes=None):
        self.api = api
        self.hooks = hooks
        self.nodes = nodes  # the node emulator (nodes/cluster.py), with --nodes
        self.tls_context = tls_context
        self.authn = authn  # tokens.Authenticator: who a request is
        self.authz = authz  # rbac.Authorizer: what they may do
        self.verbose = verbose
        self.closing = threading.Event()
        super().__init__(address, RequestHandler)

    def get_request(self):
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls_context is not None:
            sock = self.tls_context.wrap_socket(sock, server_side=True,
                                                do_handshake_on_connect=False)
        return sock, addr


# The UIDs a real server gives its FlowSchema and PriorityLevelConfiguration objects;
# fixed here, since the stand-in serves neither kind.
FLOW_SCHEMA_UID = "6d3f1c2e-5a4b-4e8f-9c1d-2b7a0e4f8a31"
PRIORITY_LEVEL_UID = "0c9e8d7f-3b2a-4c1d-8e6f-5a4b3c2d1e0f"


class RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "edgetrain-kube-standin"

    def setup(self):
        super().setup()
        if isinstance(self.request, ssl.SSLSocket):
            try:
                self.request.do_handshake()
            except (ssl.SSLError, OSError):
                self.close_connection = True
                raise

    def log_message(self, fmt, *args):
        if self.server.verbose:
            super().log_message(fmt, *args)

    # -- plumbing ----------------------------------------------------------------------

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send_response(self, code, message=None):
        super().send_response(code, message)
        # API Priority and Fairness (on by default since Kubernetes 1.20, GA in 1.29)
        # names, on every response, the FlowSchema and priority level the request was
        # classified by. Clients read the headers as "this server protects itself" and
        # drop their own rate limits (controller-runtime, cert-manager, the operator).
        if self.server.hooks.flow_control:
            self.send_header("X-Kubernetes-PF-FlowSchema-UID", FLOW_SCHEMA_UID)
            self.send_header("X-Kubernetes-PF-PriorityLevel-UID", PRIORITY_LEVEL_UID)

    def _send(self, code, body, content_type="application/json", warnings=(), headers=()):
        if isinstance(body, (dict, list)):
            body = encode(body)
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for w in warnings:
            self.send_header("Warning", '299 - ' + json.dumps(w))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_error(self, e):
        retry = (e.details or {}).get("retryAfterSeconds") if e.code == 429 else None
        self._send(e.code, e.status(), headers=[("Retry-After", str(retry))] if retry else ())

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _dispatch(self, method):
        started = time.monotonic()
        try:
            self._serve(method)
        finally:
            took = time.monotonic() - started
            if took > SLOW_REQUEST_S and "watch=" not in self.path and "/log" not in self.path:
                print(f"standin: slow request: {method} {self.path} took {took * 1000:.0f} ms",
                      file=sys.stderr, flush=True)

    def _serve(self, method):
        body = self._read_body()
        url = urlsplit(self.path)
        params = parse_qs(url.query, keep_blank_values=True)
        path = url.path
        public = path.rstrip("/") in UNAUTHENTICATED_PATHS
        try:
            self.user = self.server.authn.authenticate(self.headers.get("Authorization", ""))
            if path.startswith("/_standin/"):
                if self.user is None:
                    raise ApiError(401, "Unauthorized", "Unauthorized")
                return self._hook(method, path, params)
            if not self.server.hooks.gate():
                raise ApiError(503, "ServiceUnavailable", "paused")
            retry_after = self.server.hooks.take_throttle()
            if retry_after is not None:
                # what APF answers when a priority level's queues are full
                raise ApiError(429, "TooManyRequests", "Too many requests, please try again later.",
                               {"retryAfterSeconds": retry_after})
            if not public:
                if self.user is None:
                    raise ApiError(401, "Unauthorized", "Unauthorized")
                # before routing, as the real server: a refused request learns nothing,
                # not even whether the resource exists
                self.server.authz.check(self.user, rbac.request_attributes(method, path, params))
            if body and "protobuf" in self.headers.get("Content-Type", ""):
                body = encode(protobuf.decode(body))  # kubectl create ns/cm/secret/sa/token
            rbac.set_requester(self.user)
            try:
                self._route(method, path, params, body)
            finally:
                rbac.set_requester(None)
        except ApiError as e:
            self._send_error(e)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        except Exception as e:  # a bug in the stand-in: report it like a server would
            import traceback
            traceback.print_exc()
            self._send_error(ApiError(500, "InternalError", f"stand-in internal error: {e!r}"))

    # -- routing -----------------------------------------------------------------------

    def _route(self, method, path, params, body):
        api = self.server.api
        registry = api.registry
        parts = [p for p in path.split("/") if p]
        accept = self.headers.get("Accept", "")
        if path in ("/healthz", "/livez", "/readyz") or path.startswith(
                ("/healthz/", "/livez/", "/readyz/")):
            return self._send(200, b"ok", "text/plain; charset=utf-8")
        if path.rstrip("/") == "/version":
            return self._send(200, discovery.SERVER_VERSION)
        if parts[:2] == ["openapi", "v3"]:
            return self._openapi(parts[2:])
        if parts == ["openapi", "v2"]:
            return self._send(200, *discovery.openapi_v2(accept))
        if parts[:1] == ["openapi"]:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if parts == ["api"]:
            if discovery.wants_aggregated(accept):
                return self._send(200, discovery.aggregated(registry, True), discovery.AGGREGATED)
            host = self.headers.get("Host", "")
            return self._send(200, discovery.api_versions(host))
        if parts == ["apis"]:
            if discovery.wants_aggregated(accept):
                return self._send(200, discovery.aggregated(registry, False),
                                  discovery.AGGREGATED)
            return self._send(200, discovery.api_group_list(registry))
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) == 2:
            g = discovery.api_group(registry, parts[1])
            if g is None:
                raise _no_route()
            return self._send(200, g)
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise _no_route()
        if not rest:
            rl = discovery.resource_list(registry, group, version)
            if rl is None:
                raise _no_route()
            return self._send(200, rl)
        if (method, group, rest) == ("POST", "authorization.k8s.io", ["selfsubjectaccessreviews"]):
            review = rbac.access_review(self.server.authz, self.user, json.loads(body or b"{}"))
            return self._send(201, review)
        self._resource(method, group, version, rest, params, body, accept)

    def _resource(self, method, group, version, rest, params, body, accept):
        api = self.server.api
        registry = api.registry
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            ns, rest = rest[1], rest[2:]
        rt = registry.lookup(group, version, rest[0])
        if rt is None or (ns is not None and not rt.namespaced) or len(rest) > 3:
            raise _no_route()
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        if sub not in (None, "status", "finalize", "binding", "log", "scale", "token") or \
                (sub == "status" and not rt.status_subresource) or \
                (sub == "scale" and rt.key not in scale.SCALABLE) or \
                (sub == "finalize" and rt.key != ("", "namespaces")) or \
                (sub in ("binding", "log") and rt.key != ("", "pods")) or \
                (sub == "token" and rt.key != ("", "serviceaccounts")):
            raise _no_route()
        if rt.namespaced and name is not None and ns is None:
            raise _no_route()
        if not _accepts_json(accept):
            raise ApiError(406, "NotAcceptable", "only the following media types are accepted: "
                           "application/json, application/yaml, "
                           "application/vnd.kubernetes.protobuf")
        ns = ns or ""
        if name is None:
            if method == "GET":
                if params.get("watch", [""])[-1] in ("true", "1"):
                    return self._watch(rt, ns, params, accept)
                return self._list(rt, ns, params, accept)
            if method == "POST":
                obj, warnings = api.create(rt, ns, body, params)
                return self._send(201, obj, warnings=warnings)
            if method == "DELETE":
                return self._send(200, api.delete_collection(rt, ns, body, params))
            raise errors.method_not_allowed()
        if method == "GET" and sub in (None, "status"):
            s = api.get(rt, ns, name)
            obj = api.to_version(s.obj, rt)
            if _wants_table(accept):
                t = tables.table(rt, [obj], _now(), _include(params))
                t["metadata"] = {"resourceVersion": str(s.rv)}
                return self._send(200, t, TABLE_TYPE)
            if obj is s.obj:
                return self._send(200, s.raw)
            return self._send(200, obj)
        if sub == "scale":
            return self._scale(method, rt, ns, name, params, body)
        if method == "GET" and sub == "log":
            return self._pod_log(api.get(rt, ns, name).obj, params)
        if method == "PUT" and sub == "finalize":
            return self._send(200, api.finalize_namespace(name, body))
        if method == "POST" and sub == "token":
            request = json.loads(body or b"{}")
            return self._send(201, self.server.authn.token_request(ns, name, request))
        if method == "POST" and sub == "binding":
            return self._send(201, api.bind_pod(ns, name, body))
        if method == "PUT" and sub in (None, "status"):
            obj, warnings = api.update(rt, ns, name, body, params, sub)
            return self._send(200, obj, warnings=warnings)
        if method == "PATCH" and sub in (None, "status"):
            obj, warnings = api.patch(rt, ns, name, self.headers.get("Content-Type"), body,
                                      params, sub)
            return self._send(200, obj, warnings=warnings)
        if method == "DELETE" and sub is None:
            code, obj = api.delete(rt, ns, name, body, params)
            return self._send(code, obj)
        raise errors.method_not_allowed()

    def _scale(self, method, rt, ns, name, params, body):
        api = self.server.api
        if method == "GET":
            return self._send(200, scale.read(api, rt, ns, name))
        if method == "PUT":
            return self._send(200, scale.update(api, rt, ns, name, body, params))
        if method == "PATCH":
            return self._send(200, scale.patch(api, rt, ns, name,
                                               self.headers.get("Content-Type"), body, params))
        raise errors.method_not_allowed()

    def _pod_log(self, pod, params):
        """GET pods/<name>/log: what the pod's kubelet kept of a container's output; with
        follow=true, streamed until the container ends, as `kubectl logs -f` expects."""
        arg = lambda k: params.get(k, [""])[-1]  # noqa: E731
        if self.server.nodes is None:
            raise errors.bad_request(f'pod {pod["metadata"]["name"]} does not have a host '
                                     f'assigned (the node emulator runs with --nodes)')
        source, why = self.server.nodes.log_source(pod, arg("container") or None,
                                                   arg("previous") == "true")
        if source is None:
            raise errors.bad_request(why)
        path, running = source
        with open(path, "rb") as f:
            data = f.read()
        if arg("tailLines"):
            lines = data.splitlines(keepends=True)
            n = int(arg("tailLines"))
            data = b"".join(lines[-n:]) if n > 0 else b""
        if arg("limitBytes"):
            data = data[:int(arg("limitBytes"))]
        if arg("follow") != "true":
            return self._send(200, data, "text/plain")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            with open(path, "rb") as f:
                f.seek(0, 2)
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                while not self.server.closing.is_set():
                    more = f.read()
                    if more:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(more), more))
                        self.wfile.flush()
                    elif not running() or self._client_gone():
                        break
                    else:
                        time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

    def _list(self, rt, ns, params, accept):
        api = self.server.api
        items, rv, cont, remaining = api.list(rt, ns, params)
        if _wants_table(accept):
            md = {"resourceVersion": str(rv)}
            if cont:
                md["continue"] = cont
            t = tables.table(rt, [api.to_version(s.obj, rt) for s in items], _now(),
                             _include(params), md)
            return self._send(200, t, TABLE_TYPE)
        if all(api.to_version(s.obj, rt) is s.obj for s in items):
            # fast path: splice the cached encodings (5,000 nodes in a few ms)
            md = {"resourceVersion": str(rv)}
            if cont:
                md["continue"] = cont
            if remaining is not None:
                md["remainingItemCount"] = remaining
            head = encode({"kind": rt.kind + "List", "apiVersion": rt.api_version,
                           "metadata": md})[:-1]
            body = head + b',"items":[' + b",".join(s.raw for s in items) + b"]}"
            return self._send(200, body)
        return self._send(200, api.list_object(rt, [s.obj for s in items], rv, cont, remaining))

    # -- watch -------------------------------------------------------------------------

    def _watch(self, rt, ns, params, accept):
        """The watch protocol: see store.py for the revision model."""
        api, store, hooks = self.server.api, self.server.api.store, self.server.hooks
        filt = Filter(rt, ns or None if rt.namespaced else None,
                      params.get("labelSelector", [""])[-1], params.get("fieldSelector", [""])[-1])
        rv_param = params.get("resourceVersion", [""])[-1]
        timeout = params.get("timeoutSeconds", [""])[-1]
        # Without timeoutSeconds a real server ends a watch after 30-60 minutes.
        timeout = float(timeout) if timeout else random.uniform(1800, 3600)
        bookmarks = params.get("allowWatchBookmarks", [""])[-1] == "true"
        send_initial = params.get("sendInitialEvents", [""])[-1] == "true"
        as_table = _wants_table(accept)
        include = _include(params)
        deadline = time.monotonic() + timeout
        epoch = store.watch_epoch
        expired = None
        initial = []
        if rv_param in ("", "0") or send_initial:
            items, cursor = store.list(rt.key, ns or None if rt.namespaced else None)
            initial = [s.obj for s in items if filt.matches(s.obj)]
        else:
            try:
                cursor = int(rv_param)
            except ValueError:
                raise errors.bad_request(f'invalid resource version "{rv_param}"')
            try:
                store.events_after(cursor)
            except Expired as e:
                expired = e
        wid = hooks.watch_opened(rt.plural)
        try:
            self.send_response(200)
            self.send_header("Content-Type", TABLE_TYPE if as_table else "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            stream = _EventWriter(self.wfile, rt, api, as_table, include, hooks.watch_chunk_bytes)
            if expired is not None:
                stream.error(errors.gone(str(expired)))
                return stream.close()
            for obj in initial:
                stream.event("ADDED", obj)
            if send_initial and bookmarks:
                stream.bookmark(cursor, initial_events_end=True)
            next_bookmark = self._next_bookmark(deadline)
            while not self.server.closing.is_set():
                now = time.monotonic()
                if now >= deadline:
                    break
                if not hooks.gate(deadline - now):
                    break
                if self._client_gone():
                    break
                if rt.crd is not None and api.registry.lookup(rt.group, rt.version,
                                                              rt.plural) is not rt:
                    break  # the CRD was deleted or changed: clients re-discover and relist
                # wake at least every second to notice clients that went away
                wait = min(deadline, next_bookmark, time.monotonic() + 1.0) - time.monotonic()
                try:
                    events = store.wait_events(cursor, max(wait, 0), epoch)
                except Expired as e:  # fell behind the history window
                    stream.error(errors.gone(str(e)))
                    break
                for ev in events:
                    cursor = ev.rv
                    if ev.key != rt.key:
                        continue
                    kind = _transition(ev, filt)
                    if kind is not None:
                        stream.event(kind, ev.obj, ev.raw)
                if store.watch_epoch != epoch:
                    break  # dropped, after delivering what happened before the drop
                if bookmarks and time.monotonic() >= next_bookmark:
                    stream.bookmark(max(cursor, 0))
                    next_bookmark = self._next_bookmark(deadline)
                elif not bookmarks:
                    next_bookmark = deadline
            stream.close()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            hooks.watch_closed(wid)

    def _client_gone(self):
        """During a watch an HTTP/1.1 client sends nothing, so a readable socket means
        it closed the connection (a real server notices too and frees the watch)."""
        sock = self.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
            if isinstance(sock, ssl.SSLSocket):
                return True
            return sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _next_bookmark(self, deadline):
        """Bookmarks come every interval, and once shortly before the watch times out
        (as the watch cache does), so clients can resume from a fresh revision."""
        now = time.monotonic()
        nxt = now + self.server.hooks.bookmark_interval
        before_end = deadline - 1.0
        if now < before_end < nxt:
            return before_end
        return nxt

    # -- OpenAPI and hooks -------------------------------------------------------------

    def _openapi(self, parts):
        registry = self.server.api.registry
        if not parts:
            return self._send(200, discovery.openapi_index(registry))
        if parts[0] == "api" and len(parts) == 2:
            doc = discovery.openapi_document(registry, "", parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            doc = discovery.openapi_document(registry, parts[1], parts[2])
        else:
            doc = None
        if doc is None:
            raise _no_route()
        return self._send(200, doc)

    def _hook(self, method, path, params):
        hooks, store, api = self.server.hooks, self.server.api.store, self.server.api
        name = path[len("/_standin/"):].strip("/")
        arg = lambda k, d: params.get(k, [d])[-1]  # noqa: E731
        if name == "nodes" or name.startswith("nodes/"):
            if self.server.nodes is None:
                raise ApiError(404, "NotFound", "no node emulator (start with --nodes)")
            code, body = self.server.nodes.faults.handle(method, name.split("/")[1:],
                                                         {k: v[-1] for k, v in params.items()})
            return self._send(code, body)
        if method == "GET" and name == "authorizations":
            return self._send(200, self._authorizations(arg("user", "")))
        if method == "POST" and name == "compact":
            store.compact()
        elif method == "POST" and name == "drop-watches":
            store.end_all_watches()
        elif method == "POST" and name == "pause":
            hooks.pause()
        elif method == "POST" and name == "resume":
            hooks.resume()
            store.wake_all()
        elif method == "POST" and name == "latency":
            hooks.latency = float(arg("ms", "0")) / 1000.0
        elif method == "POST" and name == "bookmark-interval":
            hooks.bookmark_interval = float(arg("seconds", "60"))
            store.wake_all()
        elif method == "POST" and name == "flow-control":
            hooks.flow_control = arg("enabled", "true") != "false"
        elif method == "POST" and name == "throttle":
            hooks.throttle(int(arg("count", "1")), int(arg("retryAfterSeconds", "1")))
        elif method == "POST" and name == "watch-chunk-bytes":
            hooks.watch_chunk_bytes = int(arg("bytes", "0"))
        elif method == "GET" and name == "wait-watches":
            ok = hooks.wait_watches(int(arg("count", "0")), int(arg("opened", "0")),
                                    arg("resource", None), float(arg("timeoutSeconds", "10")))
            if not ok:
                raise ApiError(504, "Timeout", "not enough watches opened in time")
        elif not (method == "GET" and name == "info"):
            raise _no_route()
        self._send(200, {"revision": store.revision, "watches": hooks.count(),
                         "opened": dict(hooks.opened), "latencyMs": hooks.latency * 1000,
                         "paused": hooks.paused, "flowControl": hooks.flow_control,
                         "throttled": hooks.throttled, "cel": api.cel.available,
                         "celUnavailableReason": api.cel.unavailable_reason})

    def _authorizations(self, user):
        """What RBAC decided for a user (every user but system:masters is recorded):
        each distinct request's attributes, allowed or not, and how often."""
        log = self.server.authz.log
        if not user:
            return {"users": log.users()}
        return {"user": user, "decisions": log.decisions(user)}


class _EventWriter:
    """Writes watch events as HTTP chunks, one JSON document and newline each."""

    def __init__(self, wfile, rt, api, as_table, include, chunk_bytes=0):
        self.wfile, self.rt, self.api = wfile, rt, api
        self.as_table, self.include = as_table, include
        self.columns_sent = False
        self.chunk_bytes = chunk_bytes  # > 0: events cut into chunks of at most this many bytes

    def _chunk(self, data):
        step = self.chunk_bytes or len(data)
        for i in range(0, len(data), step):
            piece = data[i:i + step]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()

    def event(self, kind, obj, raw=None):
        versioned = self.api.to_version(obj, self.rt)
        if self.as_table:
            t = tables.table(self.rt, [versioned], _now(), self.include,
                             {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                             with_columns=not self.columns_sent)
            self.columns_sent = True
            payload = encode(t)
        elif raw is not None and versioned is obj:
            payload = raw  # the stored encoding, shared by every watcher
        else:
            payload = encode(versioned)
        self._chunk(b'{"type":"' + kind.encode() + b'","object":' + payload + b"}\n")

    def bookmark(self, rv, initial_events_end=False):
        md = {"resourceVersion": str(rv), "creationTimestamp": None}
        if initial_events_end:
            md["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": md}
        self._chunk(encode({"type": "BOOKMARK", "object": obj}) + b"\n")

    def error(self, e):
        self._chunk(encode({"type": "ERROR", "object": e.status()}) + b"\n")

    def close(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _transition(ev, filt):
    """What a watcher with a selector sees: an object that starts matching is ADDED to
    its view, one that stops matching is DELETED from it."""
    now_matches = ev.type != "DELETED" and filt.matches(ev.obj)
    was_matching = ev.old is not None and filt.matches(ev.old)
    if ev.type == "ADDED":
        return "ADDED" if now_matches else None
    if ev.type == "DELETED":
        return "DELETED" if was_matching or filt.matches(ev.obj) else None
    if now_matches and was_matching:
        return "MODIFIED"
    if now_matches:
        return "ADDED"
    if was_matching:
        return "DELETED"
    return None


def _no_route():
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def _now():
    return datetime.now(timezone.utc)


def _accepts_json(accept):
    if not accept:
        return True
    for part in accept.split(","):
        media = part.split(";")[0].strip()
        if media in ("application/json", "*/*", "application/*", "application/yaml"):
            return True
    return False


def _wants_table(accept):
    for part in (accept or "").split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params:
            return True
        if part.split(";")[0].strip() == "application/json" and not params:
            return False
    return False


def _include(params):
    return params.get("includeObject", ["Metadata"])[-1] or "Metadata"
