"""Test harness: runs tests/kube/standin as a separate process and talks to it over HTTP
with the standard library only (black box: nothing here imports the server's code).
"""

import base64
import http.client
import json
import os
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
from urllib.parse import urlencode, urlsplit

KUBE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The checkout whose crds/ and examples/ the kubectl tests apply (overridable to test
# another checkout's manifests against this stand-in).
REPO_ROOT = os.environ.get("EDGETRAIN_REPO_ROOT") or os.path.dirname(os.path.dirname(KUBE_DIR))
STANDIN = os.path.join(KUBE_DIR, "standin")
# The programs the suites run, and the node emulator's images (tests/kube/images.yaml,
# the stand-in's --build-dir): this checkout's build, or another's (EDGETRAIN_BUILD_DIR).
BUILD_DIR = os.environ.get("EDGETRAIN_BUILD_DIR") or os.path.join(REPO_ROOT, "build")
BIN = os.path.join(BUILD_DIR, "bin")
EDGETRAIN = os.path.join(BIN, "edgetrain")
AGENT = os.path.join(BIN, "edgetrain-agent")
OPERATOR = os.path.join(BIN, "edgetrain-operator")
EXAMPLE = os.path.join(REPO_ROOT, "examples", "k8s", "digits-team.yaml")


def requires_built(*programs):
    """Skips the test or class unless each of these programs (paths under BIN) is built."""
    missing = [p for p in programs if not os.access(p, os.X_OK)]
    return unittest.skipUnless(not missing, f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                                            "not built (make build, or set EDGETRAIN_BUILD_DIR)")


class Response:
    def __init__(self, status, headers, body):
        self.status, self.raw = status, body
        self.header_list = headers
        self.headers = dict(headers)
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    def header(self, name):
        return self.headers.get(name)

    def warnings(self):
        return [v for k, v in self.header_list if k.lower() == "warning"]

    def __repr__(self):
        return f"<Response {self.status} {self.raw[:300]!r}>"


class Client:
    """One keep-alive connection to the server (not shared between threads)."""

    def __init__(self, url, token=None, ca_file=None, timeout=30):
        u = urlsplit(url)
        self.host, self.port, self.https = u.hostname, u.port, u.scheme == "https"
        self.token, self.ca_file, self.timeout = token, ca_file, timeout
        self._conn = None
        self.connections_opened = 0
        self.watches = []  # open WatchStreams, closed with the client

    def _connect(self):
        if self.https:
            ctx = ssl.create_default_context(cafile=self.ca_file)
            return http.client.HTTPSConnection(self.host, self.port, context=ctx,
                                               timeout=self.timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def _headers(self, extra, content_type, body):
        h = {"Accept": "application/json"}
        if body is not None:
            h["Content-Type"] = content_type
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        h.update(extra or {})
        return h

    def request(self, method, path, body=None, content_type="application/json", headers=None,
                **query):
        if query:
            path += ("&" if "?" in path else "?") + urlencode(query)
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        for attempt in range(2):
            if self._conn is None:
                self._conn = self._connect()
                self.connections_opened += 1
            try:
                self._conn.request(method, path, body=body,
                                   headers=self._headers(headers, content_type, body))
                r = self._conn.getresponse()
                data = r.read()
                return Response(r.status, r.getheaders(), data)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self._conn.close()
                self._conn = None
                if attempt:
                    raise

    def get(self, path, **q):
        return self.request("GET", path, **q)

    def post(self, path, body, **q):
        return self.request("POST", path, body, **q)

    def put(self, path, body, **q):
        return self.request("PUT", path, body, **q)

    def patch(self, path, body, content_type="application/merge-patch+json", **q):
        return self.request("PATCH", path, body, content_type=content_type, **q)

    def delete(self, path, body=None, **q):
        return self.request("DELETE", path, body, **q)

    def hook(self, name, method="POST", **q):
        return self.request(method, f"/_standin/{name}", **q)

    def watch(self, path, accept="application/json", **query):
        w = WatchStream(self, path, accept, query)
        self.watches.append(w)
        return w

    def close_watches(self):
        for w in self.watches:
            w.close()
        self.watches.clear()

    def close(self):
        self.close_watches()
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class WatchStream:
    """A watch request on its own connection; events are read one line at a time."""

    def __init__(self, client, path, accept, query):
        self.conn = client._connect()
        q = dict(query)
        q["watch"] = "true"
        full = path + ("&" if "?" in path else "?") + urlencode(q)
        headers = {"Accept": accept}
        if client.token:
            headers["Authorization"] = f"Bearer {client.token}"
        self.conn.request("GET", full, headers=headers)
        self.response = self.conn.getresponse()  # returns once the server registered it
        self.status = self.response.status
        self.headers = dict(self.response.getheaders())

    def next(self, timeout=10):
        """The next event as a dict, or None when the stream ended."""
        self.conn.sock.settimeout(timeout)
        line = self.response.readline()
        if not line:
            return None
        return json.loads(line)

    def events(self, n, timeout=10):
        out = []
        for _ in range(n):
            ev = self.next(timeout)
            if ev is None:
                break
            out.append(ev)
        return out

    def rest(self, timeout=10):
        """Every remaining event until the server ends the stream."""
        out = []
        while True:
            ev = self.next(timeout)
            if ev is None:
                return out
            out.append(ev)

    def close(self):
        self.conn.close()


def read_kubeconfig(path):
    with open(path) as f:
        text = f.read()
    server = re.search(r"server: (\S+)", text).group(1)
    token = re.search(r"token: (\S+)", text)
    ca = re.search(r"certificate-authority-data: (\S+)", text)
    return server, token.group(1) if token else None, \
        base64.b64decode(ca.group(1)) if ca else None


def write_kubeconfig(path, server, token=None, ca_pem=None):
    """A kubeconfig for server: a Bearer token, the CA to trust (https)."""
    cluster = f"    server: {server}\n"
    if ca_pem:
        cluster += f"    certificate-authority-data: {base64.b64encode(ca_pem).decode()}\n"
    user = f"  user:\n    token: {token}\n" if token else "  user: {}\n"
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                f"clusters:\n- name: c\n  cluster:\n{cluster}"
                "contexts:\n- name: c\n  context: {cluster: c, user: u, namespace: default}\n"
                f"users:\n- name: u\n{user}")
    os.chmod(path, 0o600)


class Standin:
    """The stand-in as a child process: started in __enter__, stopped (SIGTERM) in
    __exit__, which also checks that it stopped cleanly."""

    def __init__(self, *args, tls=False):
        self.args = list(args) + (["--tls"] if tls else [])
        self.workdir = tempfile.mkdtemp(prefix="standin-test-")
        self.kubeconfig = os.path.join(self.workdir, "kubeconfig")
        self.proc = None
        self.startup_seconds = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self.stderr = open(os.path.join(self.workdir, "stderr.log"), "w+")
        t0 = time.monotonic()
        self.proc = subprocess.Popen([STANDIN, "--kubeconfig", self.kubeconfig, *self.args],
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], 15)
        line = self.proc.stdout.readline() if ready else ""
        if line.strip() != "ready":
            self.proc.kill()
            raise RuntimeError(f"stand-in did not start: {line!r} {self.log()}")
        self.startup_seconds = time.monotonic() - t0
        self.url, self.token, ca = read_kubeconfig(self.kubeconfig)
        self.ca_file = None
        if ca:
            self.ca_file = os.path.join(self.workdir, "ca.crt")
            with open(self.ca_file, "wb") as f:
                f.write(ca)

    def client(self, token=None, **kw):
        return Client(self.url, token=self.token if token is None else token,
                      ca_file=self.ca_file, **kw)

    def log(self):
        with open(os.path.join(self.workdir, "stderr.log")) as f:
            return f.read()

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        hung = None
        try:
            # Stopping kills every emulated pod's processes and joins each kubelet's
            # threads: seconds on a loaded 2-core machine.
            self.returncode = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR2)  # every thread's stack to stderr
            time.sleep(1)
            self.proc.kill()
            self.returncode = self.proc.wait()
            hung = self.log()[-6000:]
        self.proc.stdout.close()
        self.stderr.close()
        self.proc = None
        if hung is not None:
            sys.stderr.write(f"stand-in still running 30 s after SIGTERM; its stderr ends:\n{hung}\n")
        shutil.rmtree(self.workdir, ignore_errors=True)


