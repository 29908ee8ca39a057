"""The dashboards against real runs: a real Prometheus (Debian's /usr/bin/prometheus on
127.0.0.1, port chosen by the OS) scrapes real runs, and every PromQL expression of
every panel of dashboards/*.json, its variables substituted as Grafana would, is
evaluated through Prometheus' HTTP API over the run. A panel passes when its
expression returns series that carry the labels its legend names, at least one of
them with data: a series that stays at 0 is no data, `or vector(0)` is refused
outright, a counter shown raw must have moved, and a per-worker panel must show every
worker. The variables' own label_values() queries must find the run too.

Each panel names the run that feeds it ("edgetrain" → "feeds" in the JSON):
  - the data-parallel training run: `edgetrain run` of examples/k8s/digits-team.yaml
    (two workers and a coordinator, a short budget) with --http-port, scraped through
    static targets that carry the namespace and pod labels service discovery would give;
  - the operator's reconcile: edgetrain-operator on the API stand-in's emulated edge
    site (examples/nodes/edge-site.yaml) training small jobs, one of which loses a node
    (a re-plan), while the stand-in answers slowly (a queue), and at the end has its CRD
    deleted under the operator (API errors).
The alerts are unit-tested by promtool (dashboards/alerts_test.yaml, ctest
dashboards_alerts_test); nothing here checks that Grafana itself renders the JSON:
there is no Grafana server here (dashboards/README.md)."""

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import yaml

import chart
from emulated_site import EDGE_SITE, SiteTestCase, phase, small_job, start_operator, stop_operator
from harness import EDGETRAIN, EXAMPLE, OPERATOR, REPO_ROOT, wait_until

PROMETHEUS = "/usr/bin/prometheus"
DASHBOARDS = os.path.join(REPO_ROOT, "dashboards")
SCRAPE_INTERVAL_S = 1
# Grafana's $__rate_interval: max($__interval + scrape interval, 4 x scrape interval);
# with a 1 s step and a 1 s scrape interval, 4 s.
RATE_INTERVAL = f"{4 * SCRAPE_INTERVAL_S}s"
TEAM_RUN = "data-parallel training run"
OPERATOR_RUN = "the operator's reconcile"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(n):
    """A base port with the n ports from it free now (edgetrain run --http-port)."""
    for _ in range(50):
        base = free_port()
        socks = []
        try:
            for i in range(n):
                s = socket.socket()
                s.bind(("127.0.0.1", base + i))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise AssertionError(f"no {n} consecutive free ports")


def load_dashboard(name):
    with open(os.path.join(DASHBOARDS, name)) as f:
        return json.load(f)


def panels_of(dashboard):
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def substitute(expr, variables):
    """The expression as Grafana sends it: $__rate_interval and each variable
    (longest names first, so $job does not eat $jobs) replaced."""
    expr = expr.replace("$__rate_interval", RATE_INTERVAL)
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", variables[name]).replace("$" + name, variables[name])
    assert "$" not in expr, f"an unsubstituted variable in {expr}"
    return expr


class Prometheus:
    """Debian's Prometheus on 127.0.0.1 at a port the OS chose, scraping every second."""

    def __init__(self, workdir, scrape_configs):
        self.dir = workdir
        self.address = f"127.0.0.1:{free_port()}"
        config = {"global": {"scrape_interval": f"{SCRAPE_INTERVAL_S}s", "evaluation_interval": "1s"},
                  "scrape_configs": scrape_configs}
        path = os.path.join(workdir, "prometheus.yml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        self.log = open(os.path.join(workdir, "prometheus.log"), "w")
        self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={path}",
                                     f"--storage.tsdb.path={os.path.join(workdir, 'tsdb')}",
                                     f"--web.listen-address={self.address}"],
                                    stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_until(self.ready, timeout=30, interval=0.1):
            raise AssertionError("prometheus never became ready: " + self.logs())

    def ready(self):
        try:
            with urllib.request.urlopen(f"http://{self.address}/-/ready", timeout=1) as r:
                return r.status == 200
        except OSError:
            assert self.proc.poll() is None, "prometheus exited: " + self.logs()
            return False

    def logs(self):
        with open(os.path.join(self.dir, "prometheus.log")) as f:
            return f.read()[-3000:]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.log.close()

    def api(self, path, **params):
        url = f"http://{self.address}/api/v1/{path}?" + urllib.parse.urlencode(params, doseq=True)
        with urllib.request.urlopen(url, timeout=30) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]

    def query_range(self, expr, start, end):
        return self.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step="1s")["result"]

    def label_values(self, label, match, start, end):
        return self.api(f"label/{label}/values", **{"match[]": match}, start=f"{start:.0f}", end=f"{end:.0f}")

    def targets_up(self):
        return [t for t in self.api("targets")["activeTargets"] if t["health"] == "up"]


def values(series):
    out = []
    for _, v in series["values"]:
        x = float(v)
        if not math.isnan(x):
            out.append(x)
    return out


LABEL_VALUES = re.compile(r"^label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)$")


