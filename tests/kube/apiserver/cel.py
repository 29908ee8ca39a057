"""Client side of the CEL bridge (cel_bridge.cjs, run under Node.js).

CRD validation rules are CEL; a real implementation evaluates them rather than an
approximation written here. The bridge is one child process for the whole server,
spoken to in request/reply lines under a lock. If Node.js or the npm packages are
missing, `available` is False and rules are not enforced (the README says so, and
GET /_standin/info reports it so tests can insist on it).
"""

import json
import os
import shutil
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
BRIDGE = os.path.join(HERE, "cel_bridge.cjs")
NODE_MODULES = os.path.join(os.path.dirname(HERE), "node_modules")


class CelBridge:
    def __init__(self):
        self._lock = threading.Lock()
        self._proc = None
        self.unavailable_reason = None
        node = shutil.which("node")
        if node is None:
            self.unavailable_reason = "node (Node.js) is not installed; run tests/kube/setup"
        elif not os.path.isdir(os.path.join(NODE_MODULES, "@bufbuild", "cel")):
            self.unavailable_reason = "tests/kube/node_modules is missing; run tests/kube/setup"
        else:
            self._proc = subprocess.Popen(
                [node, BRIDGE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=sys.stderr, cwd=os.path.dirname(HERE), bufsize=0)

    @property
    def available(self):
        return self._proc is not None

    def _call(self, req):
        line = json.dumps(req, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                return {"ok": False, "error": "CEL bridge is not running"}
            self._proc.stdin.write(line)
            reply = self._proc.stdout.readline()
        if not reply:
            return {"ok": False, "error": "CEL bridge exited"}
        return json.loads(reply)

    def compile(self, rule_id, rule, message_expression, schema):
        """Returns (True, uses_old_self) or (False, error message)."""
        r = self._call({"op": "compile", "id": rule_id, "rule": rule,
                        "messageExpression": message_expression, "schema": _strip(schema)})
        return (True, r.get("usesOldSelf", False)) if r.get("ok") else (False, r.get("error"))

    def evaluate_all(self, evals):
        """evals: (rule_id, self_value, old_value) each, old_value MISSING where
        the rule does not see oldSelf. Returns, in order and from one round trip
        to the bridge, (True, valid, message) or (False, error, None) for each."""
        from .schema import MISSING
        if not evals:
            return []
        reqs = []
        for rule_id, self_value, old_value in evals:
            req = {"id": rule_id, "self": self_value}
            if old_value is not MISSING:
                req["oldSelf"] = old_value
            reqs.append(req)
        r = self._call({"op": "evalAll", "evals": reqs})
        if not r.get("ok"):
            return [(False, r.get("error"), None)] * len(evals)
        return [(True, x["valid"], x.get("message")) if x.get("ok") else (False, x.get("error"), None)
                for x in r["results"]]

    def close(self):
        if self._proc is not None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=2)
            except Exception:
                self._proc.kill()
            self._proc = None


def _strip(schema):
    """Only the typing information the bridge needs (keeps compile requests small)."""
    if not isinstance(schema, dict):
        return {}
    out = {}
    if "type" in schema:
        out["type"] = schema["type"]
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: _strip(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = _strip(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = _strip(schema["additionalProperties"])
    return out
