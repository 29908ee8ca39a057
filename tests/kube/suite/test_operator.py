"""edgetrain-operator end to end, driven with kubectl as a user drives it: the CRD and a
TrainingJob applied to the edge site of examples/nodes/edge-site.yaml, the job placed on
exactly the nodes `edgetrain plan` names for that site, trained by real agents in real
pods to Succeeded with its accuracy and model in the status; a job the operator cannot
run Invalid and a job that does not fit Pending, both holding nothing; a waiting job
started once a node makes room; suspend and resume from the checkpoint on a shared
volume; and `kubectl delete` leaving nothing behind. Every wait of the operator is a
short flag here.

The operator runs as the chart's ServiceAccount with exactly the chart's roles, which
the stand-in enforces: a request it refuses fails the test that made it, and once every
test has run, a verb the chart grants that no request used fails the class."""

import base64
import calendar
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import chart
from emulated_site import (EDGE_SITE, SiteTestCase, condition, phase, small_job, start_operator, stop_operator,
                           wall_clock_job)
from harness import BIN, EDGETRAIN, EXAMPLE, OPERATOR, REPO_ROOT, find_kubectl, readme_commands, requires_built, wait_until

sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
import stopping  # noqa: E402  (how a run and all it started are stopped, and found)

KUBECTL = find_kubectl()

# What the example reaches: its target (0.9) holds on digits' test set.
ACCURACY_BAR = 0.9

# The operator killed at random points of its reconciles: how many trials and from
# which seed. One trial in make test; bench/operator-crashes runs 20.
CRASH_TRIALS = int(os.environ.get("EDGETRAIN_CRASH_TRIALS", "1"))
CRASH_SEED = int(os.environ.get("EDGETRAIN_CRASH_SEED", "1"))
# How long the API holds every request: longer than the operator's renew deadline
# (1500ms in these tests), so the leader stops leading and exits, and its
# Deployment would start it again. The issue's 30 s against client-go's default
# deadline of 10 s is the same case, scaled.
API_PAUSE_S = 3
# A node's link held at 0 (one worker's, then every worker's): for how long, and how
# many times. One trial of 6 s in make test; bench/dead-links holds them 30 s, 5 times.
DEAD_LINK_SECONDS = float(os.environ.get("EDGETRAIN_DEAD_LINK_SECONDS", "6"))
DEAD_LINK_TRIALS = int(os.environ.get("EDGETRAIN_DEAD_LINK_TRIALS", "1"))


def condition_of(job, ctype):
    for c in (job or {}).get("status", {}).get("conditions") or []:
        if c["type"] == ctype:
            return c
    return {}



