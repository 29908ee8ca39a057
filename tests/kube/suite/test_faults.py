"""Faults of the node emulator and the emulated node lifecycle controller: a partitioned
node goes NotReady with its pods running on (not ready in their Services' Endpoints), and
they stay Terminating after eviction until force-deleted, or until the node is declared
out of service; a killed node's processes die; spot nodes are pre-empted as their clouds
reclaim them; a link is rescaled, cut and restored, its Node's published rate following;
a node is slowed down; a node comes back. Then cleanup: the
stand-in leaves no process, namespace, qdisc or route behind after SIGTERM or SIGKILL."""

import http.client
import os
import shutil
import tempfile
import subprocess
import time
import unittest

from emulated_site import FAST, SiteTestCase, condition, container_state, phase, shell_pod
from harness import BUILD_DIR, REPO_ROOT, Standin, wait_until

SITE = """\
apiVersion: edgetrain.dev/v1alpha1
kind: ClusterProfile
metadata: {name: fault-site}
spec:
  nodes:
    - {name: gw}
    - name: robot
      link: {trace: %s/examples/traces/wifi-indoor-1.csv}
    - name: spot
      transient: true
      labels: {cloud.google.com/gke-spot: "true"}
    - name: spot-eks
      transient: true
      labels: {eks.amazonaws.com/capacityType: SPOT}
"""

# A pod whose program answers HTTP on its pod IP, so that the test sees it run without
# asking its kubelet.
SERVE = ("exec python3 -c \"import http.server, os; http.server.HTTPServer((os.environ['IP'], "
         "8080), http.server.SimpleHTTPRequestHandler).serve_forever()\"")


def answers(ip):
    try:
        c = http.client.HTTPConnection(ip, 8080, timeout=1)
        c.request("GET", "/")
        return c.getresponse().status == 200
    except OSError:
        return False


# A toleration of an unreachable node for ever (no tolerationSeconds): never evicted for it.
STAYS_ON_UNREACHABLE = [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                         "effect": "NoExecute"}]


def serving_pod(name, node, restart="Always", **spec):
    pod = shell_pod(name, SERVE, node=node, restart=restart, **spec)
    pod["spec"]["containers"][0]["env"] = [
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    pod["spec"]["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": 8080},
                                                      "periodSeconds": 1}
    return pod


