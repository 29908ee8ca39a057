"""Shared fixture of the node emulator's suites: one stand-in with --nodes per test class,
on a profile the class writes, its images' programs from harness.BUILD_DIR, with every
delay short; kubectl 1.32 and HTTP to drive it,
and waits that follow watches instead of sleeping."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import yaml

import chart
from harness import BUILD_DIR, OPERATOR, REPO_ROOT, Standin, find_kubectl, wait_until
from test_kubectl import Kubectl

FAST = ["--heartbeat", "0.2", "--node-monitor-grace", "1", "--default-toleration-seconds", "2",
        "--backoff", "0.2", "--backoff-max", "1", "--resync", "0.1"]

TWO_NODES_AND_A_PAPER_ONE = """\
apiVersion: edgetrain.dev/v1alpha1
kind: ClusterProfile
metadata: {name: test-site}
spec:
  nodes:
    - {name: gw, cpu: 4, memory: 8Gi}
    - name: robot
      arch: arm64
      compute: {slowdown: 4}
      link: {trace: %s/examples/traces/wifi-indoor-1.csv}
      stream: {ratePerSecond: 30}
    - {name: paper, registeredOnly: true}
"""

# the default namespace's TrainingJobs (crds/), where the operator's tests apply them
JOBS = "/apis/edgetrain.dev/v1alpha1/namespaces/default/trainingjobs"

# edgetrain-operator with every wait short (docs/operator.md, "Waits").
OPERATOR_FAST = ["--status-interval", "300ms", "--unschedulable-retry", "1s", "--recheck-after", "200ms",
                 "--relist-backoff", "100ms",
                 "--relist-backoff-max", "1s", "--retry-backoff", "50ms", "--retry-backoff-max", "2s",
                 # The Lease: a standby leads 3 s after a leader's crash. A leader that
                 # cannot renew for 2 s stops leading and exits, as client-go's does;
                 # 1.5 s was within a slow moment of a stand-in sharing 2 cores with
                 # make test's other suites.
                 "--termination-grace", "5", "--lease-duration", "3s", "--renew-deadline", "2s",
                 "--retry-period", "300ms", "--measurement-interval", "1s",
                 # A team's certificate lives 24 s and is renewed 16 s in: jobs that run
                 # longer train across a rotation.
                 "--certificate-validity", "24s",
                 # A worker counted out 2 s has its link down (BandwidthDegraded, LinkDown),
                 # and a team that has not stepped for 2 s is Stalled.
                 "--link-down-after", "2s", "--stalled-after", "2s"]

# examples/nodes/edge-site.yaml with its traces' paths made absolute, since the class's
# copy of a profile lives elsewhere.
EDGE_SITE_PATH = os.path.join(REPO_ROOT, "examples", "nodes", "edge-site.yaml")
with open(EDGE_SITE_PATH) as _f:
    EDGE_SITE = _f.read().replace("../traces/", os.path.join(REPO_ROOT, "examples", "traces") + "/")


class SiteTestCase(unittest.TestCase):
    profile = TWO_NODES_AND_A_PAPER_ONE
    extra_args = []

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="site-test-")
        # Removed once the stand-in has stopped (cleanups run last first): every
        # run had left one in /tmp, holding the operator's kubeconfig (a
        # reader's check of the benches that run these tests).
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        cls.profile_path = os.path.join(cls.dir, "profile.yaml")
        with open(cls.profile_path, "w") as f:
            f.write(cls.profile.replace("%s", REPO_ROOT))
        cls.server = Standin("--nodes", cls.profile_path, "--build-dir", BUILD_DIR, *FAST, *cls.extra_args)
        cls.server.start()
        cls.addClassCleanup(cls._stop_server)
        cls.api = cls.server.client()
        if find_kubectl():
            cls.kubectl = Kubectl(cls.server)

    @classmethod
    def _stop_server(cls):
        cls.api.close()
        cls.server.stop()
        assert cls.server.returncode == 0, f"stand-in exited with {cls.server.returncode}"

    def tearDown(self):
        self.api.close_watches()

    @classmethod
    def operator_kubeconfig(cls):
        """A kubeconfig with a token of the chart's operator ServiceAccount, whose roles
        the stand-in holds as the chart renders them: an operator started with it may
        do exactly what the chart grants (chart.operator_account). Made once a class."""
        if "operator_account" not in cls.__dict__:
            if chart.HELM is None:
                raise unittest.SkipTest("helm 3.17 is missing: run tests/kube/setup")
            cls.operator_account = chart.operator_account(cls.dir, cls.server, cls.kubectl)
        return cls.operator_account.kubeconfig

    # -- objects -------------------------------------------------------------------------

    def apply(self, *objects, ns="default"):
        path = os.path.join(self.dir, f"apply-{time.monotonic_ns()}.yaml")
        with open(path, "w") as f:
            yaml.safe_dump_all(objects, f)
        return self.kubectl.run("apply", "-n", ns, "-f", path).stdout

    def pod_path(self, name=None, ns="default"):
        p = f"/api/v1/namespaces/{ns}/pods"
        return p if name is None else f"{p}/{name}"

    def get_pod(self, name, ns="default"):
        r = self.api.get(self.pod_path(name, ns))
        return r.json if r.status == 200 else None

    def wait_for(self, path, name, predicate, timeout=30):
        """The object `name` under the list `path` once predicate(obj) holds (None when it
        is deleted), following a watch from a list."""
        deadline = time.monotonic() + timeout
        r = self.api.get(path, fieldSelector=f"metadata.name={name}")
        items = r.json["items"]
        obj = items[0] if items else None
        if predicate(obj):
            return obj
        w = self.api.watch(path, fieldSelector=f"metadata.name={name}",
                           resourceVersion=r.json["metadata"]["resourceVersion"])
        try:
            while time.monotonic() < deadline:
                try:
                    ev = w.next(timeout=max(0.1, deadline - time.monotonic()))
                except TimeoutError:
                    break
                if ev is None:
                    break
                obj = None if ev["type"] == "DELETED" else ev["object"]
                if predicate(obj):
                    return obj
        finally:
            w.close()
        self.fail(f"{path}/{name} never got there; last seen:\n{json.dumps(obj, indent=1)[:3000]}")

    def wait_pod(self, name, predicate, ns="default", timeout=30):
        return self.wait_for(self.pod_path(ns=ns), name, predicate, timeout)

    def wait_job(self, name, predicate, timeout=60):
        """The TrainingJob `name` of the default namespace once predicate(job) holds."""
        return self.wait_for(JOBS, name, predicate, timeout)


def phase(p):
    return (p or {}).get("status", {}).get("phase")


def container_state(p, i=0):
    statuses = (p or {}).get("status", {}).get("containerStatuses") or []
    return statuses[i] if len(statuses) > i else {}


def condition(obj, ctype):
    for c in (obj or {}).get("status", {}).get("conditions") or []:
        if c["type"] == ctype:
            return c.get("status")
    return None


def seen_uid(run_as_user):
    """What `id -u` prints in a pod of this runAsUser: that user as root; without root
    the pod's user namespace maps only this user (to 0), so runAsUser cannot be honoured
    (tests/kube/README.md, "Pods")."""
    return str(run_as_user) if os.geteuid() == 0 else "0"


def shell_pod(name, script, node="gw", restart="Never", grace=1, **spec):
    s = {"nodeName": node, "restartPolicy": restart, "terminationGracePeriodSeconds": grace,
         "containers": [{"name": "main", "image": "debian:12", "command": ["sh", "-c", script]}]}
    s.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": s}


def http_status(address, path):
    """The status of GET http://address/path, None when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def start_operator(kubeconfig, log_path, ready=True, timeout=20, extra=()):
    """An edgetrain-operator replica on the API at kubeconfig (SiteTestCase.operator_kubeconfig:
    as the chart's ServiceAccount, its Lease in the chart's namespace as the chart's
    Deployment says), every wait short (OPERATOR_FAST) and `extra` flags after, its log in
    log_path: (process, its HTTP address). With ready, it returns once /readyz says the
    caches are filled, which only a leader's are: a standby is started with ready=False."""
    # A flag of `extra` replaces OPERATOR_FAST's (a flag given twice is refused).
    replaced = {a.split("=", 1)[0] for a in extra if a.startswith("--")}
    fast = [a for i, a in enumerate(OPERATOR_FAST)
            if not (a.split("=", 1)[0] in replaced
                    or (i > 0 and OPERATOR_FAST[i - 1] in replaced and not a.startswith("--")))]
    with open(log_path, "w") as log:
        proc = subprocess.Popen([OPERATOR, "--kubeconfig", kubeconfig, "--http", "127.0.0.1:0", *fast,
                                 "--leader-election-namespace", chart.RELEASE_NAMESPACE,
                                 "--leader-election-id", chart.LEASE, *extra],
                                stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline()
    address = line.split()[1] if line.startswith("http ") else None
    if address and (not ready or wait_until(lambda: http_status(address, "/readyz") == 200, timeout, 0.05)):
        return proc, address
    stop_operator(proc)
    with open(log_path) as f:
        log = f.read()[-4000:]
    raise AssertionError(f"the operator said {line!r}" if not address else
                         f"the operator never became ready: {log}")


def stop_operator(proc, timeout=20, how=signal.SIGTERM):
    """Signal `how` (SIGTERM, as the kubelet stops it), then its exit code; killed, and
    an AssertionError, if it is still running after timeout seconds."""
    proc.send_signal(how)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"the operator did not stop within {timeout} s of {signal.Signals(how).name}")
    finally:
        proc.stdout.close()