class DashboardCase:
    """What both runs check of their dashboard; `self.prom`, `self.start`, `self.end`
    and `self.variables` are the run's."""

    dashboard_file = None
    feeds = None
    # variable -> the values label_values() must find in the run
    expected_variable_values = {}

    def panel_report(self, panel, target):
        expr = substitute(target["expr"], self.variables)
        self.assertNotRegex(target["expr"].replace(" ", ""), r"vector\(", "no vector(0) stands in for data")
        result = self.prom.query_range(expr, self.start, self.end)
        where = f"panel {panel['title']!r} {target['refId']}: {expr}"
        self.assertTrue(result, f"{where} returned no series over the run")
        wanted = re.findall(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", target["legendFormat"])
        for s in result:
            for label in wanted:
                self.assertTrue(s["metric"].get(label), f"{where}: a series without {label}: {s['metric']}")
        # data: a value other than 0 (and NaN, which Grafana shows as a gap)
        with_data = [s for s in result if any(v != 0 for v in values(s))]
        self.assertTrue(with_data, f"{where}: every series stays at 0 or NaN: {result[:3]}")
        # a counter shown raw (not through rate) must have moved over the run
        raw_counter = re.search(r"(_total|_count|_sum|_bucket)\b", target["expr"]) and "rate(" not in target["expr"]
        if raw_counter:
            self.assertTrue(any(max(values(s)) > min(values(s)) for s in with_data),
                            f"{where}: the counter never moved")
        if "worker" in wanted:
            workers = {s["metric"]["worker"] for s in with_data}
            self.assertEqual(workers, self.expected_variable_values["worker"],
                             f"{where}: not every worker has data")
        return len(result), len(with_data)

    def check_alert_series(self, operator):
        """Every series an alert of dashboards/alerts.yaml reads (the operator's, or
        the agents') was scraped in this run: no alert waits on a name nothing exports."""
        with open(os.path.join(DASHBOARDS, "alerts.yaml")) as f:
            rules = [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
        names = {n for r in rules for n in re.findall(r"\bedgetrain_[a-z_]+", r["expr"])
                 if n.startswith("edgetrain_operator_") == operator}
        self.assertTrue(names)
        for name in sorted(names):
            with self.subTest(alert_series=name):
                self.assertTrue(self.prom.query_range(name, self.start, self.end), f"{name} was never scraped")

    def check_dashboard(self):
        dashboard = load_dashboard(self.dashboard_file)
        checked = 0
        for panel in panels_of(dashboard):
            self.assertIn(self.feeds, panel["edgetrain"]["feeds"], panel["title"])
            for target in panel["targets"]:
                with self.subTest(panel=panel["title"], ref=target["refId"]):
                    n, with_data = self.panel_report(panel, target)
                    checked += 1
                    print(f"  {panel['title']} {target['refId']}: {with_data}/{n} series with data")
        self.assertGreaterEqual(checked, len(panels_of(dashboard)))
        for var in dashboard["templating"]["list"]:
            if var["type"] != "query":
                continue
            with self.subTest(variable=var["name"]):
                m = LABEL_VALUES.match(var["query"]["query"])
                self.assertTrue(m, var["query"]["query"])
                selector = substitute(m.group(1), self.variables)
                found = set(self.prom.label_values(m.group(2), selector, self.start, self.end))
                self.assertEqual(found, self.expected_variable_values[var["name"]], var["query"]["query"])


@unittest.skipUnless(os.access(PROMETHEUS, os.X_OK), "Debian's prometheus package is missing (scripts/deps)")
@unittest.skipUnless(os.access(EDGETRAIN, os.X_OK), f"{EDGETRAIN} is not built (make build, or set EDGETRAIN_BUILD_DIR)")
class TrainingDashboard(DashboardCase, unittest.TestCase):
    dashboard_file = "edgetrain-training.json"
    feeds = TEAM_RUN
    expected_variable_values = {"namespace": {"edgetrain-live"}, "job": {"digits-live"}, "worker": {"0", "1"}}

    def test_every_panel_shows_the_team_run(self):
        workdir = tempfile.mkdtemp(prefix="dashboards-team-")
        self.addCleanup(shutil.rmtree, workdir, True)
        with open(EXAMPLE) as f:
            job = yaml.safe_load(f)
        # The example, shorter and with no target, so that it trains for the whole
        # wall clock;
        # a wider model, so that pushes are large enough (32 kB) for the agents to
        # time their links.
        job["metadata"]["name"] = "digits-live"
        job["spec"]["model"] = {"name": "mlp", "hidden": [256, 128]}
        job["spec"]["budget"] = {"wallClock": "15s"}
        manifest = os.path.join(workdir, "job.yaml")
        with open(manifest, "w") as f:
            yaml.safe_dump(job, f)
        base = free_ports(3)
        # What kubernetes_sd_configs' relabelling gives an agent pod's target.
        targets = [{"targets": [f"127.0.0.1:{base + i}"],
                    "labels": {"namespace": "edgetrain-live", "pod": pod}}
                   for i, pod in enumerate(["digits-live-coordinator", "digits-live-worker-0",
                                            "digits-live-worker-1"])]
        self.prom = Prometheus(workdir, [{"job_name": "edgetrain-agents", "static_configs": targets}])
        self.addCleanup(self.prom.stop)
        self.start = time.time()
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        run = subprocess.run([EDGETRAIN, "run", manifest, "--http-port", str(base), "--fresh",
                              "--output", os.path.join(workdir, "out")],
                             capture_output=True, text=True, timeout=240, env=env)
        self.assertEqual(run.returncode, 0, run.stdout[-2000:] + run.stderr[-2000:])
        time.sleep(2 * SCRAPE_INTERVAL_S)  # the last scrapes land
        self.end = time.time()
        self.variables = {"datasource": "prometheus", "namespace": "edgetrain-live", "job": "digits-live",
                          "worker": ".*"}
        print(f"\nteam run: {self.end - self.start:.0f} s")
        self.check_dashboard()
        self.check_alert_series(operator=False)


@unittest.skipUnless(os.access(PROMETHEUS, os.X_OK), "Debian's prometheus package is missing (scripts/deps)")
@unittest.skipUnless(os.access(OPERATOR, os.X_OK), f"{OPERATOR} is not built (make build, or set EDGETRAIN_BUILD_DIR)")
class OperatorDashboard(DashboardCase, SiteTestCase):
    profile = EDGE_SITE
    dashboard_file = "edgetrain-operator.json"
    feeds = OPERATOR_RUN
    expected_variable_values = {"namespace": {"edgetrain"}}

    def operator(self):
        """The operator as the chart's ServiceAccount, with only the chart's roles."""
        proc, address = start_operator(self.operator_kubeconfig(), os.path.join(self.dir, "operator.log"))
        self.addCleanup(stop_operator, proc, 30)
        return address

    @staticmethod
    def job(name, workers, wall_clock):
        """Trains for its whole wall clock (no target); a lost node is replaced after 2 s."""
        return small_job(name, parallelism={"workers": workers}, optimizer={"learningRate": 0.0003},
                         budget={"wallClock": wall_clock, "epochs": 1000, "targetAccuracy": None},
                         faultTolerance={"nodeLossGrace": "2s"})

    def test_every_panel_shows_the_operators_reconciles(self):
        self.kubectl.run("apply", "-f", os.path.join(REPO_ROOT, "crds"))
        operator_http = self.operator()
        workdir = os.path.join(self.dir, "prometheus")
        os.makedirs(workdir)
        self.prom = Prometheus(workdir, [{
            "job_name": "edgetrain-operator",
            "static_configs": [{"targets": [operator_http],
                                "labels": {"namespace": "edgetrain", "pod": "edgetrain-operator-0"}}]}])
        self.addCleanup(self.prom.stop)
        # Prometheus takes up its targets seconds after it is ready; placements and the
        # re-plan made before its first scrape of the operator would move no rate().
        self.assertTrue(wait_until(self.prom.targets_up, timeout=30, interval=0.2),
                        "prometheus never scraped the operator: " + self.prom.logs())
        self.start = time.time()
        # A slow API server: reconciles take longer than jobs arrive, so the queue fills.
        self.assertEqual(self.api.post("/_standin/latency?ms=150", None).status, 200)
        self.apply(self.job("mended", 2, "40s"), *[self.job(f"brief-{i}", 1, "4s") for i in range(4)])
        self.wait_job("mended", lambda j: phase(j) == "Running", timeout=90)
        self.assertEqual(self.api.post("/_standin/latency?ms=0", None).status, 200)
        # A node lost under a running team: the operator re-plans it (WorkerLost).
        pods = self.api.get("/api/v1/namespaces/default/pods", labelSelector="edgetrain.dev/job=mended").json
        victim = [p["spec"]["nodeName"] for p in pods["items"] if p["metadata"]["name"] == "mended-worker-1"][0]
        self.assertEqual(self.api.post(f"/_standin/nodes/{victim}/kill", None).status, 200)
        try:
            self.wait_job("mended", lambda j: phase(j) == "Recovering", timeout=30)
        finally:
            self.api.post(f"/_standin/nodes/{victim}/revive", None)
        for i in range(4):
            self.wait_job(f"brief-{i}", lambda j: phase(j) == "Succeeded", timeout=90)
        # The CRD removed under the running operator (its watches dropped, as a
        # restarted API server would): its re-watches and relists of TrainingJobs
        # fail with 404 until it is back - API errors.
        crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/trainingjobs.edgetrain.dev"
        self.assertEqual(self.api.delete(crd).status, 200)
        self.assertEqual(self.api.post("/_standin/drop-watches", None).status, 200)
        time.sleep(3 * SCRAPE_INTERVAL_S)
        self.end = time.time()
        self.variables = {"datasource": "prometheus", "namespace": "edgetrain"}
        print(f"\noperator run: {self.end - self.start:.0f} s")
        self.check_dashboard()
        self.check_alert_series(operator=True)
        # Its API errors are the deleted CRD's 404s, never a 403: the chart's roles sufficed.
        self.assertEqual(chart.refused(chart.decisions(self.api)), [])


if __name__ == "__main__":
    unittest.main()
