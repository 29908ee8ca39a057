"""Real kubectl 1.32 against the stand-in, with the project's own crds/ and examples/
(what a user types). Each class has its own server, kubeconfig and --cache-dir."""

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import unittest

from harness import REPO_ROOT, Standin, find_kubectl, wait_until
from fixtures import node, pod

KUBECTL = find_kubectl()
CRDS_DIR = os.path.join(REPO_ROOT, "crds")
EXAMPLE = os.path.join(REPO_ROOT, "examples", "fashion-mnist.yaml")
OTHER_EXAMPLES = [os.path.join(REPO_ROOT, "examples", "digits.yaml")]
TJ = "/apis/edgetrain.dev/v1alpha1/namespaces/default/trainingjobs"


class Kubectl:
    def __init__(self, server):
        self.server = server
        # In the stand-in's folder, removed with it: one a run had been left in /tmp.
        self.cache = tempfile.mkdtemp(prefix="kubectl-cache-", dir=server.workdir)

    def argv(self, args):
        return [KUBECTL, "--kubeconfig", self.server.kubeconfig, "--cache-dir", self.cache,
                *args]

    def run(self, *args, ok=True, timeout=60):
        p = subprocess.run(self.argv(args), capture_output=True, text=True, timeout=timeout)
        if ok and p.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({p.returncode}):\n"
                                 f"{p.stdout}\n{p.stderr}")
        return p

    def start(self, *args):
        return subprocess.Popen(self.argv(args), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)


def read_line(proc, timeout=15):
    """The next line kubectl prints, or None if it prints nothing in time. A thread per
    process feeds a queue (select() on a buffered pipe would miss buffered lines)."""
    if not hasattr(proc, "lines"):
        proc.lines = queue.Queue()

        def pump():
            for line in proc.stdout:
                proc.lines.put(line)
            proc.lines.put(None)
        threading.Thread(target=pump, daemon=True).start()
    try:
        return proc.lines.get(timeout=timeout)
    except queue.Empty:
        return None


def require_kubectl_and_manifests():
    missing = []
    if KUBECTL is None:
        missing.append("kubectl 1.32 (run tests/kube/setup)")
    if not os.path.isdir(CRDS_DIR):
        missing.append(CRDS_DIR)
    missing += [f for f in [EXAMPLE] + OTHER_EXAMPLES if not os.path.isfile(f)]
    if missing:
        raise AssertionError("cannot run the kubectl tests without: " + ", ".join(missing))


class KubectlTestCase(unittest.TestCase):
    tls = False

    @classmethod
    def setUpClass(cls):
        require_kubectl_and_manifests()
        cls.server = Standin(tls=cls.tls)
        cls.server.start()
        cls.addClassCleanup(cls._stop_server)  # runs even if setUpClass fails later
        cls.api = cls.server.client()
        cls.kubectl = Kubectl(cls.server)

    @classmethod
    def _stop_server(cls):
        cls.api.close()
        cls.server.stop()
        shutil.rmtree(cls.kubectl.cache, ignore_errors=True)
        assert cls.server.returncode == 0, f"stand-in exited with {cls.server.returncode}"

    def get(self, path):
        """The object at path, None when the server has none (any status but 200)."""
        r = self.api.get(path)
        return r.json if r.status == 200 else None