class LeaseTimingsTest(unittest.TestCase):
    def test_lease_timings_that_let_two_replicas_lead_are_refused_as_it_starts(self):
        p = subprocess.run([OPERATOR, "--lease-duration=20s", "--renew-deadline=30s",
                            "--kubeconfig", "/nonexistent"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--lease-duration (20s) must be longer than --renew-deadline (30s)", p.stderr)
        # The Lease holds whole seconds, which standbys read.
        p = subprocess.run([OPERATOR, "--lease-duration=1500ms", "--renew-deadline=1200ms", "--retry-period=500ms",
                            "--kubeconfig", "/nonexistent"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--lease-duration (1.5s) must be whole seconds", p.stderr)
        p = subprocess.run([OPERATOR, "--lease-duration=1s", "--renew-deadline=950ms", "--retry-period=500ms",
                            "--kubeconfig", "/nonexistent"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("must be at least 100ms longer than --renew-deadline", p.stderr)

    def test_a_flag_it_cannot_read_is_a_usage_error(self):
        for args, says in ((["--bogus"], "--bogus"), (["--status-interval", "5"], "--status-interval"),
                           (["--leader-election-id", "Edge_Lease"],
                            "must be lower-case letters, digits, '-' and '.', at most 253 characters, "
                            "got \"Edge_Lease\"")):
            p = subprocess.run([OPERATOR, *args, "--kubeconfig", "/nonexistent"], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(says, p.stderr)

    def test_a_kubeconfig_it_cannot_read_is_the_inputs_to_mend(self):
        # exit 1 said "try again later" of a path mistyped (a new user's trial)
        p = subprocess.run([OPERATOR, "--kubeconfig", "/nonexistent"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--kubeconfig /nonexistent: cannot read /nonexistent", p.stderr)

class OperatorSiteTestCase(SiteTestCase):
    """An emulated site with the CRDs applied and the real operator running on it, as
    the chart's ServiceAccount; what its tests read of the jobs and pods."""

    operator_args = ()  # the class's own flags, after OPERATOR_FAST
    stop_with = signal.SIGTERM  # how the class's operator is stopped once its tests are done

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.kubectl.run("apply", "-f", os.path.join(REPO_ROOT, "crds"))
        cls.operator_log = os.path.join(cls.dir, "operator.log")
        cls.operator, cls.operator_http = start_operator(cls.operator_kubeconfig(), cls.operator_log,
                                                         extra=cls.operator_args)
        cls.addClassCleanup(cls._stop_operator)

    @classmethod
    def _stop_operator(cls):
        how = signal.Signals(cls.stop_with).name
        assert stop_operator(cls.operator, how=cls.stop_with) == 0, f"the operator exits 0 on {how}"
        # ... and hands the Lease over at once rather than leaving a standby to wait it out.
        with open(cls.operator_log) as f:
            assert "stopped; the Lease is released" in f.read(), f"on {how}: " + cls.logs()


    @classmethod
    def logs(cls):
        with open(cls.operator_log) as f:
            return f.read()[-4000:]


    def delete_when_done(self, *jobs):
        """kubectl delete of these TrainingJobs when the test ends, passed or failed, so
        that nothing of it is left to the next test."""
        self.addCleanup(self.kubectl.run, "delete", "tj", *jobs, "--ignore-not-found")


    def job_pods(self, name):
        pods = self.api.get("/api/v1/namespaces/default/pods",
                            labelSelector=f"edgetrain.dev/job={name}").json["items"]
        return {p["metadata"]["name"]: p for p in pods}

    def agent_logs(self, job, lines=40):
        """The last lines of each of the job's pods' logs, for a failure to say what its agents said."""
        said = []
        for pod in sorted(self.job_pods(job)):
            p = self.kubectl.run("logs", pod, f"--tail={lines}", ok=False)
            said.append(f"--- {pod}\n{p.stdout}{p.stderr}")
        return "\n".join(said)


    def log_until(self, pod, holds, timeout):
        """The pod's log (`kubectl logs`, and what kubectl said on stderr) once holds(log),
        read every 0.2 s; after timeout seconds, the last one read."""
        last = [""]

        def read():
            p = self.kubectl.run("logs", pod, ok=False)
            last[0] = p.stdout + p.stderr
            return holds(last[0])
        wait_until(read, timeout=timeout, interval=0.2)
        return last[0]

    def kill_agent(self, args, what):
        """SIGKILLs the one agent process whose command line holds `args` (as an
        out-of-memory kill would) and returns when, on the monotonic clock."""
        found = subprocess.run(["pgrep", "-f", "--", args], capture_output=True, text=True).stdout.split()
        if len(found) != 1:
            # Which agents there were, and the plan they ran: a stage left out
            # (the planner judging a split not to pay under load) reads here.
            agents = subprocess.run(["pgrep", "-af", "edgetrain-agent"], capture_output=True, text=True).stdout
            jobs = self.kubectl.run("get", "tj", "-o", "json", ok=False).stdout
            stages = [(j["metadata"]["name"], (j.get("status") or {}).get("pipeline", {}).get("stages"))
                      for j in json.loads(jobs or '{"items": []}').get("items", [])]
            self.fail(f"{what}: {found} (agents: {agents}; stages: {stages})")
        killed = time.monotonic()
        os.kill(int(found[0]), 9)
        return killed



@requires_built(OPERATOR)
class OperatorTest(OperatorSiteTestCase):
    profile = EDGE_SITE
    # As OpenShift's API server judges owner references: the objects the operator makes
    # block their job's deletion, which needs the chart's update on trainingjobs/finalizers
    # (every object made for a job was refused there without it: found in review).
    extra_args = ["--enable-admission-plugins", "OwnerReferencesPermissionEnforcement"]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ran = set()
        cls.addClassCleanup(cls._every_grant_was_used)

    def setUp(self):
        self.refused_before = chart.refused(chart.decisions(self.api))

    def tearDown(self):
        super().tearDown()
        type(self).ran.add(self._testMethodName)
        refused = [r for r in chart.refused(chart.decisions(self.api)) if r not in self.refused_before]
        self.assertEqual(refused, [], "the operator needs what the chart's roles do not grant")

    @classmethod
    def _every_grant_was_used(cls):
        """Once every test of the class has run (a selection of them proves nothing),
        each verb the chart's roles grant was used by an allowed request: the roles are
        no wider than the operator's requests."""
        if cls.ran != set(unittest.TestLoader().getTestCaseNames(cls)):
            return
        records = chart.decisions(cls.api)
        unused = chart.unused_grants(cls.operator_account.objects, records)
        print(f"\nrbac: {len(chart.grants(cls.operator_account.objects))} grants of the chart, "
              f"{sum(1 for d in records if d['allowed'])} distinct requests allowed, {len(unused)} grants unused")
        assert not unused, "the chart grants what no test's operator used:\n  " + "\n  ".join(unused)

    def metrics(self, address=None):
        with urllib.request.urlopen(f"http://{address or self.operator_http}/metrics", timeout=2) as r:
            return r.read().decode()

    def owned(self, name):
        """Everything the operator made for the job that still exists."""
        out = []
        for path in ("/api/v1/namespaces/default/pods", "/api/v1/namespaces/default/services",
                     "/api/v1/namespaces/default/configmaps"):
            items = self.api.get(path, labelSelector=f"edgetrain.dev/job={name}").json["items"]
            out += [f'{i["kind"] if "kind" in i else path.rsplit("/", 1)[1]}/{i["metadata"]["name"]}'
                    for i in items]
        return out

    def test_the_example_is_placed_as_edgetrain_plan_says_trained_and_reported(self):
        t0 = time.monotonic()
        plan = json.loads(subprocess.run([EDGETRAIN, "plan", EXAMPLE, "--nodes", self.profile_path,
                                          "--json"], capture_output=True, text=True, check=True).stdout)
        live = json.loads(subprocess.run([EDGETRAIN, "plan", EXAMPLE, "--kubeconfig", self.server.kubeconfig,
                                          "--json"], capture_output=True, text=True, check=True).stdout)
        self.assertEqual((live["coordinator"], live["workers"]), (plan["coordinator"], plan["workers"]),
                         "the live cluster's Nodes read as the profile does")
        self.kubectl.run("apply", "-f", EXAMPLE)
        self.delete_when_done("digits-team")
        running = self.wait_job("digits-team", lambda j: phase(j) in ("Running", "Succeeded", "Failed"))
        self.assertEqual(condition_of(running, "Placed")["status"], "True", running.get("status"))
        # Where the pods were bound, while they exist (cleanPodPolicy Running
        # removes workers still running when the job ends).
        pods = self.job_pods("digits-team")
        job = self.wait_job("digits-team", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=150)
        status = job["status"]
        self.assertEqual(status["phase"], "Succeeded", json.dumps(status, indent=1) + self.logs())
        self.assertEqual(condition_of(job, "Complete")["reason"], "TargetReached")
        self.assertGreaterEqual(status["model"]["accuracy"], ACCURACY_BAR)
        self.assertEqual(status["model"]["path"], "/models/digits-team/model.pt")
        self.assertGreaterEqual(status["progress"]["accuracy"], ACCURACY_BAR)
        self.assertEqual(status["observedGeneration"], job["metadata"]["generation"])

        # Exactly where `edgetrain plan` put them.
        self.assertEqual(pods["digits-team-coordinator"]["spec"]["nodeName"], plan["coordinator"])
        for rank, node in enumerate(plan["workers"]):
            self.assertEqual(pods[f"digits-team-worker-{rank}"]["spec"]["nodeName"], node)
        self.assertEqual(phase(self.job_pods("digits-team")["digits-team-coordinator"]), "Succeeded")
        for p in pods.values():
            sc = p["spec"]["containers"][0]["securityContext"]
            self.assertTrue(sc["readOnlyRootFilesystem"])
            self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
            self.assertTrue(p["spec"]["securityContext"]["runAsNonRoot"])
            self.assertEqual(p["metadata"]["ownerReferences"][0]["kind"], "TrainingJob")
        self.assertEqual({w["name"]: w["node"] for w in status["workers"]},
                         {n: p["spec"]["nodeName"] for n, p in pods.items()})

        table = self.kubectl.run("get", "tj", "digits-team").stdout
        self.assertRegex(table, r"digits-team\s+Succeeded\s+TargetReached\s+dataParallel\s+2\s+0\.9")
        self.assertEqual(status["reason"], "TargetReached")
        story = self.kubectl.run("describe", "tj", "digits-team").stdout
        for reason in ("Placed", "Training", "TargetReached"):
            self.assertRegex(story, rf"Normal\s+{reason}\s", story)
        metrics = self.metrics()
        self.assertRegex(metrics, r'edgetrain_operator_placements_total\{result="placed"\} [1-9]')
        self.assertRegex(metrics, r'edgetrain_operator_jobs\{phase="Succeeded"\} [1-9]')
        self.assertIn("edgetrain_operator_reconcile_duration_seconds_bucket", metrics)
        self.assertIn("job=default/digits-team reason=Placed", self.logs())

        self.kubectl.run("delete", "tj", "digits-team")
        wait_until(lambda: not self.owned("digits-team"), timeout=30, interval=0.1)
        self.assertEqual(self.owned("digits-team"), [], "kubectl delete leaves no pod, Service or ConfigMap")
        print(f"\noperator: applied to Succeeded in {time.monotonic() - t0:.1f} s, accuracy "
              f"{status['model']['accuracy']:.3f}, coordinator on {plan['coordinator']}, "
              f"workers on {', '.join(plan['workers'])}")

    def test_a_job_the_operator_cannot_run_is_invalid_naming_the_field_and_makes_nothing(self):
        # Passes the CRD's schema and rules; a model written among the files the
        # operator mounts in its pods (/data) is for edgetrain run only.
        self.delete_when_done("piped", "nowhere")
        self.apply(small_job("piped", parallelism={"mode": "pipeline", "workers": 2}, output={"path": "/data/out"}))
        job = self.wait_job("piped", lambda j: condition_of(j, "Invalid").get("status") == "True")
        invalid = condition_of(job, "Invalid")
        # The user's to mend, not a limit of this version (NotSupported).
        self.assertEqual(invalid["reason"], "InvalidSpec")
        self.assertIn("spec.output.path", invalid["message"])
        self.assertEqual(phase(job), "Failed")
        # A selector no node matches.
        self.apply(small_job("nowhere", placement={"nodeSelector": {"edgetrain.dev/site": "moon"}}))
        job = self.wait_job("nowhere", lambda j: condition_of(j, "Invalid").get("status") == "True")
        self.assertEqual(condition_of(job, "Invalid")["reason"], "NoMatchingNode")
        self.assertEqual(phase(job), "Pending")
        time.sleep(1)  # a few reconciles later, still nothing
        self.assertEqual(self.owned("piped") + self.owned("nowhere"), [])
        self.assertRegex(self.kubectl.run("describe", "tj", "piped").stdout, r"Warning\s+InvalidSpec\s")
        # Its failure is an event to alert on, by reason (EdgetrainJobFailed).
        self.assertRegex(self.metrics(), r'edgetrain_operator_job_failures_total\{reason="InvalidSpec"\} [1-9]')

    def test_a_secret_or_service_under_a_jobs_names_that_is_anothers_is_left_alone_and_the_job_fails(self):
        # A user's ingress certificate named as a job's agents' Secret, and a
        # Service named as a job: the operator wrote over the first, owned it and
        # deleted it with the job (a security review), and used the second.
        self.delete_when_done("clash", "shop")
        self.addCleanup(self.kubectl.run, "delete", "secret", "clash-tls", "--ignore-not-found")
        self.addCleanup(self.kubectl.run, "delete", "service", "shop", "--ignore-not-found")
        self.kubectl.run("create", "secret", "generic", "clash-tls", "--from-literal=note=keep me")
        self.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop"},
                    "spec": {"ports": [{"port": 80}]}})
        self.apply(small_job("clash", parallelism={"workers": 2}), small_job("shop", parallelism={"workers": 2}))
        for name, kind, taken in (("clash", "Secret", "clash-tls"), ("shop", "Service", "shop")):
            job = self.wait_job(name, lambda j: condition_of(j, "Failed").get("status") == "True")
            failed = condition_of(job, "Failed")
            self.assertEqual(failed["reason"], "NameTaken", failed)
            self.assertIn(f"{kind} {taken} is already in namespace default and is not a TrainingJob {name}'s",
                          failed["message"])
            self.assertRegex(self.kubectl.run("describe", "tj", name).stdout, r"Warning\s+NameTaken\s")
            self.assertEqual([o for o in self.owned(name) if o.lower().startswith("pod")], [], "no pod made")
        self.assertRegex(self.metrics(), r'edgetrain_operator_job_failures_total\{reason="NameTaken"\} [2-9]')
        secret = self.api.get("/api/v1/namespaces/default/secrets/clash-tls").json
        self.assertEqual(base64.b64decode(secret["data"]["note"]).decode(), "keep me")
        self.assertNotIn("ownerReferences", secret["metadata"])
        self.kubectl.run("delete", "tj", "clash", "shop")
        self.wait_job("clash", lambda j: j is None)
        self.wait_job("shop", lambda j: j is None)
        self.assertEqual(self.api.get("/api/v1/namespaces/default/secrets/clash-tls").status, 200,
                         "still there once the job is gone")
        self.assertEqual(self.api.get("/api/v1/namespaces/default/services/shop").status, 200)

    def test_your_own_module_and_data_on_a_volume_train_and_a_module_that_cannot_is_refused(self):
        """A user's TorchScript module and CSV files on a volume (a PersistentVolume over
        a folder that holds them, as an NFS export would): an agent loads the module in a
        pod of its own first, its size goes to status.modelCheck, and the team trains on
        the files at /data. A file in a ConfigMap (kubectl create configmap --from-file)
        that is no module is refused before anything is placed, naming the field."""
        work = os.path.join(self.dir, "own-files")
        os.makedirs(work, exist_ok=True)
        tools = os.path.join(REPO_ROOT, "examples", "own-model")
        subprocess.run(["/usr/bin/python3", os.path.join(tools, "export_model.py"), os.path.join(work, "model.pt"),
                        "--input-shape", "64", "--hidden", "32", "--classes", "10"], check=True, capture_output=True)
        subprocess.run(["/usr/bin/python3", os.path.join(tools, "digits_as.py"), "csv", work],
                       check=True, capture_output=True)
        with open(os.path.join(work, "broken.pt"), "w") as f:
            f.write("not a model\n")
        self.apply({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "own-files"},
                    "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadOnlyMany"],
                             "storageClassName": "", "hostPath": {"path": work}}},
                   {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "own-files"},
                    "spec": {"accessModes": ["ReadOnlyMany"], "storageClassName": "", "volumeName": "own-files",
                             "resources": {"requests": {"storage": "1Gi"}}}})
        self.kubectl.run("create", "configmap", "broken-net", f"--from-file=net.pt={os.path.join(work, 'broken.pt')}")
        self.addCleanup(self.kubectl.run, "delete", "pv", "own-files", "--wait=false", "--ignore-not-found")
        self.addCleanup(self.kubectl.run, "delete", "pvc", "own-files", "--wait=false", "--ignore-not-found")
        self.addCleanup(self.kubectl.run, "delete", "configmap", "broken-net", "--ignore-not-found")
        self.delete_when_done("own", "broken", "typo")
        own_model = {"name": None, "hidden": None, "torchscript": {"path": "model.pt"}}
        self.apply(small_job("own", model=own_model, parallelism={"workers": 2},
                             data={"dataset": None, "format": "csv", "inputShape": [64], "classes": 10,
                                   "train": {"path": "train.csv"}, "test": {"path": "test.csv"},
                                   "volume": {"persistentVolumeClaim": {"claimName": "own-files"}}}),
                   small_job("broken", model={"name": None, "hidden": None,
                                              "torchscript": {"path": "net.pt", "configMap": "broken-net"}}))

        broken = self.wait_job("broken", lambda j: condition_of(j, "Invalid").get("status") == "True", timeout=60)
        invalid = condition_of(broken, "Invalid")
        self.assertEqual(invalid["reason"], "InvalidModel", invalid)
        self.assertTrue(invalid["message"].startswith(
            "spec.model.torchscript.path: /model/net.pt is not a TorchScript module"), invalid["message"])
        self.assertEqual(phase(broken), "Failed")
        wait_until(lambda: not self.owned("broken"), timeout=30, interval=0.2)
        self.assertRegex(self.kubectl.run("describe", "tj", "broken").stdout, r"Warning\s+InvalidModel\s")

        # A ConfigMap's name mistyped: its check pod waits to mount it, said in
        # the job's status and a Warning, not only in the pod's events (a user's
        # trial read "Pending (ContainerCreating)" for 2.5 minutes).
        self.apply(small_job("typo", model={"name": None, "hidden": None,
                                            "torchscript": {"path": "net.pt", "configMap": "brokn-net"}}))
        missing = "spec.model.torchscript.configMap's ConfigMap brokn-net does not exist in namespace default"
        typo = self.wait_job("typo", lambda j: missing in condition_of(j, "Placed").get("message", ""), timeout=30)
        self.assertEqual(phase(typo), "Pending")
        self.assertRegex(self.kubectl.run("describe", "tj", "typo").stdout,
                         r"Warning\s+FilesMissing\s+.*pod typo-model-check waits to mount the job's files")
        self.kubectl.run("delete", "tj", "typo")

        job = self.wait_job("own", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=150)
        status = job["status"]
        self.assertEqual(status["phase"], "Succeeded", json.dumps(status, indent=1) + self.logs())
        # Flatten, Linear(64, 32), ReLU, Linear(32, 10): 2,410 parameters, the agent's count.
        self.assertEqual(status["modelCheck"]["module"], "/data/model.pt")
        self.assertEqual(status["modelCheck"]["parameters"], 64 * 32 + 32 + 32 * 10 + 10)
        self.assertGreater(status["modelCheck"]["multiplyAdds"], 0)
        self.assertGreaterEqual(status["model"]["accuracy"], ACCURACY_BAR)
        story = self.kubectl.run("describe", "tj", "own").stdout
        self.assertRegex(story, r"Normal\s+ModelChecked\s+.*the module /data/model.pt trains: 2410 parameters")
        self.assertNotIn("own-model-check", self.job_pods("own"), "the check's pod goes once it is read")
        print(f"\nown model: checked ({status['modelCheck']['multiplyAdds']:,} multiply-adds a sample) and "
              f"trained to {status['model']['accuracy']:.3f} from files on a volume")

    def test_a_job_that_does_not_fit_waits_holding_nothing_and_starts_when_a_node_makes_room(self):
        # Its rank among waiting jobs comes from a PriorityClass; it writes its model to
        # a claim of K3s's local-path class, which is provisioned where its first pod is
        # scheduled - and the operator's pods are bound, not scheduled, so the operator
        # names the coordinator's node on the claim.
        self.addCleanup(self.kubectl.run, "delete", "pvc", "waiter-out", "--wait=false", "--ignore-not-found")
        self.addCleanup(self.kubectl.run, "delete", "priorityclass", "edge-urgent", "--ignore-not-found")
        # Before the class is made, `edgetrain plan` refuses the job as the operator
        # does (it placed a team the operator kept Pending: a new user's trial).
        manifest = os.path.join(self.dir, "waiter.json")
        with open(manifest, "w") as f:
            json.dump(small_job("waiter", placement={"priorityClassName": "edge-urgent"}), f)
        planned = subprocess.run([EDGETRAIN, "plan", manifest, "--kubeconfig", self.server.kubeconfig],
                                 capture_output=True, text=True)
        self.assertEqual(planned.returncode, 2, planned.stderr)
        self.assertIn("no PriorityClass named edge-urgent exists", planned.stderr)
        self.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "edge-urgent"},
                    "value": 1000},
                   {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "waiter-out"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local-path",
                             "resources": {"requests": {"storage": "1Gi"}}}})
        self.kubectl.run("cordon", "robot-3")
        self.delete_when_done("waiter")
        try:
            self.apply(small_job("waiter", placement={"nodeSelector": {"kubernetes.io/hostname": "robot-3"},
                                                      "priorityClassName": "edge-urgent"},
                                 output={"path": "/models/waiter",
                                         "volume": {"persistentVolumeClaim": {"claimName": "waiter-out"}}}))
            job = self.wait_job("waiter", lambda j: condition_of(j, "Placed").get("reason") == "Unschedulable")
            self.assertEqual(phase(job), "Pending")
            self.assertIn("cordoned", condition_of(job, "Placed")["message"])
            time.sleep(1)
            self.assertEqual(self.owned("waiter"), [], "a waiting job holds nothing")
        finally:
            self.kubectl.run("uncordon", "robot-3")
        job = self.wait_job("waiter", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=120)
        self.assertEqual(phase(job), "Succeeded", json.dumps(job["status"], indent=1) + self.logs())
        self.assertEqual(self.job_pods("waiter")["waiter-coordinator"]["spec"]["nodeName"], "robot-3")
        claim = self.api.get("/api/v1/namespaces/default/persistentvolumeclaims/waiter-out").json
        self.assertEqual((claim["status"]["phase"], claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"]),
                         ("Bound", "robot-3"))

    def test_a_lost_worker_is_replaced_alone_and_the_team_trains_on(self):
        # Long enough to lose a node under it and see the team whole again; it is
        # deleted then, not trained to the end.
        self.delete_when_done("mended")
        self.apply(wall_clock_job("mended", "2m", parallelism={"workers": 2},
                                  faultTolerance={"nodeLossGrace": "2s"}))
        self.wait_job("mended", lambda j: phase(j) == "Running", timeout=60)
        # Running says the pods' containers started, not that the coordinator has read
        # its plan: a node lost before then (a loaded machine starts an agent slowly)
        # would have it start on generation 2, with nothing left to adopt. The team
        # formed on generation 1 first.
        formed = self.log_until("mended-coordinator", lambda log: "the team starts with 2 of 2" in log, timeout=60)
        self.assertIn("the team starts with 2 of 2", formed)
        victim = self.job_pods("mended")["mended-worker-1"]["spec"]["nodeName"]
        self.assertNotEqual(victim, "gateway", "the coordinator's node is not the one to lose here")
        t_lost = time.monotonic()
        self.assertEqual(self.api.post(f"/_standin/nodes/{victim}/kill", None).status, 200)
        try:
            self.wait_job("mended", lambda j: phase(j) == "Recovering", timeout=30)
            t_recovering = time.monotonic()
            job = self.wait_job("mended", lambda j: phase(j) == "Running"
                                and (j["status"].get("recoveries") or 0) >= 1, timeout=60)
            t_whole = time.monotonic()
            # The coordinator adopts the new plan and takes the replacement in;
            # the survivor's stream is never broken.
            def replacement_joined(log):
                adopted = log.find("adopted plan generation 2")
                return adopted >= 0 and "worker 1 joined" in log[adopted:]
            log = self.log_until("mended-coordinator", replacement_joined, timeout=60)
            t_joined = time.monotonic()
            self.assertEqual(job["status"]["recoveries"], 1)
            self.assertIn("adopted plan generation 2", log)
            self.assertIn("worker 1 joined", log[log.find("adopted plan generation 2"):],
                          "the replacement joined once the new plan was adopted")
            self.assertEqual(log.count("worker 0 joined"), 1, "the survivor never reconnected")
            self.assertNotIn("worker 0 fenced out", log)
            pods = self.job_pods("mended")
            self.assertIn("mended-worker-1-g2", pods, "the replacement has a name of its own")
            self.assertNotEqual(pods["mended-worker-1-g2"]["spec"]["nodeName"], victim)
            self.assertRegex(self.kubectl.run("describe", "tj", "mended").stdout, r"Warning\s+WorkerLost\s")
            # Suspended and resumed while the node is still dead: the lost worker's
            # pod, still being deleted there, ends only when its kubelet is back, and
            # holds nothing. The job is placed past it; it had waited on it for good,
            # Pending PodsEnding (a new user's trial).
            self.assertIn("deletionTimestamp", pods["mended-worker-1"]["metadata"], "stranded on the dead node")
            self.kubectl.run("patch", "tj", "mended", "--type=merge", "-p", '{"spec": {"suspend": true}}')
            self.wait_job("mended", lambda j: phase(j) == "Suspended", timeout=30)
            self.kubectl.run("patch", "tj", "mended", "--type=merge", "-p", '{"spec": {"suspend": false}}')
            resumed = self.wait_job("mended", lambda j: phase(j) == "Running", timeout=60)
            pods = self.job_pods("mended")
            self.assertIn("mended-worker-1", pods, "the stranded pod is left as it is")
            self.assertTrue({"mended-worker-0-g3", "mended-worker-1-g3"} <= set(pods),
                            f"the new plan's workers named after a later generation: {sorted(pods)}")
            self.assertIn("not waiting for mended-worker-1: being deleted on a lost node", self.logs())
            stalled = [c for c in resumed["status"]["conditions"] if c["type"] == "Stalled"]
            self.assertFalse(stalled and stalled[0]["status"] == "True", resumed["status"])
        finally:
            self.api.post(f"/_standin/nodes/{victim}/revive", None)
        print(f"\nrecovery: {victim} killed; Recovering after {t_recovering - t_lost:.1f} s "
              f"(nodeLossGrace 2s), the replacement running at {t_whole - t_lost:.1f} s and in the team "
              f"by {t_joined - t_lost:.1f} s")

    def test_a_coordinator_whose_node_is_lost_or_leaving_is_placed_anew_and_trains_on_from_its_workers(self):
        # The coordinator's node dies under a running team of two: past nodeLossGrace
        # the operator places the coordinator anew on another node (a pod of its own,
        # reseated-coordinator-g2), and it trains on from the copy of the model its
        # workers hold rather than from the start: its output folder (an emptyDir)
        # died with the node. Then its new node says it is leaving, and it moves again
        # before the node goes, which is no recovery. The workers never restart.
        self.delete_when_done("reseated")
        # Three CPUs a pod: the gateway (4) holds the coordinator alone.
        self.apply(wall_clock_job("reseated", "3m", parallelism={"workers": 2},
                                  faultTolerance={"nodeLossGrace": "2s"},
                                  template={"resources": {"requests": {"cpu": "3", "memory": "256Mi"}}}))
        self.wait_job("reseated", lambda j: phase(j) == "Running", timeout=60)
        formed = self.log_until("reseated-coordinator", lambda log: "the team starts with 2 of 2" in log, timeout=60)
        self.assertIn("the team starts with 2 of 2", formed)
        hub = self.job_pods("reseated")["reseated-coordinator"]["spec"]["nodeName"]
        self.assertEqual(hub, "gateway")

        def iteration(j):
            return j["status"].get("progress", {}).get("iteration", 0)
        shown = iteration(self.wait_job("reseated", lambda j: iteration(j) > 50))
        t_lost = time.monotonic()
        self.assertEqual(self.api.post(f"/_standin/nodes/{hub}/kill", None).status, 200)
        # Dead for the rest of the test: the move below goes elsewhere.
        self.addCleanup(self.api.post, f"/_standin/nodes/{hub}/revive", None)
        self.wait_job("reseated", lambda j: phase(j) == "Recovering", timeout=30)
        t_recovering = time.monotonic()
        self.wait_job("reseated", lambda j: phase(j) == "Running" and (j["status"].get("recoveries") or 0) == 1,
                      timeout=60)
        log = self.log_until("reseated-coordinator-g2", lambda log: "training on from worker" in log, timeout=60)
        t_trained_on = time.monotonic()
        self.assertIn("training on from worker", log)
        taken = int(log[log.index("training on from worker"):].split("at iteration ")[1].split()[0])
        self.assertGreaterEqual(taken, shown, "trained on from where the team was, not from the start: " + log[-1500:])
        seat = self.job_pods("reseated")["reseated-coordinator-g2"]["spec"]["nodeName"]
        self.assertNotEqual(seat, hub)
        self.assertRegex(self.kubectl.run("describe", "tj", "reseated").stdout, r"Warning\s+CoordinatorLost\s")
        lost_s = t_trained_on - t_lost

        # Its workers' samples go on from theirs too: they add up to the job's
        # (they had counted only what the new coordinator heard: a user's trial).
        job = self.wait_job("reseated", lambda j: iteration(j) > taken)
        trained = sum(w.get("samples", 0) for w in job["status"]["workers"] if w.get("role") == "worker")
        self.assertEqual(trained, job["status"]["progress"]["samples"], json.dumps(job["status"], indent=1))

        # Warned: its new node is leaving. It moves first, and that is no recovery.
        before = iteration(self.wait_job("reseated", lambda j: iteration(j) > taken))
        t_warned = time.monotonic()
        self.kubectl.run("annotate", "node", seat, "edgetrain.dev/leaving=battery")
        try:
            log = self.log_until("reseated-coordinator-g3", lambda log: "training on from worker" in log, timeout=60)
            t_moved = time.monotonic()
            job = self.wait_job("reseated", lambda j: phase(j) == "Running" and iteration(j) > before, timeout=60)
        except AssertionError:
            for name, pod in self.job_pods("reseated").items():
                p = self.kubectl.run("logs", name, ok=False)
                print(f"\n== {name} on {pod['spec'].get('nodeName')}: {json.dumps(pod.get('status', {}))[:1500]}"
                      f"\n{p.stdout[-2000:]}{p.stderr[-300:]}")
            # A kubelet's thread that died says why there.
            print(f"\n== the stand-in's stderr ends:\n{self.server.log()[-3000:]}")
            raise
        finally:
            self.kubectl.run("annotate", "node", seat, "edgetrain.dev/leaving-")
        self.assertEqual(job["status"]["recoveries"], 1, "a move ahead of a warning is not a recovery")
        self.assertIn("training on from worker", log)
        self.assertNotIn(self.job_pods("reseated")["reseated-coordinator-g3"]["spec"]["nodeName"], (seat, hub))
        self.assertRegex(self.kubectl.run("describe", "tj", "reseated").stdout, r"Normal\s+CoordinatorMoved\s")
        moved_from = int(log[log.index("training on from worker"):].split("at iteration ")[1].split()[0])
        self.assertGreaterEqual(moved_from, before)
        # The job's clock went on through both moves, the first's gap included:
        # a budget that started over with each coordinator ran 111 s of 100.
        into_job = int(log.split(" s into the job")[0].rsplit(", ", 1)[1])
        self.assertGreaterEqual(into_job, int(t_warned - t_lost) - 1, log[-1500:])
        for name, pod in self.job_pods("reseated").items():
            if "worker" in name:
                self.assertEqual(pod["status"]["containerStatuses"][0]["restartCount"], 0, f"{name} restarted")
        print(f"\ncoordinator lost: {hub} killed at iteration {shown}; Recovering after {t_recovering - t_lost:.1f} s "
              f"(nodeLossGrace 2s), trained on from a worker's copy at iteration {taken}, {lost_s:.1f} s after the "
              f"kill; moved off {seat} ahead of its leaving at iteration {before}, trained on from {moved_from}, "
              f"{t_moved - t_warned:.1f} s after the warning")

    def test_a_killed_coordinator_restarts_in_its_pod_and_resumes_from_its_checkpoint(self):
        # The coordinator's process dies (SIGKILL, as an OOM kill would have it): its
        # pod (restartPolicy OnFailure) restarts it on its node, it resumes from the
        # checkpoint in its output folder (an emptyDir outlives its container), and the
        # workers reconnect without a restart of theirs. How long that takes is printed.
        self.delete_when_done("crashed")
        self.apply(wall_clock_job("crashed", "2m", parallelism={"workers": 2}, faultTolerance={"checkpointEvery": 20}))
        before = self.wait_job("crashed", lambda j: (j or {}).get("status", {}).get("progress", {})
                               .get("iteration", 0) >= 60, timeout=60)
        t_killed = self.kill_agent("--role=coordinator --job=crashed ", "the coordinator's process")
        self.wait_pod("crashed-coordinator", lambda p: p is not None and phase(p) == "Running"
                      and p["status"]["containerStatuses"][0]["restartCount"] >= 1, timeout=60)
        t_restarted = time.monotonic()
        log = self.log_until("crashed-coordinator", lambda log: "resum" in log, timeout=60)
        resumed = next((line for line in log.splitlines() if "resum" in line), None)
        self.assertIsNotNone(resumed, "the restarted coordinator resumes from its checkpoint: " + log[-2000:])
        # Trained past where the status last saw it before the loss.
        seen = before["status"]["progress"]["iteration"]
        job = self.wait_job("crashed", lambda j: phase(j) == "Running"
                            and j["status"]["progress"]["iteration"] > seen + 20, timeout=60)
        t_trains = time.monotonic()
        self.assertFalse(job["status"].get("recoveries"), "a coordinator restarted in its pod is not a recovery")
        pods = self.job_pods("crashed")
        for rank in (0, 1):
            self.assertEqual(pods[f"crashed-worker-{rank}"]["status"]["containerStatuses"][0]["restartCount"], 0,
                             f"worker {rank} reconnected without a restart")
        print(f"\ncoordinator lost: restarted in its pod {t_restarted - t_killed:.1f} s after SIGKILL, "
              f"training again by {t_trains - t_killed:.1f} s ({resumed.strip()})")

    def test_a_teams_agents_talk_over_mutual_tls_and_train_across_a_certificate_rotation(self):
        # The suite's operator gives a team's certificate 24 s and renews it 16 s in
        # (OPERATOR_FAST). The agents mount Secret NAME-tls, never NAME-ca with the
        # authority's key; the new certificate reaches the running pods, whose streams
        # stay open; and a worker restarted once the first certificate has expired is
        # let in with what its volume holds now.
        self.delete_when_done("renewed")
        self.apply(wall_clock_job("renewed", "2m", parallelism={"workers": 2}))
        job = self.wait_job("renewed", lambda j: phase(j) == "Running"
                            and ((j or {}).get("status") or {}).get("credentials"), timeout=60)
        first = job["status"]["credentials"]
        self.assertEqual(first["secretName"], "renewed-tls")
        secrets = "/api/v1/namespaces/default/secrets"
        issued = self.api.get(f"{secrets}/renewed-tls").json
        authority = self.api.get(f"{secrets}/renewed-ca").json
        self.assertEqual(issued["type"], "kubernetes.io/tls")
        for pod in self.job_pods("renewed").values():
            mounted = {v["secret"]["secretName"] for v in pod["spec"]["volumes"] if "secret" in v}
            self.assertEqual(mounted, {"renewed-tls"}, pod["metadata"]["name"])
            self.assertIn("--tls-dir=/var/run/secrets/edgetrain.dev/tls", pod["spec"]["containers"][0]["args"])
        formed = self.log_until("renewed-coordinator", lambda log: "the team starts with 2 of 2" in log, timeout=60)
        self.assertIn("the team starts with 2 of 2", formed)
        job = self.wait_job("renewed", lambda j: j["status"]["credentials"]["notAfter"] != first["notAfter"],
                            timeout=40)
        rotated = self.api.get(f"{secrets}/renewed-tls").json
        self.assertNotEqual(rotated["data"]["tls.crt"], issued["data"]["tls.crt"])
        self.assertEqual(rotated["data"]["ca.crt"], issued["data"]["ca.crt"], "the same authority")
        describe = self.kubectl.run("describe", "tj", "renewed").stdout
        self.assertRegex(describe, r"Normal\s+CredentialsIssued\s")
        self.assertRegex(describe, r"Normal\s+CertificateRotated\s")
        # Past the first certificate's end: worker 1's process dies and its pod starts
        # it again, with the files its volume has now.
        first_end = calendar.timegm(time.strptime(first["notAfter"], "%Y-%m-%dT%H:%M:%SZ"))
        time.sleep(max(0.0, first_end + 1 - time.time()))
        self.kill_agent("--role=worker --job=renewed --rank=1 ", "worker 1's process")
        self.wait_pod("renewed-worker-1", lambda p: p is not None and phase(p) == "Running"
                      and p["status"]["containerStatuses"][0]["restartCount"] >= 1, timeout=60)
        log = self.log_until("renewed-coordinator", lambda log: log.count("worker 1 joined") >= 2, timeout=60)
        self.assertEqual(log.count("worker 1 joined"), 2, "the restarted worker was let in: " + log[-2000:])
        self.assertEqual(log.count("worker 0 joined"), 1, "worker 0's stream outlived the rotation")
        self.assertNotIn("refused a connection", log)
        # No key material anywhere a person or a scraper reads: the job's status and
        # events, every agent's log, the operator's log and metrics.
        keys = [base64.b64decode(s["data"][k]).decode() for s, k in
                ((issued, "tls.key"), (rotated, "tls.key"), (authority, "ca.key"))]
        bodies = [line for key in keys for line in key.splitlines() if line and not line.startswith("-----")]
        self.assertTrue(bodies)
        with open(self.operator_log) as f:
            operator_log = f.read()
        outputs = {"status": json.dumps(self.api.get("/apis/edgetrain.dev/v1alpha1/namespaces/default/trainingjobs/"
                                                     "renewed").json),
                   "events": self.kubectl.run("get", "events", "-o", "json").stdout,
                   "operator log": operator_log,
                   "operator metrics": self.metrics()}
        for name in self.job_pods("renewed"):
            outputs[f"{name} log"] = self.kubectl.run("logs", name, ok=False).stdout
        for what, text in outputs.items():
            for body in bodies:
                self.assertNotIn(body, text, f"key material in the {what}")
            self.assertNotIn("PRIVATE KEY", text, f"a private key in the {what}")

    @unittest.skipUnless(os.geteuid() == 0, "a link held at 0 needs the kernel's links (root)")
    def test_a_link_held_at_zero_degrades_the_job_and_every_link_at_zero_stalls_it_until_they_are_back(self):
        # A deadline team of two on the edge site. First one worker's node link is held
        # at 0 (its trace times 0): the team trains on without it, the job says
        # BandwidthDegraded (LinkDown, past the operator's --link-down-after of 2 s),
        # and once the link is back the worker is in the team again and the condition
        # clears. Then every worker's link is held at 0: nobody is left in the team, it
        # stops stepping, the job says Stalled (the operator's --stalled-after of 2 s)
        # naming the workers it waits on, and it trains on once they are back. No pod
        # restarts.
        hold_s = DEAD_LINK_SECONDS
        self.delete_when_done("faded")
        # Long enough for every trial; deleted once they are done, not trained to the end.
        # Three CPUs a pod: the gateway (4, wired) has room for the coordinator and no
        # worker, so every worker's traffic crosses its own node's link.
        self.apply(wall_clock_job("faded", f"{int(DEAD_LINK_TRIALS * 2 * (hold_s + 40) + 60)}s",
                                  parallelism={"workers": 2},
                                  template={"resources": {"requests": {"cpu": "3", "memory": "256Mi"}}}))
        self.wait_job("faded", lambda j: phase(j) == "Running", timeout=60)
        formed = self.log_until("faded-coordinator", lambda log: "the team starts with 2 of 2" in log, timeout=60)
        self.assertIn("the team starts with 2 of 2", formed)
        pods = self.job_pods("faded")
        hub = pods["faded-coordinator"]["spec"]["nodeName"]
        nodes = [pods[f"faded-worker-{r}"]["spec"]["nodeName"] for r in (0, 1)]
        self.assertNotIn(hub, nodes, "each worker's traffic crosses its own node's link")
        trials = []
        for _ in range(DEAD_LINK_TRIALS):
            one = self.hold_links_at_zero("faded", {1: nodes[1]}, hold_s, "BandwidthDegraded", "LinkDown",
                                          "worker 1 silent for")
            self.assertGreater(one["iterations_held"], 0, "the team trained on without the worker whose link was down")
            every = self.hold_links_at_zero("faded", dict(enumerate(nodes)), hold_s, "Stalled", "WaitingOnLinks",
                                            "the team waits on worker 0 (out of the team")
            trials.append({"one": one, "every": every})
        for name, pod in self.job_pods("faded").items():
            self.assertEqual(pod["status"]["containerStatuses"][0]["restartCount"], 0, f"{name} restarted")
        print("\ndead links: " + json.dumps({"hold_s": hold_s, "nodes": nodes, "trials": trials}))

    def hold_links_at_zero(self, job, workers, hold_s, ctype, reason, says):
        """Holds the links of `workers`' nodes ({rank: node}) at 0 for hold_s seconds,
        requiring the job's condition `ctype` True with `reason` and saying `says`
        meanwhile, and saying it no more once they are back, with the job training on
        (its iteration past where it was when the links came back) and each of those
        workers back in the team (the coordinator says so: the team may train on with
        the first one back before the others are). Returns when each happened, seconds
        after the cut or the restore, how long the links were down, and how many
        iterations the team trained meanwhile."""
        nodes = list(workers.values())
        coordinator = f"{job}-coordinator"

        def returns(log):
            # Back on the stream it had, or (its stream broken meanwhile) joined anew.
            return {r: log.count(f"worker {r} is back") + log.count(f"worker {r} joined") for r in workers}

        def saying(j):
            c = condition_of(j, ctype)
            return c.get("status") == "True" and c.get("reason") == reason and says in c.get("message", "")

        def iteration(j):
            return j["status"].get("progress", {}).get("iteration", 0)
        # Training, and nothing said of an earlier hold.
        self.wait_job(job, lambda j: iteration(j) > 0 and not saying(j), timeout=60)
        returned = returns(self.kubectl.run("logs", coordinator).stdout)
        # Read again just before the cut: the team trained on while the log was read.
        before = self.wait_job(job, lambda j: True)
        t_cut = time.monotonic()
        for node in nodes:
            self.assertEqual(self.api.post(f"/_standin/nodes/{node}/link", None, scale="0").status, 200)
        try:
            down = self.wait_job(job, saying, timeout=hold_s + 30)
            t_said = time.monotonic()
            self.assertEqual(phase(down), "Running", "a link down is not a node lost")
            time.sleep(max(0.0, t_cut + hold_s - time.monotonic()))
            held = self.wait_job(job, lambda j: True)
        finally:
            for node in nodes:
                self.api.post(f"/_standin/nodes/{node}/link", None, scale="1")
        t_back = time.monotonic()
        self.wait_job(job, lambda j: not saying(j) and iteration(j) > iteration(held), timeout=60)
        log = self.log_until(coordinator, lambda log: all(n > returned[r] for r, n in returns(log).items()),
                             timeout=60)
        for r, n in returns(log).items():
            self.assertGreater(n, returned[r], f"worker {r} came back into the team after the hold: " + log[-2000:])
        # held_s is the hold as it was: longer than hold_s when the job took longer than that to say so.
        return {"said_s": round(t_said - t_cut, 1), "cleared_s": round(time.monotonic() - t_back, 1),
                "held_s": round(t_back - t_cut, 1), "iterations_held": iteration(held) - iteration(before)}

    def test_a_worker_on_a_node_about_to_leave_is_moved_before_it_goes(self):
        # Placement prefers what was measured: the other tests place on the site as
        # declared, so the measured links go once the job has (cleanups run last first),
        # and what an earlier job's workers published goes before it, so that what is
        # read below is this job's.
        forget = ("annotate", "node", "--all", "edgetrain.dev/measured-uplink-bps-",
                  "edgetrain.dev/measured-downlink-bps-", "edgetrain.dev/measured-at-")
        self.kubectl.run(*forget)
        self.addCleanup(self.kubectl.run, *forget)
        self.delete_when_done("warned")
        # A wider model: its pushes (150 kB) are large enough for the agents to time.
        # 40 s: the moved worker's link is published once three readings of it
        # are in, and a robot's link may be in its trace's outage as the worker
        # lands there (20 s in wifi-walk-away-2). Of 25 s, a full ctest run
        # once ended the job first, the worker joining 12.3 s after the warning.
        self.apply(wall_clock_job("warned", "40s", parallelism={"workers": 2}, model={"name": "mlp", "hidden": [512]},
                                  cleanPodPolicy="None"))
        self.wait_job("warned", lambda j: phase(j) == "Running", timeout=60)
        node = self.job_pods("warned")["warned-worker-1"]["spec"]["nodeName"]
        formed = self.log_until("warned-coordinator", lambda log: "the team starts with 2 of 2" in log, timeout=60)
        self.assertIn("the team starts with 2 of 2", formed)
        t_warned = time.monotonic()
        self.kubectl.run("annotate", "node", node, "edgetrain.dev/leaving=battery")
        try:
            def replacement_joined(log):
                adopted = log.find("adopted plan generation 2")
                return adopted >= 0 and "worker 1 joined" in log[adopted:]
            self.log_until("warned-coordinator", replacement_joined, timeout=60)
            t_joined = time.monotonic()
            moved_to = self.job_pods("warned")["warned-worker-1-g2"]["spec"]["nodeName"]

            # What the coordinator measured of the moved worker's new link, on
            # that node, while the job runs.
            def annotations():
                return self.api.get(f"/api/v1/nodes/{moved_to}").json["metadata"].get("annotations") or {}

            def published_or_ended():
                return (int(annotations().get("edgetrain.dev/measured-uplink-bps", 0)) > 0
                        or phase(self.wait_job("warned", lambda j: True)) in ("Succeeded", "Failed"))
            wait_until(published_or_ended, timeout=60, interval=0.3)
            t_measured = time.monotonic()
            measured = annotations()
            job = self.wait_job("warned", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=90)
        finally:
            self.kubectl.run("annotate", "node", node, "edgetrain.dev/leaving-")
        print(f"\nmoved: {node} annotated leaving; the replacement in the team {t_joined - t_warned:.1f} s after "
              f"the warning, its link on {moved_to} published {t_measured - t_joined:.1f} s after that")
        self.assertEqual(phase(job), "Succeeded", json.dumps(job["status"], indent=1))
        self.assertNotIn("recoveries", job["status"], "a move ahead of a warning is not a recovery")
        self.assertNotEqual(moved_to, node)
        self.assertRegex(self.kubectl.run("describe", "tj", "warned").stdout, r"Normal\s+WorkerMoved\s")
        self.assertGreater(int(measured.get("edgetrain.dev/measured-uplink-bps", 0)), 0, measured)
        self.assertIn("edgetrain.dev/measured-at", measured)

    def test_a_job_whose_plan_was_deleted_is_placed_again(self):
        # The plan ConfigMap of a running job deleted by hand: the operator's cache of
        # its ConfigMaps loses it, so it asks the API whether the plan is gone (not
        # merely not yet in the cache) before it places the job anew.
        self.delete_when_done("unplanned")
        self.apply(wall_clock_job("unplanned", "2m"))
        self.wait_job("unplanned", lambda j: phase(j) == "Running", timeout=60)
        before = {name: p["metadata"]["uid"] for name, p in self.job_pods("unplanned").items()}
        self.assertIn("unplanned-coordinator", before)
        maps = "/api/v1/namespaces/default/configmaps"
        first = self.api.get(f"{maps}/unplanned-plan").json["metadata"]["uid"]
        self.kubectl.run("delete", "configmap", "unplanned-plan")
        self.wait_for(maps, "unplanned-plan", lambda cm: cm is not None and cm["metadata"]["uid"] != first)
        # the team of the new plan: new pods, running
        for name, uid in before.items():
            self.wait_pod(name, lambda p: p is not None and p["metadata"]["uid"] != uid and phase(p) == "Running")
        self.assertIn("job=default/unplanned reason=Placed", self.logs())

    def test_suspend_takes_the_job_to_no_pods_and_resume_continues_from_its_checkpoint(self):
        self.addCleanup(self.kubectl.run, "delete", "pvc", "long-out", "--wait=false", "--ignore-not-found")
        self.delete_when_done("long")
        self.apply({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "long-out"},
                    "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "shared-path",
                             "resources": {"requests": {"storage": "1Gi"}}}})
        # Long enough to be caught running, suspended and resumed.
        self.apply(wall_clock_job("long", "2m", faultTolerance={"checkpointEvery": 20},
                                  output={"path": "/models/long",
                                          "volume": {"persistentVolumeClaim": {"claimName": "long-out"}}}))
        self.wait_job("long", lambda j: (j or {}).get("status", {}).get("progress", {}).get("iteration", 0) >= 40,
                      timeout=60)
        self.kubectl.run("patch", "tj", "long", "--type=merge", "-p", '{"spec": {"suspend": true}}')
        job = self.wait_job("long", lambda j: phase(j) == "Suspended")
        # Its status says whether it resumes or starts over, as the Event does.
        self.assertIn("it resumes from its checkpoint when set to false", job["status"]["message"])
        wait_until(lambda: not self.job_pods("long"), timeout=30, interval=0.1)
        self.assertEqual(self.job_pods("long"), {}, "suspended: no pods")
        self.kubectl.run("patch", "tj", "long", "--type=merge", "-p", '{"spec": {"suspend": false}}')
        self.wait_job("long", lambda j: phase(j) in ("Placing", "Running", "Succeeded"))
        self.wait_pod("long-coordinator", lambda p: phase(p) in ("Running", "Succeeded"), timeout=30)
        log = self.log_until("long-coordinator", lambda log: "resum" in log, timeout=30)
        self.assertIn("resum", log, "the resumed coordinator starts from the checkpoint")

    def restart_operator(self):
        """A new replica in place of the class's, as the chart's Deployment starts one when
        the last exits: it leads once the Lease the last held expires."""
        cls = type(self)
        cls.replicas = getattr(cls, "replicas", 1) + 1
        cls.operator_log = os.path.join(cls.dir, f"operator-{cls.replicas}.log")
        cls.operator, cls.operator_http = start_operator(self.operator_kubeconfig(), cls.operator_log,
                                                         extra=cls.operator_args)

    def pods_made(self, watch):
        """The pods a watch (opened on a job's pods before it was applied) saw made, by
        their slot: "coordinator" or the worker's rank, each with the names made for it."""
        made = {}
        while True:
            try:
                event = watch.next(timeout=0.5)
            except (TimeoutError, OSError):
                break
            if event is None:
                break
            if event["type"] == "ADDED":
                labels = event["object"]["metadata"]["labels"]
                slot = labels.get("edgetrain.dev/rank", "coordinator")
                made.setdefault(slot, []).append(event["object"]["metadata"]["name"])
        watch.close()
        return made

    def assert_one_pod_a_slot(self, name, made, workers):
        """Each slot of the job (its coordinator, each rank) had one pod made for it, never
        a second beside or after it, and each pod it has is owned by the job."""
        self.assertEqual(sorted(made), sorted(["coordinator"] + [str(r) for r in range(workers)]), made)
        for slot, names in made.items():
            self.assertEqual(len(names), 1, f"{slot}: pods made {names}")
        for p in self.job_pods(name).values():
            self.assertEqual([o["kind"] for o in p["metadata"]["ownerReferences"]], ["TrainingJob"])

    def test_the_operator_converges_through_dropped_watches_compacted_history_and_a_paused_api(self):
        # What a real API server does to a controller now and then: its history
        # compacted (a watch resumed from before that gets 410 Expired, and the informer
        # lists again), every watch ended, and every request held for a while.
        opened = self.api.get("/_standin/info").json["opened"]
        self.delete_when_done("weathered")
        watch = self.api.watch("/api/v1/namespaces/default/pods", labelSelector="edgetrain.dev/job=weathered")
        self.apply(small_job("weathered", parallelism={"workers": 2}))
        self.wait_job("weathered", lambda j: phase(j) in ("Placing", "Running", "Succeeded"))
        for hook in ("compact", "drop-watches"):
            self.assertEqual(self.api.post(f"/_standin/{hook}", None).status, 200)
        # Its informers watch again, each from where it was (or, told 410, from a
        # fresh list).
        for resource in ("trainingjobs", "pods", "nodes"):
            self.assertEqual(self.api.get("/_standin/wait-watches", resource=resource,
                                          opened=opened.get(resource, 0) + 1, timeoutSeconds=20).status, 200,
                             f"the operator's {resource} informer did not watch again")
        leader = type(self).operator
        self.assertEqual(self.api.post("/_standin/pause", None).status, 200)
        try:
            time.sleep(API_PAUSE_S)
        finally:
            self.assertEqual(self.api.post("/_standin/resume", None).status, 200)
        # Unable to renew its Lease within the renew deadline, it stopped leading.
        self.assertEqual(leader.wait(timeout=20), 1)
        leader.stdout.close()
        self.assertIn("lost the Lease", self.logs())
        t_resumed = time.monotonic()
        self.restart_operator()
        job = self.wait_job("weathered", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=90)
        self.assertEqual(phase(job), "Succeeded", json.dumps(job["status"], indent=1) + self.logs())
        self.assertFalse(job["status"].get("recoveries"), "no worker was lost")
        self.assert_one_pod_a_slot("weathered", self.pods_made(watch), 2)
        print(f"\napi trouble: watches dropped, history compacted, the API held {API_PAUSE_S} s; a new "
              f"replica led and the job Succeeded {time.monotonic() - t_resumed:.1f} s after")

    def test_the_operator_killed_at_random_points_of_its_reconciles_converges_making_nothing_twice(self):
        rng = random.Random(CRASH_SEED)
        took, made_at_kill, taken_up = [], [], 0
        # Every request 25 ms late, so that a reconcile's writes (the Service, the plan,
        # the pods, the status) spread over the window the kills are drawn from.
        self.assertEqual(self.api.post("/_standin/latency", None, ms=25).status, 200)
        self.addCleanup(self.api.post, "/_standin/latency", None, ms=0)
        for trial in range(CRASH_TRIALS):
            name = f"crashed-{trial}"
            self.delete_when_done(name)
            # Somewhere in its first reconciles of the job: validating, placing,
            # making the Service, the plan and the pods, or writing status.
            delay = rng.uniform(0, 0.4)
            watch = self.api.watch("/api/v1/namespaces/default/pods", labelSelector=f"edgetrain.dev/job={name}")
            self.apply(small_job(name, parallelism={"workers": 2}))
            time.sleep(delay)
            t_kill = time.monotonic()
            leader = type(self).operator
            leader.kill()
            leader.wait()
            leader.stdout.close()
            made = len(self.owned(name))  # how far its reconciles had got: pods, Service, plan
            self.restart_operator()
            try:
                job = self.wait_job(name, lambda j: phase(j) in ("Succeeded", "Failed"), timeout=90)
            except AssertionError:
                alive = type(self).operator.poll() is None
                print(f"\ntrial {trial}, killed {delay:.3f} s after apply; the new replica "
                      f"{'runs' if alive else 'exited ' + str(type(self).operator.returncode)}; its log ends:\n"
                      f"{self.logs()}")
                raise
            self.assertEqual(phase(job), "Succeeded", f"trial {trial}, killed {delay:.3f} s after apply: " +
                             json.dumps(job["status"], indent=1) + self.logs())
            self.assertFalse(job["status"].get("recoveries"), "no worker was lost")
            made_pods = self.pods_made(watch)
            self.assert_one_pod_a_slot(name, made_pods, 2)
            with open(type(self).operator_log) as f:  # the replica started after the kill
                taken_up += any(f"job=default/{name} reason=Placed" in line and "taken up" in line for line in f)
            self.kubectl.run("delete", "tj", name)
            wait_until(lambda: not self.owned(name), timeout=30, interval=0.1)
            self.assertEqual(self.owned(name), [], "nothing orphaned")
            took.append(time.monotonic() - t_kill)
            made_at_kill.append(made)
            print(f"\ncrash trial {trial}: killed {delay:.3f} s after apply with {made} of its objects made, "
                  f"Succeeded {took[-1]:.1f} s later; pods {sorted(n for names in made_pods.values() for n in names)}")
        print("crash trials: " + json.dumps({"trials": CRASH_TRIALS, "seed": CRASH_SEED, "converged": len(took),
                                            "objects_made_at_kill": made_at_kill, "taken_up": taken_up,
                                            "to_succeeded_s": [round(t, 1) for t in took]}))

    def test_when_the_leading_operator_dies_a_standby_takes_over(self):
        standby_log = os.path.join(self.dir, "standby.log")
        # not ready until it leads: its caches are filled then
        standby, standby_http = start_operator(self.operator_kubeconfig(), standby_log, ready=False)
        try:
            time.sleep(1)  # a few of its tries at the Lease
            self.assertRegex(self.metrics(), r"edgetrain_operator_leader 1")
            self.assertRegex(self.metrics(standby_http), r"edgetrain_operator_leader 0")
            leader = type(self).operator
            leader.kill()  # a crash: the Lease is not released
            leader.wait()
            leader.stdout.close()
            t_crash = time.monotonic()
            self.delete_when_done("after-failover")
            self.apply(small_job("after-failover", ttlSecondsAfterFinished=1))
            job = self.wait_job("after-failover", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=60)
            took = time.monotonic() - t_crash
            self.assertEqual(phase(job), "Succeeded", json.dumps(job["status"], indent=1))
            # and its whole duty: the job goes ttlSecondsAfterFinished after it ended
            self.wait_job("after-failover", lambda j: j is None, timeout=30)
            self.assertRegex(self.metrics(standby_http), r"edgetrain_operator_leader 1")
            with open(standby_log) as f:
                self.assertIn("leading: this replica reconciles", f.read())
            lease = self.api.get(f"/apis/coordination.k8s.io/v1/namespaces/{chart.RELEASE_NAMESPACE}"
                                 f"/leases/{chart.LEASE}").json
            self.assertGreaterEqual(lease["spec"]["leaseTransitions"], 1)
            print(f"\nfailover: the standby led and finished a new job {took:.1f} s after the leader was killed "
                  f"(lease 3s)")
        finally:
            # The standby is the class's operator now, stopped (and checked) at the end.
            type(self).operator, type(self).operator_http, type(self).operator_log = standby, standby_http, standby_log