class FaultsTest(SiteTestCase):
    profile = SITE

    def fault(self, node, action, **q):
        r = self.api.post(f"/_standin/nodes/{node}/{action}", None, **q)
        self.assertIn(r.status, (200, 202), r)
        return r.json

    def node(self, name):
        r = self.api.get(f"/api/v1/nodes/{name}")
        return r.json if r.status == 200 else None

    def taint_keys(self, name):
        return {t["key"] for t in (self.node(name) or {}).get("spec", {}).get("taints") or []}

    def running_pod(self, name, node, **spec):
        pod = serving_pod(name, node, **spec)
        pod["metadata"]["labels"] = {"app": name}
        self.apply(pod)
        p = self.wait_pod(name, lambda p: condition(p, "Ready") == "True")
        self.assertTrue(wait_until(lambda: answers(p["status"]["podIP"]), 5))
        return p["status"]["podIP"]

    def endpoints(self, service, predicate):
        """(ready, not ready) addresses of the Service once predicate holds of them."""
        def ips(e, key):
            return {a["ip"] for s in (e or {}).get("subsets") or [] for a in s.get(key) or []}
        e = self.wait_for("/api/v1/namespaces/default/endpoints", service, lambda e: predicate(
            ips(e, "addresses"), ips(e, "notReadyAddresses")), timeout=10)
        return ips(e, "addresses"), ips(e, "notReadyAddresses")

    def test_a_partitioned_node_goes_not_ready_and_its_evicted_pods_stay_terminating(self):
        self.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "partitioned"},
                    "spec": {"clusterIP": "None", "selector": {"app": "partitioned"},
                             "ports": [{"port": 8080}]}})
        ip = self.running_pod("partitioned", "robot")
        self.endpoints("partitioned", lambda ready, not_ready: ready == {ip})
        # One that tolerates an unreachable node for ever (no tolerationSeconds): the
        # admission's 2 s default must not replace it, and it is never evicted.
        patient = shell_pod("patient", "sleep 1000", node="robot", grace=0,
                            tolerations=STAYS_ON_UNREACHABLE)
        self.apply(patient)
        self.wait_pod("patient", lambda p: phase(p) == "Running")
        self.fault("robot", "partition")
        self.wait_for("/api/v1/nodes", "robot", lambda n: condition(n, "Ready") == "Unknown",
                      timeout=10)
        # The lifecycle controller marks the condition, then taints: two writes.
        self.assertTrue(wait_until(lambda: "node.kubernetes.io/unreachable" in self.taint_keys("robot"), 5),
                        self.taint_keys("robot"))
        self.wait_pod("partitioned", lambda p: condition(p, "Ready") == "False")
        self.endpoints("partitioned", lambda ready, not_ready: (ready, not_ready) == (set(), {ip}))
        self.assertTrue(answers(ip), "its pods run on, as on a partitioned node")
        # After its 2 s of default toleration, evicted; no kubelet confirms it: Terminating.
        self.wait_pod("partitioned", lambda p: p["metadata"].get("deletionTimestamp"), timeout=10)
        self.endpoints("partitioned", lambda ready, not_ready: not (ready or not_ready))
        time.sleep(1.5)  # longer than its grace: still there, as in Kubernetes
        self.assertIsNotNone(self.get_pod("partitioned"))
        self.assertIsNone(self.get_pod("patient")["metadata"].get("deletionTimestamp"),
                          "it tolerates the unreachable node for ever")
        self.kubectl.run("delete", "pod", "partitioned", "--force", "--grace-period=0")
        self.assertIsNone(self.get_pod("partitioned"))
        self.fault("robot", "revive")
        self.wait_for("/api/v1/nodes", "robot", lambda n: condition(n, "Ready") == "True",
                      timeout=10)
        self.assertTrue(wait_until(lambda: not answers(ip), 5),
                        "back in touch, the kubelet stops the pod that was deleted meanwhile")
        self.assertTrue(wait_until(lambda: "node.kubernetes.io/unreachable" not in
                                   self.taint_keys("robot"), 5))
        self.kubectl.run("delete", "service", "partitioned")
        self.kubectl.run("delete", "pod", "patient")

    def test_a_killed_node_loses_its_processes_and_restarts_them_when_revived(self):
        # Pods that are not evicted while the node is down, however long the test takes.
        ip = self.running_pod("killed", "gw", tolerations=STAYS_ON_UNREACHABLE)
        self.apply(serving_pod("once", "gw", restart="Never", tolerations=STAYS_ON_UNREACHABLE))
        once_ip = self.wait_pod("once", lambda p: condition(p, "Ready") == "True")["status"]["podIP"]
        self.fault("gw", "kill")
        self.assertFalse(answers(ip) or answers(once_ip), "its processes died with it")
        self.wait_for("/api/v1/nodes", "gw", lambda n: condition(n, "Ready") == "Unknown",
                      timeout=10)
        self.fault("gw", "revive")
        # What a runtime reports of a container from before the node went down; then
        # restartPolicy: Always restarts it, Never leaves the pod Failed.
        lost = {"exitCode": 255, "reason": "Unknown"}
        p = self.wait_pod("killed", lambda p: container_state(p).get("restartCount") == 1 and
                          condition(p, "Ready") == "True", timeout=15)
        self.assertEqual({k: container_state(p)["lastState"]["terminated"][k] for k in lost}, lost)
        self.assertTrue(wait_until(lambda: answers(p["status"]["podIP"]), 5))
        once = self.wait_pod("once", lambda p: phase(p) == "Failed", timeout=10)
        self.assertEqual({k: container_state(once)["state"]["terminated"][k] for k in lost}, lost)
        self.assertEqual(container_state(once)["restartCount"], 0)
        self.assertFalse(answers(once_ip), "restartPolicy Never: not started again")
        self.kubectl.run("delete", "pod", "killed", "once")

    def test_a_pod_deleted_while_its_node_was_dead_is_not_started_when_it_comes_back(self):
        # Its deletion waits for the kubelet (Terminating); back, the kubelet confirms it
        # and starts nothing. Its status had gone Pending with a new IP, read as the pod
        # back, and the operator counted a second recovery (a new user's trial).
        ip = self.running_pod("doomed", "gw", tolerations=STAYS_ON_UNREACHABLE)
        self.fault("gw", "kill")
        self.wait_for("/api/v1/nodes", "gw", lambda n: condition(n, "Ready") == "Unknown",
                      timeout=10)
        self.kubectl.run("delete", "pod", "doomed", "--wait=false")
        self.wait_pod("doomed", lambda p: p["metadata"].get("deletionTimestamp"))
        watch = self.api.watch("/api/v1/namespaces/default/pods", fieldSelector="metadata.name=doomed")
        self.fault("gw", "revive")
        seen = []
        while True:
            ev = watch.next(timeout=20)
            self.assertIsNotNone(ev, f"never deleted; seen {seen}")
            status = ev["object"].get("status") or {}
            seen.append((ev["type"], status.get("phase"), status.get("podIP")))
            if ev["type"] == "DELETED":
                break
        watch.close()
        self.assertNotIn("Pending", [p for _, p, _ in seen], seen)
        self.assertEqual({address for _, _, address in seen} - {ip, None}, set(), seen)
        self.assertFalse(answers(ip))

    def test_spot_nodes_are_preempted_as_their_cloud_reclaims_them(self):
        self.running_pod("on-spot", "spot")
        self.running_pod("on-eks", "spot-eks")
        # GKE's notice is a NoSchedule taint; EKS's termination handler's a NoExecute one.
        for node, pod, notice in (("spot", "on-spot", ("cloud.google.com/impending-node-termination",
                                                       "NoSchedule")),
                                  ("spot-eks", "on-eks", ("aws-node-termination-handler/spot-itn",
                                                          "NoExecute"))):
            watch = self.api.watch("/api/v1/nodes", fieldSelector=f"metadata.name={node}")
            self.fault(node, "preempt", notice="5")
            tainted = False
            while True:
                ev = watch.next(timeout=20)
                self.assertIsNotNone(ev, f"{node} never went")
                taints = {(t["key"], t["effect"]) for t in
                          ev["object"].get("spec", {}).get("taints") or []}
                tainted = tainted or notice in taints
                if ev["type"] == "DELETED":
                    break
            watch.close()
            self.assertTrue(tainted, f"the termination notice {notice} came first")
            self.assertIsNone(self.get_pod(pod), "evicted before the node went")
            self.fault(node, "revive")
            self.wait_for("/api/v1/nodes", node, lambda n: condition(n, "Ready") == "True")

    def test_an_out_of_service_node_has_its_pods_force_deleted(self):
        # Someone knows the partitioned node is down for good and says so (non-graceful
        # node shutdown): its pods go at once instead of staying Terminating.
        ip = self.running_pod("stranded", "robot")
        self.fault("robot", "partition")
        self.wait_for("/api/v1/nodes", "robot", lambda n: condition(n, "Ready") == "Unknown",
                      timeout=10)
        self.kubectl.run("taint", "node", "robot",
                         "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
        self.wait_pod("stranded", lambda p: p is None, timeout=10)
        events = self.api.get("/api/v1/namespaces/default/events",
                              fieldSelector="involvedObject.name=stranded").json["items"]
        self.assertIn(("PodGC", "Force-deleting: the node is out of service"),
                      {(e["reason"], e["message"]) for e in events})
        self.kubectl.run("taint", "node", "robot", "node.kubernetes.io/out-of-service-")
        self.fault("robot", "revive")
        self.wait_for("/api/v1/nodes", "robot", lambda n: condition(n, "Ready") == "True",
                      timeout=10)
        self.assertTrue(wait_until(lambda: not answers(ip), 5),
                        "back in touch, the kubelet stops the pod that was deleted meanwhile")

    def test_a_slower_node_publishes_its_compute_score_and_leaves_running_pods_alone(self):
        ip = self.running_pod("steady", "gw")
        started = container_state(self.get_pod("steady"))["state"]["running"]["startedAt"]
        self.assertEqual(self.fault("gw", "compute", slowdown="4")["computeSlowdown"], 4)

        def score(n):  # with the slowdown agents are to apply, which must agree with it
            notes = n["metadata"]["annotations"]
            self.assertAlmostEqual(float(notes["edgetrain.dev/emulated-slowdown"]) *
                                   float(notes["edgetrain.dev/compute-score"]), 1, 12, notes)
            return notes["edgetrain.dev/compute-score"]
        self.assertEqual(score(self.node("gw")), "0.25", "published at once")
        self.assertEqual(self.node("gw")["metadata"]["annotations"]["edgetrain.dev/emulated-slowdown"], "4")
        self.assertIn("edgetrain.dev/compute-score 1 -> 0.25 (compute slowdown 4)",
                      self.kubectl.run("describe", "node", "gw").stdout)
        pod = self.get_pod("steady")
        self.assertEqual((container_state(pod)["restartCount"],
                          container_state(pod)["state"]["running"]["startedAt"]), (0, started),
                         "the process that was running runs on, untouched")
        self.assertTrue(answers(ip))
        # Out of touch, a node cannot say it is slower; it does once it is back.
        self.fault("robot", "partition")
        self.fault("robot", "compute", slowdown="10")
        self.assertEqual(score(self.node("robot")), "1")
        self.fault("robot", "revive")
        self.wait_for("/api/v1/nodes", "robot", lambda n: score(n) == "0.1", timeout=5)
        self.fault("gw", "compute", slowdown="1")
        self.assertEqual(score(self.node("gw")), "1")
        self.assertEqual(self.api.post("/_standin/nodes/gw/compute", None, slowdown="0.5").status,
                         400, "no node is faster than this machine's 1")
        self.kubectl.run("delete", "pod", "steady")

    @unittest.skipUnless(os.geteuid() == 0, "a link fault needs the kernel's links (root)")
    def test_a_link_is_rescaled_cut_and_restored(self):
        def published(name):  # what the site's measurement says of it, None if nothing
            return self.node(name)["metadata"]["annotations"].get("edgetrain.dev/link-mbps")
        mean = float(published("robot"))
        full = self.api.get("/_standin/nodes/robot").json["linkMbps"]
        self.assertGreater(full, 0)
        half = self.fault("robot", "link", scale="0.5")["linkMbps"]
        self.assertAlmostEqual(half, full / 2, delta=full * 0.3)  # the trace moves meanwhile
        self.assertEqual(float(published("robot")), mean * 0.5, "the measured mean follows")
        self.assertEqual(self.fault("robot", "link", scale="0")["linkMbps"], 0)
        self.assertEqual(published("robot"), "0")
        self.assertGreater(self.fault("robot", "link", scale="1")["linkMbps"], 0)
        self.assertEqual(float(published("robot")), mean, "restored")
        self.assertIn("edgetrain.dev/link-mbps 0 -> ", self.kubectl.run("describe", "node", "robot").stdout)
        self.assertEqual(self.api.post("/_standin/nodes/gw/link", None, scale="0.5").status, 409,
                         "a wired link can be cut and restored, not rescaled")
        self.assertIsNone(published("gw"), "wired: nothing measured")
        self.assertEqual(self.fault("gw", "link", scale="0")["linkMbps"], 0)
        self.assertEqual(published("gw"), "0", "cut, it carries nothing")
        self.fault("gw", "link", scale="1")
        self.assertIsNone(published("gw"), "whole again: wired")

    @unittest.skipUnless(os.geteuid() == 0, "a link fault needs the kernel's links (root)")
    def test_a_pods_traffic_follows_its_nodes_link(self):
        # From the host (where the operator reads /progress) to a pod on robot: the
        # bytes cross robot's link, shaped by its trace, as agents' exchanges do.
        size = 500_000
        pod = serving_pod("blob", "robot")
        pod["spec"]["containers"][0]["command"][-1] = (
            f"mkdir /tmp/www && head -c {size} /dev/zero > /tmp/www/blob && cd /tmp/www && "
            + SERVE)
        self.apply(pod)
        ip = self.wait_pod("blob", lambda p: condition(p, "Ready") == "True")["status"]["podIP"]

        def fetch(timeout):
            """Seconds the blob took, None if it did not come in time."""
            t0 = time.monotonic()
            try:
                c = http.client.HTTPConnection(ip, 8080, timeout=timeout)
                c.request("GET", "/blob")
                self.assertEqual(len(c.getresponse().read()), size)
                return time.monotonic() - t0
            except (OSError, http.client.HTTPException):
                return None
            finally:
                c.close()
        with open(os.path.join(REPO_ROOT, "examples", "traces", "wifi-indoor-1.csv")) as f:
            peak = max(float(line.split(",")[1]) for line in f.read().split()[1:])
        self.fault("robot", "link", scale="0.1")
        took = fetch(20)
        fastest = 8 * size / (peak * 0.1 * 1e6)  # at the trace's peak, a tenth of it
        self.assertIsNotNone(took)
        self.assertGreater(took, fastest / 2, "never much faster than the link (half: tbf's burst)")
        self.fault("robot", "link", scale="0")
        self.assertIsNone(fetch(1), "a cut link carries next to nothing")
        self.fault("robot", "link", scale="1")
        self.assertIsNotNone(fetch(20), "restored")
        print(f"\n{size} bytes from a pod on robot at a tenth of its link: {took:.2f} s "
              f"(at least {fastest:.2f} s at the trace's peak)")
        self.kubectl.run("delete", "pod", "blob", "--wait=false")


def our_namespaces(pid):
    return [n for n in os.listdir("/var/run/netns")
            if n.startswith(f"et{pid}-")] if os.path.isdir("/var/run/netns") else []


class CleanupTest(unittest.TestCase):
    """SIGTERM and SIGKILL of the stand-in: every process, namespace, qdisc and route goes,
    and its folder (at once after SIGTERM, at the next start after SIGKILL)."""

    def setUp(self):
        # A TMPDIR of the test's own: the stand-in's folder is looked for there, and any
        # stand-in that starts clears a killed one's (under ctest -j2 other suites do).
        self.tmp = tempfile.mkdtemp(prefix="standin-cleanup-")
        saved = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = self.tmp
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.addCleanup(lambda: os.environ.pop("TMPDIR") if saved is None
                        else os.environ.__setitem__("TMPDIR", saved))

    def folders(self):
        return [os.path.join(self.tmp, d) for d in os.listdir(self.tmp)
                if d.startswith("kube-standin-") and os.path.isdir(os.path.join(self.tmp, d))]

    def start_site(self, marker):
        profile = os.path.join(self.tmp, "profile.yaml")
        with open(profile, "w") as f:
            f.write(SITE.replace("%s", REPO_ROOT))
        server = Standin("--nodes", profile, "--build-dir", BUILD_DIR, *FAST)
        server.start()
        api = server.client()
        pod = shell_pod(marker, f"sleep 1000 # {marker}", node="robot", restart="Always")
        r = api.post("/api/v1/namespaces/default/pods", pod)
        self.assertEqual(r.status, 201, r)
        self.assertTrue(wait_until(lambda: subprocess.run(["pgrep", "-f", marker],
                                                          capture_output=True).returncode == 0, 10))
        links = subprocess.run(["pgrep", "-f", f"node-links --nodes {profile}"],
                               capture_output=True, text=True).stdout.split()
        api.close()
        self.assertEqual(len(self.folders()), 1, "its folder")
        return server, links[0] if links else None

    def assertNothingLeft(self, marker, links_pid):
        gone = wait_until(lambda: subprocess.run(["pgrep", "-f", marker],
                                                 capture_output=True).returncode != 0, 10)
        self.assertTrue(gone, f"the pod's processes outlived the stand-in ({marker})")
        if links_pid:
            self.assertTrue(wait_until(lambda: not our_namespaces(links_pid), 15),
                            our_namespaces(links_pid))
            # A namespace's devices (and the host routes through them) go when
            # the kernel frees it, after the last process in it has exited.
            def shows(command):
                return f"et{links_pid}" in subprocess.run(command, capture_output=True, text=True).stdout
            self.assertTrue(wait_until(lambda: not shows(["ip", "route"]), 15),
                            subprocess.run(["ip", "route"], capture_output=True, text=True).stdout)
            self.assertTrue(wait_until(lambda: not shows(["tc", "qdisc"]), 15),
                            subprocess.run(["tc", "qdisc"], capture_output=True, text=True).stdout)

    def test_sigterm_removes_everything_it_made(self):
        marker = f"sigterm-{os.getpid()}"
        server, links = self.start_site(marker)
        t0 = time.monotonic()
        server.stop()
        self.assertEqual(server.returncode, 0)
        self.assertNothingLeft(marker, links)
        self.assertEqual(self.folders(), [], "its folder went with it")
        print(f"\ncleanup after SIGTERM: {time.monotonic() - t0:.2f} s")

    def test_sigkill_leaves_nothing_and_the_next_start_clears_its_folder(self):
        marker = f"sigkill-{os.getpid()}"
        server, links = self.start_site(marker)
        t0 = time.monotonic()
        server.proc.kill()
        server.proc.wait()
        self.assertNothingLeft(marker, links)
        print(f"\ncleanup after SIGKILL: {time.monotonic() - t0:.2f} s")
        left = self.folders()
        self.assertEqual(len(left), 1, left)
        with Standin() as next_one:
            self.assertIn(f"removed {left[0]}, left by a stand-in that was killed", next_one.log())
        self.assertFalse(os.path.exists(left[0]))
        server.proc.stdout.close()
        server.stderr.close()
        server.proc = None
        # The harness's own folder for it (its kubeconfig), which stop() would
        # have removed: in /tmp, where Python's tempfile had settled before
        # this test's TMPDIR, and left there by every run.
        shutil.rmtree(server.workdir, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
