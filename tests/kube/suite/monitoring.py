"""Service discovery as in a cluster, for test_dashboards: the chart's PodMonitor and
ServiceMonitor (rendered by the real helm) translated into the scrape configuration the
Prometheus Operator would generate from them, a Prometheus account on the stand-in with
the RBAC kube-prometheus gives Prometheus, and a scraper that discovers its targets with
`kubernetes_sd_configs` against the stand-in and writes what it scrapes into the test's
Prometheus.

The scraper is Debian's vmagent (package victoria-metrics), not Prometheus itself:
Debian builds its prometheus without Kubernetes discovery ("Kubernetes support has been
completely removed, due to the insane amount of dependencies in their client library",
/usr/share/doc/prometheus/NEWS.Debian.gz; its config parser refuses
`kubernetes_sd_configs`), and no registry reachable here has another build. vmagent
reads the same scrape configuration (kubernetes_sd_configs, relabel_configs) with a
Kubernetes discovery of its own (list, then watch from the list's resourceVersion with
bookmarks), scrapes the targets and remote-writes every sample, `up` included, into
Debian's Prometheus (--web.enable-remote-write-receiver), where the dashboards' PromQL
is evaluated. Its `/api/v1/targets` answers as Prometheus' does."""

import json
import os
import subprocess
import urllib.request

import yaml

import chart
from harness import wait_until

VMAGENT = "/usr/bin/vmagent"
# Where kube-prometheus runs Prometheus, and the account it runs as.
PROMETHEUS_NAMESPACE, PROMETHEUS_ACCOUNT = "monitoring", "prometheus-k8s"
PROMETHEUS_USER = chart.service_account_user(PROMETHEUS_NAMESPACE, PROMETHEUS_ACCOUNT)