if __name__ == "__main__":
    unittest.main()

# Two boards alike, wired: a model the pipeline planner splits between them.
STREAMING_SITE = """\
apiVersion: edgetrain.dev/v1alpha1
kind: ClusterProfile
metadata: {name: streaming-site}
spec:
  nodes:
    - {name: gateway, cpu: 4, memory: 8Gi}
    - {name: camera-1, cpu: 2, memory: 4Gi, stream: {ratePerSecond: 120}}
    - {name: camera-2, cpu: 2, memory: 4Gi, stream: {ratePerSecond: 40}}
"""


@requires_built(OPERATOR)
class LongStatusIntervalTest(OperatorSiteTestCase):
    """The operator looking at a running job only every 30 s of its own accord, as a
    site that reads its coordinators rarely would: what reaches the job between two
    looks is what changed around it, not the operator's own status writes."""
    profile = EDGE_SITE
    # A certificate renewed inside the window is a look of its own: not here.
    operator_args = ("--status-interval", "30s", "--certificate-validity", "10m")
    stop_with = signal.SIGHUP  # the terminal of an operator run by hand, closed

    def reconciles(self):
        """The operator's reconciles so far that ended well, by its /metrics."""
        with urllib.request.urlopen(f"http://{self.operator_http}/metrics", timeout=2) as r:
            text = r.read().decode()
        return sum(int(n) for n in re.findall(
            r'edgetrain_operator_reconcile_duration_seconds_count\{[^}]*result="ok"[^}]*\} (\d+)', text))

    def test_a_running_job_is_reconciled_once_a_change_and_a_leaving_node_is_acted_on_at_once(self):
        self.delete_when_done("quiet")
        self.apply(wall_clock_job("quiet", "2m", parallelism={"workers": 2},
                                  faultTolerance={"nodeLossGrace": "2s"}))
        self.wait_job("quiet", lambda j: phase(j) == "Running", timeout=60)
        formed = self.log_until("quiet-coordinator", lambda log: "the team starts with 2 of 2" in log, timeout=60)
        self.assertIn("the team starts with 2 of 2", formed)
        # Each status written came back by the watch and was reconciled again, its
        # coordinator's /progress read again and, moved on, written again: the
        # /progress was read every 2-3 s against --status-interval 5 s, and the
        # status written up to five times a read (a new user's trial). One change
        # (the job's annotation), once its start has settled, is one reconcile. Three
        # changes, so that one unrelated reconcile under load (a pod's or a node's own
        # change; a full ctest run saw one) is told from the echo, which doubles each.
        # Settled: every pod Ready, a pod's readiness being a change of its own (the
        # probe's first look at 3 s came inside the window under load: 5 for 3).
        def all_ready():
            pods = [p for p in self.job_pods("quiet").values() if p["status"].get("phase") == "Running"]
            return len(pods) == 3 and all(condition(p, "Ready") == "True" for p in pods)
        self.assertTrue(wait_until(all_ready, timeout=30, interval=0.2), "the job's pods never all Ready")
        time.sleep(1.5)
        before = self.reconciles()
        for poke in range(3):
            ahead = self.reconciles()
            self.kubectl.run("annotate", "--overwrite", "tj", "quiet", f"edgetrain.dev/poked={poke}")
            wait_until(lambda: self.reconciles() > ahead, timeout=10, interval=0.05)
            time.sleep(1.5)  # its own write's event would have come back by now
        reconciled = self.reconciles() - before
        self.assertGreaterEqual(reconciled, 3)
        self.assertLessEqual(reconciled, 4, "the job was reconciled again for its own status writes")

        # A node of the team that warns it is leaving moves its worker as the warning
        # comes, not at the next look (30 s here): a node's change woke only the
        # jobs waiting for room, and a warning changes no pod.
        node = self.job_pods("quiet")["quiet-worker-1"]["spec"]["nodeName"]
        self.assertNotEqual(node, "gateway", "the coordinator's node is not the one to warn here")
        t_warned = time.monotonic()
        self.kubectl.run("annotate", "node", node, "edgetrain.dev/leaving=battery")
        try:
            self.wait_job("quiet", lambda j: "(plan generation 2)" in (condition_of(j, "Placed") or {}).get("message", ""),
                          timeout=20)
            moved_s = time.monotonic() - t_warned
        finally:
            self.kubectl.run("annotate", "node", node, "edgetrain.dev/leaving-")
        self.assertLess(moved_s, 10, "moved only at the next look")
        self.assertRegex(self.kubectl.run("describe", "tj", "quiet").stdout, r"Normal\s+WorkerMoved\s")
        print(f"\nlong status interval: {reconciled} reconciles for three changes of a running job; worker 1 moved "
              f"off {node} {moved_s:.1f} s after its warning (--status-interval 30s)")


