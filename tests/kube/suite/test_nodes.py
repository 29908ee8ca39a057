"""The node emulator's kubelets (tests/kube/README.md, "Node emulator"): Nodes registered
from a profile, their leases, nodes on paper, and pods run as local processes - phases,
exit codes, restarts with back-off, logs, readiness, volumes, the downward API, the
service account, users and the read-only root, deletion with grace."""

import json
import os
import subprocess
import unittest

import yaml

from harness import EDGETRAIN, REPO_ROOT, requires_built, wait_until
from test_kubectl import read_line
from emulated_site import (EDGE_SITE, EDGE_SITE_PATH, SiteTestCase, condition, container_state,
                           phase, seen_uid, shell_pod)


class NodesTest(SiteTestCase):
    def test_nodes_register_from_the_profile_with_their_labels_and_leases(self):
        nodes = {n["metadata"]["name"]: n for n in self.api.get("/api/v1/nodes").json["items"]}
        self.assertEqual(sorted(nodes), ["gw", "paper", "robot"])
        robot = nodes["robot"]
        labels, notes = robot["metadata"]["labels"], robot["metadata"]["annotations"]
        self.assertEqual(labels["kubernetes.io/arch"], "arm64")
        self.assertEqual(labels["kubernetes.io/hostname"], "robot")
        self.assertEqual(labels["kubernetes.io/os"], "linux")
        self.assertEqual(labels["edgetrain.dev/transient"], "false")
        self.assertEqual(notes["edgetrain.dev/compute-score"], "0.25")
        self.assertEqual(notes["edgetrain.dev/emulated-slowdown"], "4")
        self.assertGreater(float(notes["edgetrain.dev/link-mbps"]), 0)
        self.assertNotIn("edgetrain.dev/link-mbps", nodes["gw"]["metadata"]["annotations"], "wired")
        self.assertEqual(notes["edgetrain.dev/compute-watts"], "15")
        self.assertEqual(notes["edgetrain.dev/emulated-stream-rate"], "30", "its own stream of samples")
        self.assertNotIn("edgetrain.dev/emulated-stream-rate", nodes["gw"]["metadata"]["annotations"])
        self.assertEqual(nodes["gw"]["status"]["allocatable"]["cpu"], "4")
        self.assertEqual(nodes["gw"]["status"]["capacity"]["memory"], "8Gi")
        self.assertEqual(condition(robot, "Ready"), "True")
        leases = self.api.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
        held = {l["metadata"]["name"]: l for l in leases.json["items"]}
        self.assertEqual(sorted(held), ["gw", "robot"], "a node on paper renews no lease")
        renewed = self.wait_for("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                                "gw", lambda l: l["spec"]["renewTime"] !=
                                held["gw"]["spec"]["renewTime"], timeout=5)
        self.assertEqual(renewed["spec"]["holderIdentity"], "gw")
        self.assertEqual(condition(nodes["paper"], "Ready"), "True", "on paper, and Ready")

    def test_a_pod_runs_with_its_environment_volumes_and_service_account(self):
        self.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plan"},
                    "data": {"plan.json": '{"v": 1}'}})
        script = ('echo "$GREETING $POD $NODE $IP $NS"; cat /etc/plan/plan.json; echo; '
                  'cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; '
                  'test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token; '
                  'echo api=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT; id -u; hostname; '
                  'echo scratch > /scratch/f && echo wrote; touch /etc/x 2>/dev/null || echo ro; '
                  'touch ~/x 2>/dev/null || echo no-home')
        pod = shell_pod("env", script, securityContext={"runAsUser": 1000})
        c = pod["spec"]["containers"][0]
        c["env"] = [{"name": "GREETING", "value": "hi-$(NODE)"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]
        c["env"].insert(0, c["env"].pop(2))  # NODE first, so that $(NODE) expands
        c["securityContext"] = {"readOnlyRootFilesystem": True}
        c["volumeMounts"] = [{"name": "plan", "mountPath": "/etc/plan"},
                             {"name": "scratch", "mountPath": "/scratch"}]
        pod["spec"]["volumes"] = [{"name": "plan", "configMap": {"name": "plan"}},
                                  {"name": "scratch", "emptyDir": {}}]
        self.apply(pod)
        done = self.wait_pod("env", lambda p: phase(p) in ("Succeeded", "Failed"))
        log = self.kubectl.run("logs", "env").stdout.splitlines()
        self.assertEqual(phase(done), "Succeeded", log)
        ip = done["status"]["podIP"]
        self.assertEqual(log[0], f"hi-gw env gw {ip} default")
        self.assertEqual(log[1:4], ['{"v": 1}', "default", "token"])
        self.assertTrue(log[4].startswith("api=") and ":" in log[4], log[4])
        self.assertEqual(log[5:], [seen_uid(1000), "env", "wrote", "ro", "no-home"])
        self.assertEqual(done["status"]["hostIP"], self.node_address("gw"))
        self.assertEqual(container_state(done)["state"]["terminated"]["reason"], "Completed")

    def node_address(self, name):
        n = self.api.get(f"/api/v1/nodes/{name}").json
        return next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")

    def test_configmap_and_secret_volumes_follow_their_sources(self):
        # How a re-plan reaches a running agent: its plan's ConfigMap changes, and the
        # kubelet swaps the file in place (a ..data link, so no reader sees half of it).
        def sources(generation, token):
            return ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "live-plan"},
                     "data": {"plan.json": f'{{"generation": {generation}}}'}},
                    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "live-key"},
                     "stringData": {"token": token}})
        self.apply(*sources(1, "first"))
        pod = shell_pod("follower", (
            "readlink /etc/plan/plan.json; last=; while true; do "
            "now=\"$(cat /etc/plan/plan.json) $(cat /etc/key/token)\"; "
            "[ \"$now\" = \"$last\" ] || echo \"$now\"; last=$now; sleep 0.05; done"),
            restart="Always", grace=0)
        pod["spec"]["containers"][0]["volumeMounts"] = [
            {"name": "plan", "mountPath": "/etc/plan"}, {"name": "key", "mountPath": "/etc/key"}]
        pod["spec"]["volumes"] = [{"name": "plan", "configMap": {"name": "live-plan"}},
                                  {"name": "key", "secret": {"secretName": "live-key"}}]
        self.apply(pod)
        self.wait_pod("follower", lambda p: phase(p) == "Running")
        follow = self.kubectl.start("logs", "-f", "follower")
        try:
            self.assertEqual(read_line(follow), "..data/plan.json\n")
            self.assertEqual(read_line(follow), '{"generation": 1} first\n')
            self.apply(*sources(2, "first"))
            self.assertEqual(read_line(follow), '{"generation": 2} first\n')
            self.apply(*sources(2, "second"))
            self.assertEqual(read_line(follow), '{"generation": 2} second\n')
        finally:
            follow.kill()
            follow.wait()
            follow.stderr.close()  # its stdout is read_line's, to the end
        self.assertEqual(container_state(self.get_pod("follower"))["restartCount"], 0,
                         "the same process saw both changes")
        self.kubectl.run("delete", "pod", "follower", "--wait=false")

    def test_a_finalizer_holds_a_deleted_pod_after_its_containers_end(self):
        pod = shell_pod("held", "trap 'exit 0' TERM; echo up; while true; do sleep 0.05; done")
        pod["metadata"]["finalizers"] = ["edgetrain.dev/test-hold"]
        self.apply(pod)
        self.assertTrue(wait_until(lambda: self.api.get(self.pod_path("held") + "/log").raw
                                   .startswith(b"up"), 10))
        self.api.delete(self.pod_path("held"))
        ended = self.wait_pod("held", lambda p: p is None or
                              "terminated" in container_state(p).get("state", {}), timeout=10)
        self.assertIsNotNone(ended, "the finalizer holds it")
        self.assertTrue(ended["metadata"].get("deletionTimestamp"))
        self.assertEqual(container_state(ended)["state"]["terminated"]["exitCode"], 0)
        self.assertEqual(phase(ended), "Succeeded")
        self.assertEqual(self.api.patch(self.pod_path("held"),
                                        {"metadata": {"finalizers": None}}).status, 200)
        self.wait_pod("held", lambda p: p is None, timeout=5)

    def test_exit_codes_restarts_with_back_off_and_previous_logs(self):
        self.apply(shell_pod("crash", "echo run; exit 3", restart="OnFailure"))
        p = self.wait_pod("crash", lambda p: container_state(p).get("restartCount", 0) >= 2)
        last = container_state(p)["lastState"]["terminated"]
        self.assertEqual((last["exitCode"], last["reason"]), (3, "Error"))
        self.assertEqual(phase(p), "Running", "restartPolicy OnFailure keeps it going")
        self.wait_pod("crash", lambda p: "CrashLoopBackOff" in str(container_state(p)["state"]))
        self.assertEqual(self.kubectl.run("logs", "crash", "--previous").stdout, "run\n")
        self.apply(shell_pod("fails", "exit 7"))
        p = self.wait_pod("fails", lambda p: phase(p) == "Failed")
        self.assertEqual(container_state(p)["state"]["terminated"]["exitCode"], 7)
        self.assertEqual(container_state(p)["restartCount"], 0, "restartPolicy Never")

    def test_an_unknown_image_cannot_be_pulled(self):
        pod = shell_pod("nopull", "true")
        pod["spec"]["containers"][0]["image"] = "registry.example/nobody/nothing:1"
        self.apply(pod)
        p = self.wait_pod("nopull", lambda p: container_state(p).get("state", {}).get(
            "waiting", {}).get("reason") in ("ErrImagePull", "ImagePullBackOff"))
        self.assertEqual(phase(p), "Pending")
        self.assertIn("image table", container_state(p)["state"]["waiting"]["message"])

    def test_logs_follow_and_readiness_from_an_http_probe(self):
        script = ("echo starting; sleep 0.3; "
                  "exec python3 -c \"import http.server, os; print('serving', flush=True); "
                  "http.server.HTTPServer((os.environ['IP'], 8080), "
                  "http.server.SimpleHTTPRequestHandler).serve_forever()\"")
        pod = shell_pod("web", script, restart="Always")
        c = pod["spec"]["containers"][0]
        c["env"] = [{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
        c["readinessProbe"] = {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}
        self.apply(pod)
        follow = self.kubectl.start("logs", "-f", "web")
        self.assertEqual(follow.stdout.readline(), "starting\n")
        self.assertEqual(follow.stdout.readline(), "serving\n")
        ready = self.wait_pod("web", lambda p: condition(p, "Ready") == "True")
        self.assertTrue(container_state(ready)["ready"])
        self.assertEqual([condition(ready, c) for c in ("PodScheduled", "Initialized",
                                                        "ContainersReady")], ["True"] * 3)
        self.kubectl.run("delete", "pod", "web", "--wait=false")
        self.assertEqual(follow.wait(10), 0, "kubectl logs -f ends with the container")

    def test_failed_liveness_and_startup_probes_restart_the_container(self):
        # Alive until it deletes what its liveness probe asks for.
        fading = shell_pod("fading", "mkdir /tmp/www && cd /tmp/www && echo ok > alive && "
                           "{ python3 -m http.server --bind $IP 8080 & } && sleep 1 && rm alive "
                           "&& sleep 1000", restart="Always")
        c = fading["spec"]["containers"][0]
        c["env"] = [{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
        c["livenessProbe"] = {"httpGet": {"path": "/alive", "port": 8080}, "periodSeconds": 1,
                              "failureThreshold": 2}
        # Never starts listening: its startup probe gives up; nothing else is probed.
        silent = shell_pod("silent", "sleep 1000", restart="Always")
        silent["spec"]["containers"][0]["startupProbe"] = {
            "tcpSocket": {"port": 8081}, "periodSeconds": 1, "failureThreshold": 2}
        silent["spec"]["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": 8081}}
        self.apply(fading, silent)
        running = self.wait_pod("silent", lambda p: "running" in container_state(p).get("state", {}))
        self.assertEqual((container_state(running)["started"], container_state(running)["ready"]),
                         (False, False), "not started before its startup probe passes")
        for name, kind in (("fading", "Liveness"), ("silent", "Startup")):
            p = self.wait_pod(name, lambda p: container_state(p).get("restartCount", 0) >= 1)
            self.assertIn("terminated", container_state(p)["lastState"])
            events = {(e["reason"], e["message"].split(":")[0]) for e in self.api.get(
                "/api/v1/namespaces/default/events",
                fieldSelector=f"involvedObject.name={name}").json["items"]}
            self.assertIn(("Unhealthy", f"{kind} probe failed"), events)
            self.assertIn(("Killing", f"Container main failed {kind.lower()} probe, will be "
                                      f"restarted"), events)
        self.assertNotIn("Readiness probe failed", str(self.api.get(
            "/api/v1/namespaces/default/events", fieldSelector="involvedObject.name=silent").json),
            "readiness waits for the startup probe")
        self.kubectl.run("delete", "pod", "fading", "silent", "--wait=false")

    def test_deletion_sends_sigterm_then_sigkill_after_the_grace_period(self):
        polite = shell_pod("polite", "trap 'echo term; exit 0' TERM; echo up; "
                           "while true; do sleep 0.05; done", grace=30)
        stubborn = shell_pod("stubborn", "trap '' TERM; echo up; while true; do sleep 0.05; done",
                             grace=1)
        self.apply(polite, stubborn)
        for name in ("polite", "stubborn"):
            self.wait_pod(name, lambda p: phase(p) == "Running")
            # "up" comes after the trap: a SIGTERM before it would be ignored by PID 1.
            self.assertTrue(wait_until(lambda: self.api.get(self.pod_path(name) + "/log").raw
                                       .startswith(b"up"), 10))
        for name in ("polite", "stubborn"):
            self.api.delete(self.pod_path(name))
        held = self.get_pod("stubborn")
        self.assertIsNotNone(held, "a running pod is deleted gracefully")
        self.assertEqual(held["metadata"]["deletionGracePeriodSeconds"], 1)
        for name in ("polite", "stubborn"):
            self.wait_for(self.pod_path(), name, lambda p: p is None, timeout=10)


class EdgeSiteTest(SiteTestCase):
    """examples/nodes/edge-site.yaml as Nodes: what the operator will read of a site."""
    profile = EDGE_SITE
    extra_args = ["--pod-network", "loopback"]  # Nodes are the same on either network

    def nodes(self):
        return {n["metadata"]["name"]: n for n in self.api.get("/api/v1/nodes").json["items"]}

    def test_the_example_site_registers_its_gateway_robots_board_and_spot_vms(self):
        nodes = self.nodes()
        self.assertEqual(sorted(nodes), ["gateway", "jetson-1", "robot-1", "robot-2", "robot-3",
                                         "spot-1", "spot-2"])
        self.assertTrue(all(condition(n, "Ready") == "True" for n in nodes.values()))
        labels = {name: n["metadata"]["labels"] for name, n in nodes.items()}
        notes = {name: n["metadata"]["annotations"] for name, n in nodes.items()}
        taints = {name: n["spec"].get("taints") for name, n in nodes.items()}
        transient = {name for name, l in labels.items() if l["edgetrain.dev/transient"] == "true"}
        self.assertEqual(transient, {"spot-1", "spot-2"})
        self.assertEqual(labels["jetson-1"]["kubernetes.io/arch"], "arm64")
        self.assertEqual(labels["spot-1"]["cloud.google.com/gke-spot"], "true")
        self.assertEqual(taints["spot-1"], [{"key": "cloud.google.com/gke-spot", "value": "true",
                                             "effect": "NoSchedule"}])
        self.assertEqual(labels["spot-2"]["eks.amazonaws.com/capacityType"], "SPOT")
        self.assertIsNone(taints["spot-2"], "EKS labels its spot nodes and does not taint them")
        self.assertEqual({k: nodes["spot-2"]["status"]["capacity"][k] for k in ("cpu", "memory", "pods")},
                         {"cpu": "8", "memory": "32Gi", "pods": "110"})
        self.assertEqual(nodes["spot-2"]["status"]["allocatable"], nodes["spot-2"]["status"]["capacity"])
        self.assertEqual([notes["spot-2"][f"edgetrain.dev/{k}"] for k in
                          ("memory", "compute-watts", "communicate-watts", "idle-watts")],
                         ["32Gi", "60", "20", "15"])
        wireless = {name for name, n in notes.items() if "edgetrain.dev/link-mbps" in n}
        self.assertEqual(wireless, set(nodes) - {"gateway"}, "the wired gateway publishes no link")

    @requires_built(EDGETRAIN)
    def test_nodes_publish_the_numbers_edgetrain_plan_places_by(self):
        # `edgetrain plan` reads the profile, the operator the Nodes: they must agree.
        plan = json.loads(subprocess.run(
            [EDGETRAIN, "plan", os.path.join(REPO_ROOT, "examples", "robot-team.yaml"),
             "--nodes", EDGE_SITE_PATH, "--json"], capture_output=True, text=True, check=True).stdout)
        slowdowns = {n["name"]: (n.get("compute") or {}).get("slowdown", 1)
                     for n in yaml.safe_load(EDGE_SITE)["spec"]["nodes"]}
        nodes = self.nodes()
        for verdict in plan["nodes"]:
            notes = nodes[verdict["node"]]["metadata"]["annotations"]
            link = notes.get("edgetrain.dev/link-mbps")
            self.assertEqual((float(notes["edgetrain.dev/compute-score"]),
                              None if link is None else float(link)),
                             (verdict["computeScore"], verdict.get("linkMbps")), verdict["node"])
            self.assertEqual(float(notes["edgetrain.dev/emulated-slowdown"]),
                             slowdowns[verdict["node"]], verdict["node"])


    @requires_built(EDGETRAIN)
    def test_a_pipeline_planned_on_the_cluster_says_the_operator_times_its_layers_again(self):
        # The stages shown are this machine's timing; the operator's check pod times the
        # layers again (a new user took them for the cluster's).
        planned = subprocess.run([EDGETRAIN, "plan", os.path.join(REPO_ROOT, "examples", "vgg-pipeline.yaml"),
                                  "--kubeconfig", self.server.kubeconfig], capture_output=True, text=True)
        self.assertEqual(planned.returncode, 0, planned.stderr)
        self.assertIn("note: the model's layers are timed here, on this machine; the operator times them again "
                      "in a pod on the cluster (CheckingLayers)", planned.stderr)


class PaperSiteTest(SiteTestCase):
    """Thousands of nodes on paper beside one that runs, as the operator's scale tests
    will have them: registered Ready, no kubelet, no lease, and left Ready by the node
    lifecycle controller while it marks a silent real node."""
    PAPER = 3000
    profile = ("apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\n"
               "metadata: {name: paper-site}\nspec:\n  nodes:\n    - {name: gw}\n" +
               "".join(f"    - {{name: paper-{i}, registeredOnly: true}}\n" for i in range(PAPER)))

    def test_nodes_on_paper_stay_ready_without_leases(self):
        print(f"\n{self.PAPER} nodes on paper: the stand-in ready in "
              f"{self.server.startup_seconds:.2f} s")
        nodes = self.api.get("/api/v1/nodes").json["items"]
        self.assertEqual(len(nodes), self.PAPER + 1)
        self.assertTrue(all(condition(n, "Ready") == "True" for n in nodes))
        leases = self.api.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
        self.assertEqual([l["metadata"]["name"] for l in leases.json["items"]], ["gw"])
        # The lifecycle controller has looked past its grace once it marks gw, gone silent.
        self.assertEqual(self.api.post("/_standin/nodes/gw/partition", None).status, 200)
        self.wait_for("/api/v1/nodes", "gw", lambda n: condition(n, "Ready") == "Unknown",
                      timeout=10)
        nodes = self.api.get("/api/v1/nodes", labelSelector="kubernetes.io/hostname!=gw").json["items"]
        self.assertEqual(len(nodes), self.PAPER)
        self.assertEqual([n["metadata"]["name"] for n in nodes
                          if condition(n, "Ready") != "True" or n["spec"].get("taints")], [])
        self.assertEqual(self.api.post("/_standin/nodes/gw/revive", None).status, 200)


class InClusterTest(SiteTestCase):
    """With --tls: a pod reaches the API server as the operator's in-cluster
    configuration does (client-go's order: KUBERNETES_SERVICE_HOST and _PORT, the
    projected token as a Bearer token, the projected ca.crt to verify the server), as
    its ServiceAccount: what RBAC grants that account, and nothing more."""
    extra_args = ["--tls"]

    def test_a_pod_reads_the_api_with_its_service_account(self):
        script = ("import json, os, ssl, urllib.request\n"
                  "d = '/var/run/secrets/kubernetes.io/serviceaccount'\n"
                  "token, ns = (open(f'{d}/{f}').read() for f in ('token', 'namespace'))\n"
                  "url = 'https://%s:%s/api/v1/namespaces/%s/pods/%s' % (\n"
                  "    os.environ['KUBERNETES_SERVICE_HOST'], os.environ['KUBERNETES_SERVICE_PORT'],\n"
                  "    ns, os.environ['POD'])\n"
                  "ctx = ssl.create_default_context(cafile=f'{d}/ca.crt')\n"
                  "def get(u):\n"
                  "    return json.load(urllib.request.urlopen(urllib.request.Request(\n"
                  "        u, headers={'Authorization': 'Bearer ' + token}), context=ctx))\n"
                  "me = get(url)\n"
                  "print(me['metadata']['name'], me['spec']['nodeName'])\n"
                  "try:\n"
                  "    get(url.split('/api/')[0] + '/api/v1/nodes')\n"
                  "except urllib.error.HTTPError as e:\n"
                  "    print(e.code, json.load(e)['message'])\n")
        # the default account may read pods, as a Role says, and nothing else
        self.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "pod-reader"},
                    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
                   {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "pod-reader"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
                    "subjects": [{"kind": "ServiceAccount", "name": "default"}]})
        pod = shell_pod("in-cluster", "exec python3 -c \"$SCRIPT\"", node="robot")
        pod["spec"]["containers"][0]["env"] = [
            {"name": "SCRIPT", "value": script},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
        self.apply(pod)
        done = self.wait_pod("in-cluster", lambda p: phase(p) in ("Succeeded", "Failed"))
        log = self.kubectl.run("logs", "in-cluster").stdout
        self.assertEqual((phase(done), log), ("Succeeded", 'in-cluster robot\n403 nodes is forbidden: User '
                                              '"system:serviceaccount:default:default" cannot list resource "nodes" '
                                              'in API group "" at the cluster scope\n'))


class SchedulerTest(SiteTestCase):
    def scheduled(self, name):
        p = self.wait_pod(name, lambda p: p["spec"].get("nodeName") or
                          condition(p, "PodScheduled") == "False")
        return p["spec"].get("nodeName") or None, p

    def unbound(self, name, **spec):
        pod = shell_pod(name, "sleep 30", grace=0, **spec)
        del pod["spec"]["nodeName"]
        return pod

    def test_the_default_scheduler_honours_selectors_affinity_taints_resources_and_cordons(self):
        arm = self.unbound("arm", nodeSelector={"kubernetes.io/arch": "arm64"})
        big = self.unbound("big")
        big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
        nowhere = self.unbound("nowhere", affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "edgetrain.dev/site", "operator": "In",
                                       "values": ["moon"]}]}]}}})
        self.apply(arm, big, nowhere)
        self.assertEqual(self.scheduled("arm")[0], "robot")
        self.assertEqual(self.scheduled("big")[0], "gw", "only gw has 3 cpus")
        node, p = self.scheduled("nowhere")
        self.assertIsNone(node)
        reason = next(c for c in p["status"]["conditions"] if c["type"] == "PodScheduled")
        self.assertEqual(reason["reason"], "Unschedulable")
        self.assertIn("didn't match Pod's node affinity/selector", reason["message"])
        self.kubectl.run("cordon", "robot")
        self.kubectl.run("taint", "node", "gw", "dedicated=ops:NoSchedule")
        late = self.unbound("late", nodeSelector={"kubernetes.io/arch": "arm64"})
        self.apply(late)
        node, p = self.scheduled("late")
        self.assertIsNone(node, "robot is cordoned")
        self.kubectl.run("uncordon", "robot")
        self.wait_pod("late", lambda p: p["spec"].get("nodeName") == "robot")
        shy = self.unbound("shy", nodeSelector={"kubernetes.io/hostname": "gw"})
        tolerant = self.unbound("tolerant", nodeSelector={"kubernetes.io/hostname": "gw"},
                                tolerations=[{"key": "dedicated", "value": "ops",
                                              "effect": "NoSchedule"}])
        self.apply(shy, tolerant)
        node, p = self.scheduled("shy")
        self.assertIsNone(node)
        self.assertIn("untolerated taint {dedicated: ops}", p["status"]["conditions"][-1]["message"])
        self.assertEqual(self.scheduled("tolerant")[0], "gw", "gw's taint is tolerated")
        self.kubectl.run("taint", "node", "gw", "dedicated-")


    def test_preferred_affinities_outweigh_free_cpu(self):
        # Replicas that prefer each other's absence spread over the nodes, as a
        # Deployment's do on a real cluster: the chart's two operator replicas had
        # both gone to the node with most free cpu, where they shared its network
        # and one port (a user's trial of helm upgrade).
        anti = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                "labelSelector": {"matchLabels": {"app": "spread"}}}}]}}
        replicas = [self.unbound(f"spread-{i}", affinity=anti) for i in range(2)]
        for r in replicas:
            r["metadata"]["labels"] = {"app": "spread"}
        # gw has the most free cpu; this one prefers an arm64 node.
        arm = self.unbound("prefers-arm", affinity={"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "preference": {"matchExpressions": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}}]}})
        self.apply(*replicas, arm)
        nodes = {self.scheduled(f"spread-{i}")[0] for i in range(2)}
        self.assertEqual(len(nodes), 2, "each replica on a node of its own")
        self.assertEqual(self.scheduled("prefers-arm")[0], "robot")
        self.kubectl.run("delete", "pod", "spread-0", "spread-1", "prefers-arm", "--wait=false")

    def test_priority_classes_give_pods_their_priority(self):
        self.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": "training"}, "value": 1000})
        urgent = self.unbound("urgent", priorityClassName="training")
        self.apply(urgent, self.unbound("plain"))
        self.assertEqual(self.get_pod("urgent")["spec"]["priority"], 1000)
        self.assertEqual(self.get_pod("plain")["spec"]["priority"], 0)
        critical = self.api.get("/apis/scheduling.k8s.io/v1/priorityclasses/"
                                "system-cluster-critical").json
        self.assertEqual(critical["value"], 2000000000, "made at start, as a real server does")
        r = self.api.post(self.pod_path(), self.unbound("lost", priorityClassName="nowhere"))
        self.assertEqual(r.status, 403, r)
        self.assertIn("no PriorityClass with name nowhere was found", r.json["message"])
        self.kubectl.run("delete", "pod", "urgent", "plain", "--wait=false")


class NetworkTest(SiteTestCase):
    def test_pods_of_one_node_have_addresses_of_their_own_and_services_their_names(self):
        serve = ("exec python3 -c \"import http.server, os; http.server.HTTPServer((os.environ"
                 "['IP'], 9000), http.server.SimpleHTTPRequestHandler).serve_forever()\"")
        pods = []
        for i in range(2):
            p = shell_pod(f"same-port-{i}", serve, restart="Always", grace=0)
            p["metadata"]["labels"] = {"app": "same-port"}
            c = p["spec"]["containers"][0]
            c["env"] = [{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
            c["readinessProbe"] = {"tcpSocket": {"port": 9000}, "periodSeconds": 1}
            pods.append(p)
        pods[0]["spec"].update(hostname="first", subdomain="same-port")
        service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "same-port"},
                   "spec": {"clusterIP": "None", "selector": {"app": "same-port"},
                            "ports": [{"name": "http", "port": 9000}]}}
        # On another node, started with them: it resolves the names once they exist (by
        # the cluster DNS as root, by /etc/hosts kept up to date without).
        resolver = shell_pod("resolver", (
            "all() { getent ahostsv4 same-port | cut -d' ' -f1 | sort -u; }; "
            "until [ $(all | wc -l) = 2 ] && getent hosts first.same-port.default >/dev/null; "
            "do sleep 0.1; done; all; getent hosts first.same-port | cut -d' ' -f1"),
            node="robot")
        self.apply(service, *pods, resolver)
        ips = {self.wait_pod(p["metadata"]["name"], lambda p: condition(p, "Ready") == "True")
               ["status"]["podIP"] for p in pods}
        self.assertEqual(len(ips), 2, "two addresses on one node, both serving port 9000")
        ep = self.wait_for("/api/v1/namespaces/default/endpoints", "same-port",
                           lambda e: e and len((e.get("subsets") or [{}])[0].get("addresses") or []) == 2)
        self.assertEqual({a["ip"] for a in ep["subsets"][0]["addresses"]}, ips)
        self.assertEqual(ep["subsets"][0]["ports"], [{"name": "http", "port": 9000, "protocol": "TCP"}])
        self.wait_pod("resolver", lambda p: phase(p) in ("Succeeded", "Failed"))
        answered = self.kubectl.run("logs", "resolver").stdout.split()
        first = self.get_pod("same-port-0")["status"]["podIP"]
        self.assertEqual((set(answered[:2]), answered[2:]), (ips, [first]))


class LoopbackNetworkTest(NetworkTest):
    """The same without the kernel's links: pods on 127.x addresses (what a run without
    root gets)."""
    extra_args = ["--pod-network", "loopback"]


if __name__ == "__main__":
    unittest.main()