def sanitize(label):
    """A Kubernetes label key as a Prometheus label name, as discovery writes it
    (`app.kubernetes.io/name` -> `app_kubernetes_io_name`)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in label)


def selector_relabelings(selector, kind):
    """keep/drop rules for a LabelSelector over the `kind`'s (pod, service) labels:
    matchLabels (sorted by key) then matchExpressions, each as the Prometheus Operator
    writes it (`(value);true` over the label and its labelpresent twin)."""
    label = f"__meta_kubernetes_{kind}_label_"
    present = f"__meta_kubernetes_{kind}_labelpresent_"
    rules = [{"action": "keep", "source_labels": [label + sanitize(k), present + sanitize(k)], "regex": f"({v});true"}
             for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        key, op = sanitize(e["key"]), e["operator"]
        if op in ("In", "NotIn"):
            rules.append({"action": "keep" if op == "In" else "drop", "source_labels": [label + key, present + key],
                          "regex": f"({'|'.join(e['values'])});true"})
        else:  # Exists, DoesNotExist
            rules.append({"action": "keep" if op == "Exists" else "drop", "source_labels": [present + key],
                          "regex": "true"})
    return rules


def scrape_configs(monitor, api_server, token_file, ca_file):
    """The scrape configs the Prometheus Operator generates from a PodMonitor or a
    ServiceMonitor (its generatePodMonitorConfig / generateServiceMonitorConfig, before
    Endpoint slices), one per endpoint, for a Prometheus that reaches the API server at
    api_server with a bearer token and the server's CA (its `apiserverConfig`):
      - job_name `podMonitor/NS/NAME/I` or `serviceMonitor/NS/NAME/I`;
      - kubernetes_sd_configs with role `pod` or `endpoints`, in the namespaces of the
        namespaceSelector (`any: true`: all of them; neither: the monitor's own);
      - relabel_configs: keep what the selector selects (over the pod's or the
        service's labels) and the named port (the container's port name, or the
        Endpoints port name); then the target labels `namespace`, `container`, `pod`
        (for endpoints, from the address's target Pod, and `node`, `service`), `job`
        (a PodMonitor's `NS/NAME`, a ServiceMonitor's Service name) and `endpoint`
        (the port's name). Only what the chart's monitors use is translated: no
        jobLabel, targetLabels, relabelings, TLS or auth of the scrape itself, no
        sharding."""
    pod_monitor = monitor["kind"] == "PodMonitor"
    spec, meta = monitor["spec"], monitor["metadata"]
    ns_selector = spec.get("namespaceSelector") or {}
    sd = {"role": "pod" if pod_monitor else "endpoints", "api_server": api_server,
          "bearer_token_file": token_file, "tls_config": {"ca_file": ca_file}}
    if not ns_selector.get("any"):
        sd["namespaces"] = {"names": ns_selector.get("matchNames") or [meta["namespace"]]}
    out = []
    for i, ep in enumerate(spec["podMetricsEndpoints" if pod_monitor else "endpoints"]):
        kind = "pod" if pod_monitor else "service"
        rules = [{"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"}]
        rules += selector_relabelings(spec["selector"], kind)
        port_label = ("__meta_kubernetes_pod_container_port_name" if pod_monitor
                      else "__meta_kubernetes_endpoint_port_name")
        rules.append({"action": "keep", "source_labels": [port_label], "regex": ep["port"]})
        if not pod_monitor:
            address_target = ["__meta_kubernetes_endpoint_address_target_kind",
                              "__meta_kubernetes_endpoint_address_target_name"]
            rules += [{"source_labels": address_target, "separator": ";", "regex": f"{k};(.*)",
                       "replacement": "${1}", "target_label": target}
                      for k, target in (("Node", "node"), ("Pod", "pod"))]
        rules.append({"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"})
        if not pod_monitor:
            rules.append({"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"})
        rules += [{"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
                  {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"}]
        if pod_monitor:
            rules.append({"target_label": "job", "replacement": f"{meta['namespace']}/{meta['name']}"})
        else:
            rules.append({"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job",
                          "replacement": "${1}"})
        rules.append({"target_label": "endpoint", "replacement": ep["port"]})
        job_name = ("podMonitor" if pod_monitor else "serviceMonitor") + f"/{meta['namespace']}/{meta['name']}/{i}"
        config = {"job_name": job_name,
                  "honor_labels": False, "kubernetes_sd_configs": [sd], "metrics_path": ep.get("path", "/metrics"),
                  "relabel_configs": rules}
        if ep.get("interval"):
            config["scrape_interval"] = ep["interval"]
        out.append(config)
    return out


def prometheus_account(home, kubectl):
    """kube-prometheus' Prometheus account on the stand-in: ServiceAccount
    monitoring/prometheus-k8s with a ClusterRole that may get, list and watch pods,
    services and endpoints (what kubernetes_sd_configs' pod and endpoints roles read),
    bound cluster-wide, since the agents' PodMonitor selects every namespace. Returns
    the path of a file holding a TokenRequest token of that account, whose requests
    the stand-in's RBAC authorizes from that role alone."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": PROMETHEUS_ACCOUNT},
            "rules": [{"apiGroups": [""], "resources": ["services", "endpoints", "pods"],
                       "verbs": ["get", "list", "watch"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": PROMETHEUS_ACCOUNT},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": PROMETHEUS_ACCOUNT},
               "subjects": [{"kind": "ServiceAccount", "name": PROMETHEUS_ACCOUNT, "namespace": PROMETHEUS_NAMESPACE}]}
    account = {"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": PROMETHEUS_ACCOUNT, "namespace": PROMETHEUS_NAMESPACE}}
    token = chart.apply_account(home, kubectl, PROMETHEUS_NAMESPACE, PROMETHEUS_ACCOUNT, [account, role, binding])
    token_file = os.path.join(home, "prometheus-token")
    with open(token_file, "w") as f:
        f.write(token)
    return token_file


class Discovery:
    """vmagent on 127.0.0.1:port with these scrape configs, remote-writing
    into the Prometheus at `remote_write` (whose receiver is on). Targets found by
    Kubernetes discovery are applied within a second (-promscrape.kubernetesSDCheckInterval)."""

    def __init__(self, workdir, scrape_configs, remote_write, scrape_interval, port):
        self.dir = workdir
        self.address = f"127.0.0.1:{port}"
        config = os.path.join(workdir, "vmagent.yml")
        with open(config, "w") as f:
            yaml.safe_dump({"global": {"scrape_interval": scrape_interval}, "scrape_configs": scrape_configs}, f)
        self.log_path = os.path.join(workdir, "vmagent.log")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [VMAGENT, f"-promscrape.config={config}", "-promscrape.config.strictParse",
                 "-promscrape.kubernetesSDCheckInterval=1s", f"-httpListenAddr={self.address}",
                 f"-remoteWrite.url=http://{remote_write}/api/v1/write", "-remoteWrite.flushInterval=200ms",
                 f"-remoteWrite.tmpDataPath={os.path.join(workdir, 'vmagent-data')}", "-loggerOutput=stderr"],
                stdout=log, stderr=subprocess.STDOUT)
        if not wait_until(self._ready, timeout=20, interval=0.1):
            self.stop()
            raise AssertionError("vmagent never answered: " + self.logs())

    def _ready(self):
        assert self.proc.poll() is None, "vmagent exited: " + self.logs()
        try:
            return self.targets() is not None
        except OSError:
            return False

    def logs(self):
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)

    def targets(self):
        """The active targets, as Prometheus' /api/v1/targets lists them."""
        with urllib.request.urlopen(f"http://{self.address}/api/v1/targets", timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]["activeTargets"]

    def up(self, job=None):
        """The scraped-up targets' label sets (of one `job` label's, if given)."""
        return [t["labels"] for t in self.targets()
                if t["health"] == "up" and (job is None or t["labels"].get("job") == job)]