class ApplyCrdsAndExamples(KubectlTestCase):
    def test_apply_crds_then_example_created_unchanged_configured(self):
        k = self.kubectl
        out = k.run("apply", "-f", CRDS_DIR).stdout
        self.assertIn("customresourcedefinition.apiextensions.k8s.io/trainingjobs.edgetrain.dev "
                      "created", out)
        out = k.run("apply", "-f", CRDS_DIR).stdout
        self.assertIn("trainingjobs.edgetrain.dev unchanged", out)

        p = k.run("apply", "-f", EXAMPLE)
        self.assertRegex(p.stdout, r"trainingjob\.edgetrain\.dev/\S+ created")
        self.assertNotIn("warning", p.stderr.lower())
        name = p.stdout.split("/")[1].split()[0]
        self.assertRegex(k.run("apply", "-f", EXAMPLE).stdout, rf"{name} unchanged")
        # the same manifest with one more label: configured (a merge patch)
        obj = json.loads(k.run("create", "--dry-run=client", "-o", "json", "-f", EXAMPLE).stdout)
        obj["metadata"].setdefault("labels", {})["edgetrain.dev/test"] = "configured"
        changed = os.path.join(k.cache, "changed.json")
        with open(changed, "w") as f:
            json.dump(obj, f)
        p = k.run("apply", "-f", changed)
        self.assertRegex(p.stdout, rf"{name} configured")
        self.assertNotIn("warning", p.stderr.lower(), "no strategic merge patch tried on a custom resource")
        live = self.api.get(f"{TJ}/{name}").json
        self.assertEqual(live["metadata"]["labels"]["edgetrain.dev/test"], "configured")
        self.assertIn("kubectl.kubernetes.io/last-applied-configuration",
                      live["metadata"]["annotations"])
        self.assertEqual(live["metadata"]["generation"], 1, "labels are not spec")
        for other in OTHER_EXAMPLES:
            self.assertRegex(k.run("apply", "-f", other).stdout, r" created")
        # A typo in kind: kubectl says so, as against a real server (it had
        # said "failed to download openapi" for want of a v2 document).
        typo = os.path.join(k.cache, "typo.json")
        obj["kind"] = "Trainingjob"
        with open(typo, "w") as f:
            json.dump(obj, f)
        p = k.run("apply", "-f", typo, ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('no matches for kind "Trainingjob" in version "edgetrain.dev/v1alpha1"', p.stderr)


class TrainingJobs(KubectlTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.kubectl.run("apply", "-f", CRDS_DIR)
        out = cls.kubectl.run("apply", "-f", EXAMPLE).stdout
        cls.name = out.split("/")[1].split()[0]

    def watches_opened(self):
        return self.api.hook("info", method="GET").json["opened"].get("trainingjobs", 0)

    def await_watch(self, opened):
        """Blocks until the stand-in has seen `opened` watches on trainingjobs in all."""
        r = self.api.hook("wait-watches", method="GET", opened=opened, resource="trainingjobs")
        self.assertEqual(r.status, 200, "kubectl did not open the expected watch")

    def set_status(self, name, status):
        r = self.api.patch(f"{TJ}/{name}/status", {"status": status})
        self.assertEqual(r.status, 200, r)
        return r.json

    def copy_of_example(self, name):
        obj = json.loads(self.kubectl.run("create", "--dry-run=client", "-o", "json", "-f",
                                          EXAMPLE).stdout)
        obj["metadata"] = {"name": name}
        r = self.api.post(TJ, obj)
        self.assertEqual(r.status, 201, r)
        return r.json

    def test_get_prints_printer_columns(self):
        self.set_status(self.name, {"phase": "Running", "reason": "LinkDown",
                                    "message": "worker 1 silent for 12 s", "progress": {"accuracy": 0.5}})
        lines = self.kubectl.run("get", "tj").stdout.splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "PHASE", "REASON", "MODE", "WORKERS", "ACCURACY", "AGE"])
        row = next(line.split() for line in lines[1:] if line.split()[0] == self.name)
        self.assertEqual(row[1:3], ["Running", "LinkDown"])
        self.assertEqual(row[5], "0.5")
        self.assertRegex(row[6], r"^\d+s$")
        # The condition's message only with -o wide: it may be long.
        wide = self.kubectl.run("get", "tj", self.name, "-o", "wide").stdout.splitlines()
        self.assertEqual(wide[0].split()[-1], "MESSAGE")
        self.assertTrue(wide[1].endswith("worker 1 silent for 12 s"), wide)

    def test_get_yaml_shows_defaults_and_server_fields(self):
        out = self.kubectl.run("get", "tj", self.name, "-o", "yaml").stdout
        self.assertIn("apiVersion: edgetrain.dev/v1alpha1", out)
        self.assertIn("kind: TrainingJob", out)
        self.assertIn("uid:", out)
        self.assertIn("generation: 1", out)
        self.assertIn("batchSize: 64", out, "CRD defaults are applied")
        live = json.loads(self.kubectl.run("get", "trainingjobs.edgetrain.dev", self.name,
                                           "-o", "json").stdout)
        self.assertEqual(live["spec"]["cleanPodPolicy"], "Running")

    def test_get_watch_prints_changes(self):
        job = self.copy_of_example("watched")
        before = self.watches_opened()
        proc = self.kubectl.start("get", "tj", "watched", "-w")
        try:
            header = read_line(proc)
            self.assertIn("NAME", header)
            self.assertTrue(read_line(proc).startswith("watched"))
            self.await_watch(before + 1)
            self.set_status("watched", {"phase": "Placing"})
            self.set_status("watched", {"phase": "Running"})
            phases = [read_line(proc).split()[1] for _ in range(2)]
            self.assertEqual(phases, ["Placing", "Running"])
        finally:
            proc.terminate()
            proc.wait(5)
            proc.stdout.close()
            proc.stderr.close()
        self.assertTrue(job["metadata"]["uid"])

    def test_describe_shows_object_and_its_events(self):
        job = self.copy_of_example("described")
        ev = {"apiVersion": "v1", "kind": "Event",
              "metadata": {"name": "described.placed", "namespace": "default"},
              "involvedObject": {"apiVersion": "edgetrain.dev/v1alpha1", "kind": "TrainingJob",
                                 "name": "described", "namespace": "default",
                                 "uid": job["metadata"]["uid"]},
              "reason": "Placed", "message": "4 workers placed on 3 nodes", "type": "Normal",
              "count": 1, "source": {"component": "edgetrain-operator"},
              "firstTimestamp": job["metadata"]["creationTimestamp"],
              "lastTimestamp": job["metadata"]["creationTimestamp"]}
        self.assertEqual(self.api.post("/api/v1/namespaces/default/events", ev).status, 201)
        out = self.kubectl.run("describe", "tj", "described").stdout
        self.assertRegex(out, r"Name:\s+described")
        self.assertRegex(out, r"Kind:\s+TrainingJob")
        self.assertIn("Events:", out)
        self.assertRegex(out, r"Normal\s+Placed\s+\S+\s+edgetrain-operator\s+4 workers placed")

    def test_wait_for_condition(self):
        self.copy_of_example("awaited")
        before = self.watches_opened()
        proc = self.kubectl.start("wait", "--for=condition=Complete", "tj/awaited",
                                  "--timeout=30s")
        try:
            self.await_watch(before + 1)
            self.set_status("awaited", {"conditions": [
                {"type": "Complete", "status": "True", "reason": "TargetAccuracyReached",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"}]})
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn("trainingjob.edgetrain.dev/awaited condition met", out)
        p = self.kubectl.run("wait", "--for=condition=Failed", "tj/awaited", "--timeout=1s",
                             ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("timed out", p.stderr)

    def test_wait_survives_a_410_by_relisting(self):
        self.copy_of_example("relisted")
        self.copy_of_example("bystander")
        before = self.watches_opened()
        proc = self.kubectl.start("wait", "--for=condition=Complete", "tj/relisted",
                                  "--timeout=30s")
        try:
            self.await_watch(before + 1)
            # kubectl's watch sees one change (client-go treats a watch that ends with no
            # event within a second as broken and relists at once, skipping the 410 path);
            # a change its name-filtered watch does not see moves the revision on; history
            # is then forgotten and every watch dropped: kubectl re-watches from its (now
            # too old) revision, gets 410 Expired, relists and watches again.
            self.api.patch(f"{TJ}/relisted", {"metadata": {"labels": {"seen": "yes"}}})
            self.api.patch(f"{TJ}/bystander", {"metadata": {"labels": {"x": "y"}}})
            self.api.hook("compact")
            self.api.hook("drop-watches")
            self.await_watch(before + 3)
            self.set_status("relisted", {"conditions": [{"type": "Complete", "status": "True"}]})
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertEqual(proc.returncode, 0, err)

    def test_delete_without_finalizer(self):
        self.copy_of_example("doomed")
        out = self.kubectl.run("delete", "tj", "doomed").stdout
        self.assertIn('trainingjob.edgetrain.dev "doomed" deleted', out)
        self.assertEqual(self.api.get(f"{TJ}/doomed").status, 404)

    def test_delete_waits_for_finalizer(self):
        job = self.copy_of_example("held")
        self.api.patch(f"{TJ}/held", {"metadata": {"finalizers": ["edgetrain.dev/pods"]}})
        before = self.watches_opened()
        proc = self.kubectl.start("delete", "tj", "held", "--timeout=30s")
        try:
            self.assertTrue(wait_until(lambda: self.api.get(f"{TJ}/held").json["metadata"]
                                       .get("deletionTimestamp")))
            self.await_watch(before + 1)
            self.assertIsNone(proc.poll(), "kubectl delete returned while a finalizer held it")
            self.api.patch(f"{TJ}/held", {"metadata": {"finalizers": None}})
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn('"held" deleted', out)
        self.assertEqual(self.api.get(f"{TJ}/held").status, 404)
        self.assertTrue(job["metadata"]["uid"])

    def test_invalid_manifests_are_refused_with_the_servers_reasons(self):
        obj = json.loads(self.kubectl.run("create", "--dry-run=client", "-o", "json", "-f",
                                          EXAMPLE).stdout)
        obj["metadata"] = {"name": "bad"}
        obj["spec"]["notAField"] = 1
        path = os.path.join(self.kubectl.cache, "bad.json")
        with open(path, "w") as f:
            json.dump(obj, f)
        p = self.kubectl.run("apply", "-f", path, ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('strict decoding error: unknown field "spec.notAField"', p.stderr)
        del obj["spec"]["notAField"]
        obj["spec"]["parallelism"] = {"mode": "pipeline", "workers": 1}
        with open(path, "w") as f:
            json.dump(obj, f)
        p = self.kubectl.run("apply", "-f", path, ok=False)
        self.assertIn("pipeline parallelism needs at least 2 workers", p.stderr)


class TrainingJobRules(KubectlTestCase):
    """The CEL rules of crds/trainingjob.yaml, evaluated by a real CEL implementation
    (dry-run creates, so nothing is stored)."""

    CASES = {
        "partition": ({"data": {"dataset": "digits", "partition": {"kind": "dirichlet"}}},
                      "alpha is required for kind dirichlet"),
        "partition-ok": ({"data": {"dataset": "digits",
                                   "partition": {"kind": "dirichlet", "alpha": 0.5}}}, None),
        "stream": ({"data": {"dataset": "digits", "stream": {"ratesPerSecond": [1, 2]}},
                    "parallelism": {"workers": 3}}, "needs one rate per worker"),
        "stream-ok": ({"data": {"dataset": "digits", "stream": {"ratesPerSecond": [1.5, 2]}},
                       "parallelism": {"workers": 2}}, None),
        "momentum": ({"optimizer": {"name": "adam", "momentum": 0.9}},
                     "momentum applies only to the sgd optimizer"),
        "staleness": ({"sync": {"policy": "bsp", "stalenessBound": 2}},
                      "stalenessBound applies only to the rog and ssp policies"),
        # Mounted at /models, the model at /models/NAME, as the docs say of the
        # default path (it had been refused: "volume needs path", a user's trial).
        "output-ok": ({"output": {"volume": {"persistentVolumeClaim": {"claimName": "c"}}}}, None),
        "hidden": ({"model": {"name": "cnn", "hidden": [3]}}, "hidden applies only to the mlp"),
        "widths": ({"model": {"name": "cnn", "widths": [3]}}, "widths applies only to the vgg"),
        "widths-ok": ({"model": {"name": "vgg", "widths": [4, 4, 8]}}, None),
        # A misspelt name is refused by its enum alone, not also told its hidden
        # "applies only to the mlp model" (a new user's trial).
        "misspelt": ({"model": {"name": "mpl", "hidden": [3]}}, 'Unsupported value: "mpl"'),
        "image-shape": ({"data": {"format": "images", "train": {"path": "t"}, "test": {"path": "v"},
                                  "inputShape": [64], "classes": 2}}, "images data need inputShape [channels, height"),
        "image-shape-ok": ({"data": {"format": "images", "train": {"path": "t"}, "test": {"path": "v"},
                                     "inputShape": [8, 8], "classes": 2}}, None),
        "pipeline": ({"parallelism": {"mode": "pipeline", "workers": 1}},
                     "pipeline parallelism needs at least 2 workers"),
        "wall-clock": ({"budget": {"wallClock": "0m0s"}}, "wallClock must be longer than 0"),
        "wall-clock-ok": ({"budget": {"wallClock": "1m30s"}}, None),
        # Refused by its pattern alone, not also by a rule that could not
        # parse it (a user's trial: "Failed to parse duration" beside it).
        "wall-clock-malformed": ({"budget": {"wallClock": "banana"}}, "spec.budget.wallClock in body should match"),
        # Quantities as the Pod API takes them, refused before the job is stored.
        "quantity": ({"template": {"resources": {"requests": {"cpu": "lots"}}}},
                     "spec.template.resources.requests.cpu in body should match"),
        "quantity-negative": ({"template": {"resources": {"limits": {"memory": -1}}}},
                              "spec.template.resources.limits.memory in body should be greater than or equal to 0"),
        "quantity-ok": ({"template": {"resources": {"requests": {"cpu": "500m", "memory": "256Mi"},
                                                    "limits": {"nvidia.com/gpu": 1}}}}, None),
    }

    def test_rules_of_the_real_crd(self):
        self.kubectl.run("apply", "-f", CRDS_DIR)
        for name, (spec, message) in self.CASES.items():
            with self.subTest(name):
                body = {"apiVersion": "edgetrain.dev/v1alpha1", "kind": "TrainingJob",
                        "metadata": {"name": name},
                        "spec": {"model": {"name": "mlp"}, "data": {"dataset": "digits"}}}
                body["spec"].update(spec)
                r = self.api.post(TJ, body, dryRun="All")
                if message is None:
                    self.assertEqual(r.status, 201, r)
                else:
                    self.assertEqual(r.status, 422, r)
                    self.assertIn(message, r.json["message"])
                    if name == "misspelt":
                        self.assertNotIn("applies only", r.json["message"])
                    if name == "wall-clock-malformed":
                        self.assertNotIn("duration", r.json["message"].split("should match")[1])

    def test_a_blocking_schema_error_leaves_the_rules_unchecked(self):
        """A required field missing: the API server evaluates no CEL rule (one read
        spec.data and failed, "field not found", beside the real error: a user's
        trial), and says so once, in a cause without a field."""
        self.kubectl.run("apply", "-f", CRDS_DIR)
        body = {"apiVersion": "edgetrain.dev/v1alpha1", "kind": "TrainingJob", "metadata": {"name": "no-data"},
                "spec": {"model": {"name": "mlp"}}}
        r = self.api.post(TJ, body, dryRun="All")
        self.assertEqual(r.status, 422, r)
        message = r.json["message"]
        self.assertIn("spec.data: Required value", message)
        self.assertIn('<nil>: Invalid value: "null": some validation rules were not checked because the object was '
                      'invalid; correct the existing errors to complete validation', message)
        self.assertNotIn("field not found", message)


class NodesAndPods(KubectlTestCase):
    def test_get_nodes_and_pods_by_node(self):
        for n in ("edge-a", "edge-b"):
            self.assertEqual(self.api.post("/api/v1/nodes", node(
                n, labels={"node-role.kubernetes.io/worker": ""})).status, 201)
        self.api.post("/api/v1/nodes", node("edge-c", ready=False))
        lines = self.kubectl.run("get", "nodes").stdout.splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "STATUS", "ROLES", "AGE", "VERSION"])
        rows = {line.split()[0]: line.split() for line in lines[1:]}
        self.assertEqual(rows["edge-a"][1:3], ["Ready", "worker"])
        self.assertEqual(rows["edge-c"][1], "NotReady")
        for name, where in (("w0", "edge-a"), ("w1", "edge-b"), ("w2", "edge-a")):
            self.assertEqual(self.api.post("/api/v1/namespaces/default/pods",
                                           pod(name, node_name=where)).status, 201)
        out = self.kubectl.run("get", "pods", "--field-selector", "spec.nodeName=edge-a",
                               "-o", "name").stdout.split()
        self.assertEqual(out, ["pod/w0", "pod/w2"])
        wide = self.kubectl.run("get", "pods", "-o", "wide").stdout.splitlines()
        self.assertIn("NODE", wide[0].split())

    def test_apply_a_deployment_uses_strategic_merge_without_warnings(self):
        manifest = {"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "operator", "namespace": "default"},
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "op"}},
                             "template": {"metadata": {"labels": {"app": "op"}}, "spec": {
                                 "containers": [{"name": "op", "image": "edgetrain:1"},
                                                {"name": "sidecar", "image": "busybox:1"}]}}}}
        path = os.path.join(self.kubectl.cache, "deploy.json")
        for step in range(2):
            with open(path, "w") as f:
                json.dump(manifest, f)
            p = self.kubectl.run("apply", "-f", path)
            self.assertEqual(p.stderr, "")
            self.assertIn("created" if step == 0 else "configured", p.stdout)
            manifest["spec"]["template"]["spec"]["containers"].pop()
        live = self.api.get("/apis/apps/v1/namespaces/default/deployments/operator").json
        self.assertEqual([c["name"] for c in live["spec"]["template"]["spec"]["containers"]],
                         ["op"])


class Imperative(KubectlTestCase):
    def test_create_namespace_configmap_secret_then_delete_namespace(self):
        # kubectl create sends these as protobuf; the stand-in decodes that much
        k = self.kubectl
        self.assertIn("namespace/lab created", k.run("create", "namespace", "lab").stdout)
        k.run("create", "configmap", "plan", "--from-literal=workers=4", "-n", "lab")
        k.run("create", "secret", "generic", "token", "--from-literal=pw=s3cret", "-n", "lab")
        k.run("label", "namespace", "lab", "team=ml")
        self.assertEqual(self.api.get("/api/v1/namespaces/lab/configmaps/plan").json["data"],
                         {"workers": "4"})
        secret = self.api.get("/api/v1/namespaces/lab/secrets/token").json
        self.assertEqual(secret["type"], "Opaque")
        self.assertEqual(secret["data"], {"pw": "czNjcmV0"})
        self.assertEqual(self.api.get("/api/v1/namespaces/lab").json["metadata"]["labels"],
                         {"kubernetes.io/metadata.name": "lab", "team": "ml"})
        # kubectl delete waits until the namespace controller emulation has emptied it
        self.assertIn('namespace "lab" deleted', k.run("delete", "namespace", "lab").stdout)
        self.assertEqual(self.api.get("/api/v1/namespaces/lab").status, 404)
        self.assertEqual(self.api.get("/api/v1/namespaces/lab/configmaps").json["items"], [])


class OverTls(KubectlTestCase):
    tls = True

    def test_kubectl_with_token_and_ca(self):
        lines = self.kubectl.run("get", "namespaces").stdout.splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "STATUS", "AGE"])
        self.assertIn("kube-system", " ".join(lines))
        out = self.kubectl.run("version", "-o", "json").stdout
        self.assertEqual(json.loads(out)["serverVersion"]["minor"], "32")


if __name__ == "__main__":
    unittest.main()
