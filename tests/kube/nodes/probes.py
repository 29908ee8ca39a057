"""Probes as the kubelet's prober runs them, from the node: httpGet (2xx and 3xx pass) and
tcpSocket against the pod's address; exec probes are not emulated and fail, saying so,
rather than pass unseen. A container's three kinds differ in where they start and what
their result does (containers.py acts on it):

  startupProbe    failing until it first passes; until then the others do not run;
                  failureThreshold failures in a row and the container is restarted
  livenessProbe   passing until failureThreshold failures in a row: then restarted
  readinessProbe  failing until successThreshold passes: then the pod is Ready"""

import http.client
import socket
import time


def _port(container, port):
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return p["containerPort"]
    raise ValueError(f'no port named "{port}"')


def probe(spec, container, pod_ip):
    """(passed, message) of one probe of `spec` (a readinessProbe)."""
    timeout = spec.get("timeoutSeconds", 1)
    try:
        if "httpGet" in spec:
            g = spec["httpGet"]
            conn = http.client.HTTPConnection(g.get("host") or pod_ip, _port(container, g["port"]),
                                              timeout=timeout)
            try:
                conn.request("GET", g.get("path", "/"),
                             headers={h["name"]: h["value"] for h in g.get("httpHeaders") or []})
                code = conn.getresponse().status
            finally:
                conn.close()
            return 200 <= code < 400, f"HTTP probe failed with statuscode: {code}"
        if "tcpSocket" in spec:
            t = spec["tcpSocket"]
            socket.create_connection((t.get("host") or pod_ip, _port(container, t["port"])),
                                     timeout=timeout).close()
            return True, ""
        return False, "this kind of probe is not emulated (httpGet and tcpSocket are)"
    except (OSError, ValueError, http.client.HTTPException) as e:
        return False, f"Get probe: {e}"


class Prober:
    """One probe of one container: `ready` (its result) starts as `initially`, turns
    False after failureThreshold failures in a row and True after successThreshold
    passes."""

    def __init__(self, spec, container, started, initially=False):
        self.spec, self.container = spec, container
        self.next = started + spec.get("initialDelaySeconds", 0)
        self.ready = initially
        self.passes = self.failures = 0
        self.message = ""

    def due(self, now):
        return self.spec is not None and now >= self.next

    def run(self, pod_ip, now):
        ok, self.message = probe(self.spec, self.container, pod_ip)
        self.next = now + self.spec.get("periodSeconds", 10)
        if ok:
            self.passes, self.failures = self.passes + 1, 0
            if self.passes >= self.spec.get("successThreshold", 1):
                self.ready = True
        else:
            self.failures, self.passes = self.failures + 1, 0
            if self.failures >= self.spec.get("failureThreshold", 3):
                self.ready = False
        return ok


def monotonic():
    return time.monotonic()