@requires_built(OPERATOR)
class StatusIntervalTest(OperatorSiteTestCase):
    """A running job looked at every --status-interval, as the docs say: not more."""
    profile = EDGE_SITE
    operator_args = ("--status-interval", "2s")
    reconciles = LongStatusIntervalTest.reconciles

    def test_a_running_job_is_looked_at_once_an_interval(self):
        self.delete_when_done("paced")
        self.apply(wall_clock_job("paced", "2m", parallelism={"workers": 2}))
        self.wait_job("paced", lambda j: phase(j) == "Running", timeout=60)
        formed = self.log_until("paced-coordinator", lambda log: "the team starts with 2 of 2" in log, timeout=60)
        self.assertIn("the team starts with 2 of 2", formed)
        time.sleep(1)
        # Each extra reconcile of its start (a pod's change) asked for its own look
        # an interval later, and those chains never merged: a running job was read
        # every 2-3 s in bursts of two or three against an interval of 5 s (a new
        # user's trial). Over 12 s of an interval of 2 s: six looks, a few more for a
        # pod's change or a certificate renewed; 16 in 8 s before.
        before = self.reconciles()
        time.sleep(12)
        looks = self.reconciles() - before
        self.assertLessEqual(looks, 10, "looked at more often than every --status-interval")
        self.assertGreaterEqual(looks, 3, "not looked at every --status-interval")
        print(f"\nstatus interval: {looks} looks at a running job in 12 s of an interval of 2 s")