def raw_http(url, request_bytes, timeout=10):
    """Sends bytes on a plain socket and returns the socket (for framing tests)."""
    u = urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=timeout)
    s.sendall(request_bytes)
    return s


def wait_until(predicate, timeout=10, interval=0.02):
    """For effects of asynchronous emulated controllers (the garbage collector), which
    have no event a test could block on; polls a cheap GET."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(interval)
    return predicate()


def readme_commands(section):
    """The command lines of the first sh block under README.md's `## section`: what a
    new user pastes, which a test runs as written."""
    with open(os.path.join(REPO_ROOT, "README.md")) as f:
        text = f.read()
    part = text[text.index(f"\n## {section}\n"):]
    part = part[:part.find("\n## ", 1)]
    block = re.search(r"```sh\n(.*?)```", part, re.S)
    assert block, f"README.md's {section} has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def find_kubectl():
    """kubectl 1.32: the Cloud SDK build, else the one the npm package carries."""
    candidates = [os.environ.get("KUBECTL_1_32", ""),
                  "/usr/lib/google-cloud-sdk/bin/kubectl.1.32",
                  os.path.join(KUBE_DIR, "node_modules", ".kubectl-1.32", "kubectl")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    k = shutil.which("kubectl")
    if k:
        out = subprocess.run([k, "version", "--client", "-o", "json"], capture_output=True,
                             text=True).stdout
        if '"minor": "32"' in out:
            return k
    return None