def small_job(name, **spec):
    """A digits TrainingJob of one worker unless told otherwise, as short as a test wants:
    each keyword replaces that part of the spec, a dict merged into the default's, a
    None in it leaving that field out."""
    s = {"model": {"name": "mlp", "hidden": [32]}, "data": {"dataset": "digits", "batchSize": 32},
         "optimizer": {"learningRate": 0.003}, "evaluation": {"everyIterations": 20},
         "budget": {"wallClock": "1m", "targetAccuracy": 0.9},
         "template": {"resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}}}
    for key, value in spec.items():
        if isinstance(value, dict) and isinstance(s.get(key), dict):
            s[key] = {**s[key], **value}
        else:
            s[key] = value
    for part in s.values():  # None: leave the field out
        if isinstance(part, dict):
            for k in [k for k, v in part.items() if v is None]:
                del part[k]
    return {"apiVersion": "edgetrain.dev/v1alpha1", "kind": "TrainingJob",
            "metadata": {"name": name}, "spec": s}


def wall_clock_job(name, wall_clock, **spec):
    """small_job trained for its whole wall clock: no target accuracy, a slow learning rate
    and more epochs (100,000) than any test's wall clock holds, so it is still running
    whenever a test acts on it (on an idle machine 1,000 epochs of the digits ended
    before a test had seen the job Running), and ends at its budget (Succeeded,
    BudgetSpent) unless the test ends it first. Other keywords as small_job's."""
    parts = {"optimizer": {"learningRate": 0.0003},
             "budget": {"wallClock": wall_clock, "epochs": 100000, "targetAccuracy": None}}
    for key, value in spec.items():
        parts[key] = {**parts[key], **value} if isinstance(value, dict) and key in parts else value
    return small_job(name, **parts)