@requires_built(OPERATOR)
class CrdGoneTest(OperatorSiteTestCase):
    """The CRD deleted under a running operator, then applied again: said in its log
    and at /readyz, as a list failing before its caches were filled is (it went
    unsaid, /readyz answering ok: a new user's trial)."""
    profile = EDGE_SITE

    def readyz(self):
        try:
            with urllib.request.urlopen(f"http://{self.operator_http}/readyz", timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def test_a_crd_deleted_and_applied_again_is_said_in_the_log_and_at_readyz(self):
        self.assertEqual(self.readyz(), (200, "ok\n"))
        crds = os.path.join(REPO_ROOT, "crds")
        self.kubectl.run("delete", "crd", "trainingjobs.edgetrain.dev")
        self.addCleanup(self.kubectl.run, "apply", "-f", crds)
        said = "cannot list trainingjobs, its cache kept as last listed: "
        self.assertTrue(wait_until(lambda: said in self.logs(), timeout=30), self.logs())
        self.assertIn("(is the TrainingJob CRD installed? kubectl apply -f crds/)", self.logs())
        status, body = self.readyz()
        self.assertEqual(status, 503)
        self.assertIn(said, body)
        self.kubectl.run("apply", "-f", crds)
        self.assertTrue(wait_until(lambda: "every informer lists again" in self.logs(), timeout=30), self.logs())
        self.assertTrue(wait_until(lambda: self.readyz()[0] == 200, timeout=10), self.readyz())


@requires_built(OPERATOR)
class StreamOperatorTest(OperatorSiteTestCase):
    """A team on streams whose job names no rates, on an emulated site whose nodes have
    streams of their own (docs/streams.md)."""
    profile = STREAMING_SITE

    def test_a_stream_that_names_no_rates_draws_each_workers_from_its_node(self):
        self.delete_when_done("streamed")
        self.apply(wall_clock_job("streamed", "12s", parallelism={"workers": 2}, data={"stream": {}}))

        def arrivals(j, since=None, at_least=40):
            """Each worker's node and the samples its stream brought (since `since`'s
            counts), once each has at least `at_least`. The rates are read from what
            came between two readings, not from the totals: the pods start apart
            (up to a second or more under make test's load), and totals counted
            from the starts failed the 3:1 check."""
            workers = [w for w in j.get("status", {}).get("workers", []) if w.get("role") == "worker"]
            arrived = {w["node"]: w.get("stream", {}).get("arrived", 0) - (since or {}).get(w["node"], 0)
                       for w in workers}
            return arrived if len(arrived) == 2 and min(arrived.values()) >= at_least else None
        job = self.wait_job("streamed", lambda j: arrivals(j) or phase(j) in ("Succeeded", "Failed"), timeout=90)
        first = arrivals(job)
        self.assertIsNotNone(first, json.dumps(job.get("status"), indent=1) + self.logs())
        self.assertRegex(condition_of(job, "Placed")["message"], r"workers on camera-\d \(\d\), camera-\d \(\d\)")
        self.assertEqual(sorted(first), ["camera-1", "camera-2"])
        # At 120 and 40 samples a second: two seconds of the slower stream.
        job = self.wait_job("streamed", lambda j: arrivals(j, first, 80) or phase(j) in ("Succeeded", "Failed"),
                            timeout=30)
        arrived = arrivals(job, first, 80)
        self.assertIsNotNone(arrived, json.dumps(job.get("status"), indent=1) + self.logs())
        self.assertGreater(arrived["camera-1"], 2 * arrived["camera-2"], arrived)
        job = self.wait_job("streamed", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=60)
        self.assertEqual(phase(job), "Succeeded", json.dumps(job["status"], indent=1) + self.logs())
        print(f"\nstreams from the nodes: arrived {arrived} between two readings while running")


def boards(count, name):
    """A cluster profile of `count` wired boards alike, board-1 on, 4 CPUs and 8 GiB each,
    each eight times slower than this machine: the pipeline's stages then compute
    for longer than the agent's messages take, and a split of SPLIT_MLP over two
    boards pays clearly. (Unslowed, it was predicted 17-20% faster than one board
    on one machine and 3% slower on another, which left a board out.)"""
    nodes = "".join(f"    - {{name: board-{i}, cpu: 4, memory: 8Gi, compute: {{slowdown: 8}}}}\n"
                    for i in range(1, count + 1))
    return f"apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {{name: {name}}}\nspec:\n  nodes:\n{nodes}"


TWO_BOARDS = boards(2, "two-boards")

# The pipeline tests' model: five layers (fc1-fc4 and the classifier), cut
# between two boards.
SPLIT_MLP = {"hidden": [512, 512, 512, 512]}

# Their stages: the even split, one board a stage (fc1-fc3, fc4 and the
# classifier), as spec.parallelism.stages keeps it. The planner's own cut
# rests on the layers as the check pod timed them, and under the suite's -j2
# load it kept the whole model on one board in 2 of 3 full runs (layers 0-4
# on board-1, predicted 3,524 samples/s): then there was no stage to lose.
# The planner's choice under the operator is the module test's to show.
SPLIT_STAGES = {"mode": "pipeline", "workers": 2, "stages": "even"}

# Their batches: 128, for steps short enough that a test's kill comes well
# inside its job's wall clock. Of 512 (kept while the planner had to find
# the split worth it), the even split trained 37-48 steps in 25 s on one
# machine, the kill waiting for step 30.
SPLIT_DATA = {"batchSize": 128}


@requires_built(OPERATOR)
class PipelineOperatorTest(OperatorSiteTestCase):
    """A pipeline job under the operator, on a site where a split pays."""
    profile = TWO_BOARDS

    def test_a_users_module_is_cut_into_stages_from_its_configmap(self):
        """A TorchScript nn.Sequential in a ConfigMap, as a pipeline: the check pod times
        its layers (not its size), the stages cut between its children run the module
        from the ConfigMap, and the job trains to its wall clock."""
        work = os.path.join(self.dir, "split-model")
        os.makedirs(work, exist_ok=True)
        subprocess.run(["/usr/bin/python3", os.path.join(REPO_ROOT, "examples", "own-model", "export_model.py"),
                        os.path.join(work, "net.pt"), "--input-shape", "64", "--hidden", "32", "--classes", "10"],
                       check=True, capture_output=True)
        self.kubectl.run("create", "configmap", "split-net", f"--from-file=net.pt={os.path.join(work, 'net.pt')}")
        self.addCleanup(self.kubectl.run, "delete", "configmap", "split-net", "--ignore-not-found")
        self.delete_when_done("modsplit")
        self.apply(wall_clock_job("modsplit", "8s", parallelism={"mode": "pipeline", "workers": 2},
                                  model={"name": None, "hidden": None,
                                         "torchscript": {"path": "net.pt", "configMap": "split-net"}}))
        try:
            job = self.wait_job("modsplit", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=120)
        except AssertionError as e:
            # Once in a full make test (2026-12-02) it stayed WaitingForTeam, its head
            # gathering its one stage: what the agents said is what would tell why.
            raise AssertionError(f"{e}\n{self.logs()}\n{self.agent_logs('modsplit')}") from None
        status = job["status"]
        self.assertEqual(phase(job), "Succeeded", json.dumps(status, indent=1) + self.logs())
        # Flatten, Linear(64, 32), ReLU, Linear(32, 10): its children, by place and class.
        self.assertEqual([l["name"] for l in status["modelCheck"]["layers"]],
                         ["0.Flatten", "1.Linear", "2.ReLU", "3.Linear"], status["modelCheck"])
        self.assertNotIn("parameters", status["modelCheck"], "the layers were timed, not the module loaded")
        # Split, or planned on one device, whichever the layers as timed here predict faster.
        self.assertRegex(condition_of(job, "Placed")["message"],
                         r"; pipeline as asked( \(planned as one device: the whole model as one stage\))?: layers ")
        self.assertGreater(status["progress"]["iteration"], 0)
        print(f"\nmodule as a pipeline: {condition_of(job, 'Placed')['message']}; "
              f"{status['progress']['iteration']} steps, accuracy {status['model']['accuracy']:.3f}")

    def test_a_pipeline_is_cut_into_stages_on_its_nodes_and_trains_on_past_a_lost_stage_which_rejoins(self):
        """Issues 15 and 16 through the front door: a pipeline job applied with kubectl has
        its layers timed in a pod of its own, its team placed, the layers cut into stages
        over the placed nodes, and one --role=stage pod per stage. The node of a stage's
        only device is killed mid-run: the head rebuilds that stage on its neighbour from
        a replica, the operator replaces nothing and says Replaying; when the node is back
        the device's pod is made again there and it rejoins a stage, and the job trains to
        its wall clock."""
        t0 = time.monotonic()
        self.delete_when_done("piped")
        self.apply(wall_clock_job("piped", "25s", model=SPLIT_MLP, data=SPLIT_DATA,
                                  parallelism=SPLIT_STAGES,
                                  faultTolerance={"nodeLossGrace": "2s", "replicateEvery": 10}))
        job = self.wait_job("piped", lambda j: phase(j) in ("Running", "Failed"), timeout=90)
        status = job["status"]
        self.assertEqual(phase(job), "Running", json.dumps(status, indent=1) + self.logs())
        self.assertEqual([l["name"] for l in status["modelCheck"]["layers"]], ["fc1", "fc2", "fc3", "fc4", "classifier"])
        # Two boards alike, wired: the even split gives each a stage, kept as
        # spec.parallelism.stages gives it (SPLIT_STAGES).
        self.assertRegex(condition_of(job, "Placed")["message"],
                         r"; spec.parallelism.stages even instead of the planner's: layers 0-2 on board-\d, "
                         r"3-4 on board-\d; ")
        self.assertEqual(len(status["pipeline"]["stages"]), 2, status["pipeline"])
        pods = self.job_pods("piped")
        self.assertNotIn("piped-model-check", pods, "the check's pod goes once it is read")
        stages = {n: p for n, p in pods.items() if p["metadata"]["labels"]["edgetrain.dev/role"] == "stage"}
        self.assertEqual(sorted(stages), ["piped-worker-0", "piped-worker-1"])
        for p in stages.values():
            self.assertEqual(p["spec"]["containers"][0]["args"][0], "--role=stage")
        head_node = pods["piped-coordinator"]["spec"]["nodeName"]
        gathered = self.log_until("piped-coordinator", lambda log: "pipeline: 2 stages on 2 devices gathered" in log,
                                  timeout=60)
        self.assertIn("pipeline: 2 stages on 2 devices gathered", gathered)
        # Past a replica of each stage, then one stage's node is lost.
        self.wait_job("piped", lambda j: (j["status"].get("progress", {}).get("iteration") or 0) >= 30, timeout=60)
        victim = next((n for n, p in sorted(stages.items()) if p["spec"]["nodeName"] != head_node), None)
        self.assertIsNotNone(victim, f"both stages placed beside the head on {head_node}")
        rank = int(stages[victim]["metadata"]["labels"]["edgetrain.dev/rank"])
        node = stages[victim]["spec"]["nodeName"]
        self.assertEqual(self.api.post(f"/_standin/nodes/{node}/kill", None).status, 200)
        try:
            job = self.wait_job("piped", lambda j: condition_of(j, "Replaying").get("reason") in ("Replayed", "TrainingOn")
                                and rank in (j["status"].get("pipeline", {}).get("lostRanks") or []), timeout=60)
            log = self.log_until("piped-coordinator", lambda log: "lost its only device" in log, timeout=10)
        finally:
            self.api.post(f"/_standin/nodes/{node}/revive", None)
        # The node back: its pod, evicted past nodeLossGrace and deleted once the
        # node could confirm it, is made again there (or, back before the
        # eviction, its agent restarts in it), and the device rejoins the stage
        # that holds its layers now.
        back = self.wait_job("piped", lambda j: (j["status"]["pipeline"].get("replays") or {}).get("rejoined", 0) >= 1
                             and not j["status"]["pipeline"].get("lostRanks"), timeout=30)
        self.assertFalse(back["status"]["pipeline"].get("awaitingNodes"))
        self.assertEqual(self.job_pods("piped")[victim]["spec"]["nodeName"], node)
        self.assertRegex(log, rf"\(rank {rank}\); its layers [0-4]-[0-4] go to stage")
        replays = job["status"]["pipeline"]["replays"]
        self.assertEqual(replays["restoredStages"], 1, replays)
        self.assertIn("rebuilt 1 stage from a replica", condition_of(job, "Replaying")["message"])
        job = self.wait_job("piped", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=90)
        status = job["status"]
        self.assertEqual(phase(job), "Succeeded", json.dumps(status, indent=1) + self.logs())
        self.assertEqual(condition_of(job, "Complete")["reason"], "BudgetSpent")
        self.assertGreater(status["progress"]["iteration"], 30)
        self.assertEqual(status["pipeline"]["lostRanks"], [])
        self.assertFalse([n for n in self.job_pods("piped") if "-g" in n], "nothing is replaced")
        story = self.kubectl.run("describe", "tj", "piped").stdout
        for said in (r"Normal\s+LayersTimed\s", r"Warning\s+StageDeviceLost\s", r"Warning\s+Replayed\s",
                     r"Normal\s+StageDeviceRejoined\s"):
            self.assertRegex(story, said)
        print(f"\npipeline: applied to Succeeded in {time.monotonic() - t0:.1f} s; stage device {rank} on {node} "
              f"lost, its stage rebuilt from a replica losing {replays['stepsLost']} steps of its updates, and back "
              f"in a stage once its node was; "
              f"{status['progress']['iteration']} steps, accuracy {status['progress'].get('accuracy')}")

    def test_a_stage_agent_that_crashes_restarts_in_its_pod_and_rejoins(self):
        """A stage's only agent SIGKILLed (as an out-of-memory kill would have it): the head
        rebuilds its stage on its neighbour from a replica and trains on; the kubelet
        restarts the agent in its pod (restartPolicy OnFailure), and between two steps
        it rejoins the stage that now holds its layers. The operator keeps its pod,
        says the device was lost and is back, and the job trains to its wall clock."""
        self.delete_when_done("rejoin")
        self.apply(wall_clock_job("rejoin", "25s", model=SPLIT_MLP, data=SPLIT_DATA,
                                  parallelism=SPLIT_STAGES,
                                  faultTolerance={"nodeLossGrace": "2s", "replicateEvery": 10}))
        self.wait_job("rejoin", lambda j: ((j.get("status") or {}).get("progress", {}).get("iteration") or 0) >= 30,
                      timeout=120)
        t_killed = self.kill_agent("--role=stage --job=rejoin --rank=1 ", "the stage agent of rank 1")
        job = self.wait_job("rejoin", lambda j: (j["status"].get("pipeline", {}).get("replays") or {})
                            .get("rejoined", 0) >= 1 and not j["status"]["pipeline"].get("lostRanks"), timeout=30)
        t_back = time.monotonic()
        log = self.log_until("rejoin-coordinator", lambda log: "is back and rejoins stage" in log, timeout=10)
        self.assertRegex(log, r"rank 1 is back and rejoins stage 1 \(layers 0-4, now on 2 devices\)")
        replays = job["status"]["pipeline"]["replays"]
        self.assertEqual(replays["restoredStages"], 1, replays)
        pod = self.job_pods("rejoin")["rejoin-worker-1"]
        self.assertGreaterEqual(pod["status"]["containerStatuses"][0]["restartCount"], 1, "restarted in its pod")
        job = self.wait_job("rejoin", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=90)
        self.assertEqual(phase(job), "Succeeded", json.dumps(job["status"], indent=1) + self.logs())
        # The operator reads /progress every 300 ms here: it sees the device out
        # unless the kubelet restarted it and it rejoined in between, and says
        # it is back whenever it said it was lost.
        story = self.kubectl.run("describe", "tj", "rejoin").stdout
        if re.search(r"Warning\s+StageDeviceLost\s", story):
            self.assertRegex(story, r"Normal\s+StageDeviceRejoined\s")
        print(f"\npipeline: a stage agent SIGKILLed, its stage rebuilt on its neighbour, and the agent back in a "
              f"stage {t_back - t_killed:.1f} s after the kill; {job['status']['progress']['iteration']} steps, "
              f"accuracy {job['status']['progress'].get('accuracy')}")

    def test_a_head_agent_that_crashes_restarts_in_its_pod_and_its_stages_wait_for_it(self):
        """The head's agent SIGKILLed: the kubelet restarts it in its pod after its back-off,
        and its stages, their streams broken, keep trying to reach it (--head-return-grace)
        rather than give up after reachGrace (2 s here) and crash-loop out of step with it,
        as they did (a new user's trial: three pods in CrashLoopBackOff for 3 minutes). The
        stages' pods never restart, and the job trains to its wall clock."""
        self.delete_when_done("headkill")
        self.apply(wall_clock_job("headkill", "25s", model=SPLIT_MLP, data=SPLIT_DATA,
                                  parallelism=SPLIT_STAGES,
                                  faultTolerance={"nodeLossGrace": "2s"}))
        self.wait_job("headkill", lambda j: ((j.get("status") or {}).get("progress", {}).get("iteration") or 0) >= 20,
                      timeout=120)
        shown = self.wait_job("headkill", lambda j: True)["status"]["progress"]["iteration"]
        self.kill_agent("--role=coordinator --job=headkill ", "the head's agent")
        # Restarted with no checkpoint (checkpointEvery 0), it trains on from
        # the state its stages hold rather than from the start.
        log = self.log_until("headkill-coordinator", lambda log: "training on from theirs" in log, timeout=150)
        taken = int(log.split("the stages hold the model at step ")[1].split(",")[0])
        self.assertGreaterEqual(taken, shown, log[-1500:])
        job = self.wait_job("headkill", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=150)
        self.assertEqual(phase(job), "Succeeded", json.dumps(job["status"], indent=1) + self.logs())
        pods = self.job_pods("headkill")
        self.assertGreaterEqual(pods["headkill-coordinator"]["status"]["containerStatuses"][0]["restartCount"], 1,
                                "the head restarted in its pod")
        for name, pod in pods.items():
            if name.startswith("headkill-worker-"):
                self.assertEqual(pod["status"]["containerStatuses"][0]["restartCount"], 0,
                                 f"{name} waited for its head rather than exit; it said:\n"
                                 + self.kubectl.run("logs", name, "--previous", ok=False).stdout[-3000:])
        print(f"\npipeline: the head's agent SIGKILLed at step {shown} or after and restarted in its pod, its "
              f"stages waiting for it; it trained on from their state at step {taken}; "
              f"{job['status']['progress']['iteration']} steps, accuracy {job['status']['progress'].get('accuracy')}")


FOUR_BOARDS = boards(4, "four-boards")


@requires_built(OPERATOR)
class PipelineHeadPlacedAnewTest(OperatorSiteTestCase):
    """A pipeline's head lost with its node, under the operator."""
    profile = FOUR_BOARDS
    # The stages hear of a head lost with its node after 2 s, and the head placed
    # anew waits 12 s past nodeLossGrace for them. (Not the whole suite's: on its
    # slower shaped links a ping queued behind a push can take longer than 1 s.)
    operator_args = ("--agent-keepalive", "1s")

    def test_a_pipelines_head_lost_with_its_node_is_placed_anew_and_trains_on_from_its_stages(self):
        """Issue 16's "losing the head itself": the node of a pipeline's head dies, and with
        it the only device of one of the two stages (two CPUs a pod: the head and a stage
        share a board). Past nodeLossGrace the operator places the head anew on a board
        left, and the new head, its output folder gone with the node, trains on from the
        state the other stage holds, rebuilding the lost stage on it from the replica of
        those layers it keeps (replicateEvery 10), rather than from the start. The
        surviving stage's pod never restarts, and the job trains to its wall clock."""
        self.delete_when_done("reheaded")
        self.apply(wall_clock_job("reheaded", "60s", model=SPLIT_MLP, data=SPLIT_DATA,
                                  parallelism=SPLIT_STAGES,
                                  faultTolerance={"nodeLossGrace": "2s", "replicateEvery": 10},
                                  template={"resources": {"requests": {"cpu": "2", "memory": "256Mi"}}}))

        def iteration(j):
            return ((j.get("status") or {}).get("progress") or {}).get("iteration") or 0
        shown = iteration(self.wait_job("reheaded", lambda j: iteration(j) >= 30, timeout=120))
        pods = self.job_pods("reheaded")
        hub = pods["reheaded-coordinator"]["spec"]["nodeName"]
        stages = {n: p["spec"]["nodeName"] for n, p in pods.items() if n.startswith("reheaded-worker-")}
        self.assertIn(hub, stages.values(), f"a stage beside the head: {stages}")
        survivor = next(n for n, node in stages.items() if node != hub)
        t_lost = time.monotonic()
        self.assertEqual(self.api.post(f"/_standin/nodes/{hub}/kill", None).status, 200)
        self.addCleanup(self.api.post, f"/_standin/nodes/{hub}/revive", None)
        self.wait_job("reheaded", lambda j: phase(j) == "Recovering", timeout=30)
        log = self.log_until("reheaded-coordinator-g2", lambda log: "training on from theirs" in log, timeout=120)
        if "training on from theirs" not in log:
            for name, pod in self.job_pods("reheaded").items():
                p = self.kubectl.run("logs", name, ok=False)
                print(f"\n== {name} on {pod['spec'].get('nodeName')}:\n{p.stdout[-2500:]}{p.stderr[-300:]}")
            self.fail("the new head did not train on from its stages")
        t_trained_on = time.monotonic()
        taken = int(log.split("the stages hold the model at step ")[1].split(",")[0])
        self.assertGreaterEqual(taken, shown, log[-1500:])
        self.assertRegex(log, r"is rebuilt on stage \d from the replica of step \d+ its devices keep")
        seat = self.job_pods("reheaded")["reheaded-coordinator-g2"]["spec"]["nodeName"]
        self.assertNotEqual(seat, hub)
        # Training on past it, the surviving stage's agent never restarted.
        # (Read while the job runs: at its end the operator deletes a pod
        # whose agent is still finishing.)
        self.wait_job("reheaded", lambda j: iteration(j) > taken + 20 or phase(j) in ("Succeeded", "Failed"),
                      timeout=60)
        pod = self.job_pods("reheaded").get(survivor)
        self.assertIsNotNone(pod, "the surviving stage's pod stays")
        self.assertEqual(pod["status"]["containerStatuses"][0]["restartCount"], 0, f"{survivor} restarted")
        job = self.wait_job("reheaded", lambda j: phase(j) in ("Succeeded", "Failed"), timeout=120)
        status = job["status"]
        self.assertEqual(phase(job), "Succeeded", json.dumps(status, indent=1) + self.logs())
        self.assertEqual(status["recoveries"], 1)
        self.assertGreater(iteration(job), taken)
        self.assertRegex(self.kubectl.run("describe", "tj", "reheaded").stdout, r"Warning\s+CoordinatorLost\s")
        print(f"\npipeline: the head's node {hub} killed at step {shown} or after, a stage's only device with it; "
              f"the head placed anew on {seat} trained on from its stages' state at step {taken}, the lost stage "
              f"rebuilt from its neighbour's replica, {t_trained_on - t_lost:.1f} s after the kill; "
              f"{iteration(job)} steps, accuracy {status['progress'].get('accuracy')}")


@requires_built(OPERATOR, EDGETRAIN)
class TheReadmesRunItOnKubernetes(unittest.TestCase):
    """README's "Run it on Kubernetes" block run as one bash script, as a new user pastes
    it (the stand-in took 1.3 s to serve, and every line after it failed: its trial).
    Only what a test must change is changed: the folder, the build's programs, an HTTP
    port the OS chooses for the operator, kubectl 1.32 on the PATH, and the watch, which
    never ends by itself, as `kubectl wait` for the phase it says the job reaches."""

    WATCH = "kubectl get tj -w"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="readme-k8s-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def script(self):
        lines = readme_commands("Run it on Kubernetes")
        watch = [i for i, line in enumerate(lines) if line.startswith(self.WATCH)]
        self.assertEqual(len(watch), 1, f"one '{self.WATCH}' line: {lines}")
        lines[watch[0]] = "kubectl wait --for=jsonpath='{.status.phase}'=Succeeded tj/digits-team --timeout=120s"
        operator = [i for i, line in enumerate(lines) if line.startswith("build/bin/edgetrain-operator &")]
        self.assertEqual(len(operator), 1, lines)
        lines[operator[0]] = lines[operator[0]].replace("edgetrain-operator &", "edgetrain-operator --http 127.0.0.1:0 &")
        text = "\n".join(lines).replace("/tmp/edge/", self.dir + "/edge/").replace("build/bin/", BIN + "/")
        tools = os.path.join(self.dir, "bin")
        os.makedirs(tools)
        os.symlink(KUBECTL, os.path.join(tools, "kubectl"))
        return "set -e\nexport PATH=" + shlex.quote(tools) + ":$PATH\n" + text + "\n"

    def test_the_block_pasted_whole_trains_the_example_and_stops_everything(self):
        if KUBECTL is None:
            self.skipTest("kubectl 1.32 not found (tests/kube/setup installs it)")
        script = self.script()
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env["KUBECACHEDIR"] = os.path.join(self.dir, "kube-cache")  # HOME stays: the data sets are under it
        t0 = time.monotonic()
        log_path = os.path.join(self.dir, "out")
        with open(log_path, "w") as log:
            # Its output to a file: the stand-in, started in the background,
            # holds the script's stdout open after the script ends.
            proc = subprocess.Popen(["bash", "-c", script], cwd=REPO_ROOT, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        # Whatever the block left running when it failed, stopped as a Ctrl-C would.
        self.addCleanup(stopping.stop, proc, 20)
        try:
            proc.wait(timeout=240)
        except subprocess.TimeoutExpired:
            pass
        with open(log_path) as f:
            out = f.read()
        took = time.monotonic() - t0
        self.assertEqual(proc.returncode, 0, f"the block failed:\n{script}\n{out}")
        self.assertIn("customresourcedefinition.apiextensions.k8s.io/trainingjobs.edgetrain.dev created", out)
        self.assertIn("trainingjob.edgetrain.dev/digits-team created", out)
        self.assertIn("trainingjob.edgetrain.dev/digits-team condition met", out)
        self.assertRegex(out, r"Events:(.|\n)*TargetReached", "kubectl describe tells the story")
        self.assertIn('trainingjob.edgetrain.dev "digits-team" deleted', out)
        self.assertNotIn("connection refused", out)
        # The last line stops the operator and then the stand-in, which stops every
        # node's pods: nothing the block started is left running.
        # (The block's background jobs are in its shell's process group.)
        stopped = wait_until(lambda: not stopping.group_processes(proc.pid), timeout=30, interval=0.2)
        self.assertTrue(stopped, f"still running: {[process_name(p) for p in stopping.group_processes(proc.pid)]}")
        print(f"\nREADME's Run it on Kubernetes: {len(script.splitlines())} lines pasted whole, the example "
              f"Succeeded and everything stopped in {took:.1f} s")


def process_name(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return str(pid)
