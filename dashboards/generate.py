#!/usr/bin/env python3
"""The one source of edgetrain's Grafana dashboards and Prometheus alerts.

    dashboards/generate.py            write every output below
    dashboards/generate.py --check    fail (exit 1) if any output differs from what
                                      this file makes, or a dashboard is malformed

Outputs: dashboards/edgetrain-training.json, dashboards/edgetrain-operator.json,
dashboards/alerts.yaml (a plain Prometheus rules file), and their copies inside the
Helm chart (helm/edgetrain/files/dashboards/, helm/edgetrain/files/alerts.yaml),
which the chart renders as Grafana sidecar ConfigMaps and as its PrometheusRule.
Nothing here is hand-edited JSON: change this file and run it.

Python's standard library only. Every panel's PromQL is also what
tests/kube/suite/test_dashboards.py (ctest kube_standin_dashboards) evaluates against
a real Prometheus, and each panel names the runs that feed it (`feeds`)."""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DASHBOARDS = os.path.join(ROOT, "dashboards")
CHART_FILES = os.path.join(ROOT, "helm", "edgetrain", "files")

SCHEMA_VERSION = 39
DS = {"type": "prometheus", "uid": "${datasource}"}

# The runs that feed panels (tests/kube/suite/test_dashboards.py runs each).
TEAM_RUN = "data-parallel training run (edgetrain run --observe of examples/k8s/digits-team.yaml)"
PIPELINE_RUN = "pipeline run (edgetrain run --observe of a digits mlp in three stages)"
STREAM_RUN = ("stream run (edgetrain run --observe --nodes of a digits team whose two cameras' streams swing "
              "between a trickle and a burst)")
OPERATOR_RUN = "the operator's reconcile (the operator on the API stand-in)"


# ---------------------------------------------------------------- dashboards

def datasource_variable():
    return {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1, "regex": "", "options": []}


def query_variable(name, label, query, multi=True):
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "definition": query, "query": {"query": query, "refId": f"{name}-variable"},
            "refresh": 2, "sort": 1, "multi": multi, "includeAll": True, "allValue": ".*",
            "current": {}, "hide": 0, "regex": "", "options": []}


def target(expr, legend, ref, fmt="time_series"):
    t = {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref, "range": True, "instant": False}
    if fmt != "time_series":
        t["format"] = fmt
    return t


class Board:
    """Panels laid out on Grafana's 24-column grid, two to a row."""

    def __init__(self, uid, title, description, variables):
        self.uid, self.title, self.description, self.variables = uid, title, description, variables
        self.panels = []
        self.x = self.y = 0

    def row(self, title):
        if self.x:
            self.x, self.y = 0, self.y + 8
        self.panels.append({"type": "row", "title": title, "id": len(self.panels) + 1, "collapsed": False,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []})
        self.y += 1

    def panel(self, title, description, targets, unit, feeds, kind="timeseries", width=12, stack=False,
              options=None, field_defaults=None):
        if self.x + width > 24:
            self.x, self.y = 0, self.y + 8
        refs = "ABCDEFGH"
        p = {"type": kind, "title": title, "description": description, "id": len(self.panels) + 1,
             "datasource": DS, "gridPos": {"h": 8, "w": width, "x": self.x, "y": self.y},
             "targets": [target(e, legend, refs[i], *rest) for i, (e, legend, *rest) in enumerate(targets)],
             "fieldConfig": {"defaults": {"unit": unit, **(field_defaults or {})}, "overrides": []},
             "options": options or {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                                    "tooltip": {"mode": "multi", "sort": "none"}},
             # Not Grafana's: which runs of the live test feed this panel.
             "edgetrain": {"feeds": [feeds] if isinstance(feeds, str) else list(feeds)}}
        if stack:
            p["fieldConfig"]["defaults"]["custom"] = {"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 30}
        self.panels.append(p)
        self.x += width
        if self.x >= 24:
            self.x, self.y = 0, self.y + 8

    def json(self):
        return {
            "uid": self.uid, "title": self.title, "description": self.description,
            "tags": ["edgetrain"], "timezone": "browser", "editable": True, "graphTooltip": 1,
            "schemaVersion": SCHEMA_VERSION, "version": 1, "refresh": "30s",
            "time": {"from": "now-1h", "to": "now"}, "timepicker": {},
            "fiscalYearStartMonth": 0, "liveNow": False, "weekStart": "",
            "annotations": {"list": [{"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                                      "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
                                      "name": "Annotations & Alerts", "type": "dashboard"}]},
            "links": [],
            "templating": {"list": self.variables},
            "panels": self.panels,
        }


def training_dashboard():
    # Selectors: the job's series (coordinator) and a worker's series.
    job = 'namespace=~"$namespace", trainingjob=~"$job"'
    worker = job + ', worker=~"$worker"'
    ri = "$__rate_interval"
    b = Board("edgetrain-training", "edgetrain / training",
              "A TrainingJob's team: accuracy, throughput, links, stalls, staleness and modelled energy "
              "(docs/metrics.md).",
              [datasource_variable(),
               query_variable("namespace", "Namespace", "label_values(edgetrain_job_workers, namespace)"),
               query_variable("job", "TrainingJob",
                              'label_values(edgetrain_job_workers{namespace=~"$namespace"}, trainingjob)'),
               # A data-parallel worker exports its samples; a pipeline's head exports
               # each stage's compute under the stage device's worker rank.
               query_variable("worker", "Worker",
                              'label_values({__name__=~"edgetrain_samples_total|edgetrain_stage_compute_seconds_total", '
                              'namespace=~"$namespace", trainingjob=~"$job"}, worker)')])
    by_job = "namespace, trainingjob"
    by_worker = "namespace, trainingjob, worker"
    b.row("Learning")
    b.panel("Accuracy", "Test accuracy of the job's model at its last evaluation.",
            [(f"max by ({by_job}) (edgetrain_job_accuracy{{{job}}})", "{{trainingjob}}")],
            "percentunit", TEAM_RUN)
    b.panel("Loss", "Training loss: the team's (smoothed over about its last 50 batches) and each worker's last step.",
            [(f"max by ({by_job}) (edgetrain_job_loss{{{job}}})", "{{trainingjob}} team"),
             (f"max by ({by_worker}) (edgetrain_loss{{{worker}}})", "{{trainingjob}} worker {{worker}}")],
            "none", TEAM_RUN)
    b.panel("Samples/s", "Training samples consumed a second: the team's, and each worker's.",
            [(f"sum by ({by_job}) (rate(edgetrain_job_samples_total{{{job}}}[{ri}]))", "{{trainingjob}} team"),
             (f"sum by ({by_worker}) (rate(edgetrain_samples_total{{{worker}}}[{ri}]))",
              "{{trainingjob}} worker {{worker}}")],
            "none", TEAM_RUN)
    b.panel("Workers", "Workers counted in the staleness bound now, against the plan's.",
            [(f"max by ({by_job}) (edgetrain_job_active_workers{{{job}}})", "{{trainingjob}} active"),
             (f"max by ({by_job}) (edgetrain_job_workers{{{job}}})", "{{trainingjob}} planned")],
            "none", TEAM_RUN)
    b.row("Links (data-parallel teams)")
    b.panel("Uplink: estimate against bytes sent",
            "Each data-parallel worker's estimate of its uplink, and the bytes it sent a second (its pushes, "
            "and the keep-alive pushes of every 20 ms). No estimate is drawn until one is measured: pushes "
            "under 32 kB are not timed, so a team of small pushes (sign rows, as the robot team's) draws none, "
            "and a flat 0 read as a dead link.",
            [(f'max by ({by_worker}) (edgetrain_link_bandwidth_bytes_per_second{{{worker}, direction="up"}}) > 0',
              "worker {{worker}} estimate"),
             (f"sum by ({by_worker}) (rate(edgetrain_sent_bytes_total{{{worker}}}[{ri}]))", "worker {{worker}} sent")],
            "Bps", TEAM_RUN)
    b.panel("Downlink: estimate against bytes sent",
            "The estimate of each data-parallel worker's downlink, and the rate at which the coordinator sent "
            "that worker rows. No estimate is drawn until one is measured, and only updates of 32 kB or more "
            "measure it: where they are smaller, it stays at the last one timed (often the worker's first, the "
            "whole model), which the bytes sent may then exceed.",
            [(f'max by ({by_worker}) (edgetrain_link_bandwidth_bytes_per_second{{{worker}, direction="down"}}) > 0',
              "worker {{worker}} estimate"),
             (f"sum by ({by_worker}) (rate(edgetrain_coordinator_sent_bytes_total{{{worker}}}[{ri}]))",
              "worker {{worker}} sent")],
            "Bps", TEAM_RUN)
    b.row("Synchronisation (data-parallel teams)")
    # Clamped: a rate over a window of a few scrapes can read a little over
    # 1 when a stall's seconds land in one scrape (1.011 in a user's trial).
    b.panel("Stall fraction", "The share of time each data-parallel worker's computation waited for rows the "
                              "staleness bound requires.",
            [(f"clamp_max(sum by ({by_worker}) (rate(edgetrain_stall_seconds_total{{{worker}}}[{ri}])), 1)",
              "worker {{worker}}")],
            "percentunit", TEAM_RUN, field_defaults={"min": 0, "max": 1})
    b.panel("Row staleness", "How many iterations stale each row was when an iteration used it (bounded by "
                             "spec.sync.stalenessBound), rows per second in each bucket.",
            [(f"sum by (le) (rate(edgetrain_row_staleness_iterations_bucket{{{worker}}}[{ri}]))", "{{le}}",
              "heatmap")],
            "none", TEAM_RUN, kind="heatmap",
            options={"calculate": False, "yAxis": {"axisPlacement": "left", "unit": "none"},
                     "rowsFrame": {"layout": "le"}, "cellGap": 1,
                     "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64, "exponent": 0.5,
                               "fill": "dark-orange", "scale": "exponential", "reverse": False},
                     "legend": {"show": True}, "tooltip": {"show": True, "yHistogram": False}})
    b.panel("Iteration time", "Wall time between iterations, waiting included: median and 90th percentile.",
            [(f"histogram_quantile(0.5, sum by ({by_worker}, le) "
              f"(rate(edgetrain_iteration_seconds_bucket{{{worker}}}[{ri}])))", "worker {{worker}} p50"),
             (f"histogram_quantile(0.9, sum by ({by_worker}, le) "
              f"(rate(edgetrain_iteration_seconds_bucket{{{worker}}}[{ri}])))", "worker {{worker}} p90")],
            "s", TEAM_RUN)
    b.row("Energy (modelled)")
    # Each series' last value over the dashboard's range: the counters of
    # workers that left, or of a run that ended, go stale one by one, and a
    # plain sum fell at the end of every run (a user's trial: 751 J to 399 J
    # in its last second). A replaced worker's pod is a series of its own.
    # A pipeline's stage devices export theirs under a worker's name and
    # labels: both kinds of job are drawn alike.
    b.panel("Energy by state", "Modelled energy used so far by the selected workers' devices (a data-parallel "
                               "team's workers, a pipeline's stage devices), by state.",
            [(f"sum by ({by_job}, state) (last_over_time(edgetrain_energy_joules_total{{{worker}}}[$__range]))",
              "{{trainingjob}} {{state}}")],
            "joule", [TEAM_RUN, PIPELINE_RUN], stack=True)
    b.panel("Power", "Modelled watts: the job's, and each worker's device by state.",
            [(f"sum by ({by_job}) (rate(edgetrain_job_energy_joules_total{{{job}}}[{ri}]))", "{{trainingjob}} job"),
             (f"sum by ({by_worker}, state) (rate(edgetrain_energy_joules_total{{{worker}}}[{ri}]))",
              "worker {{worker}} {{state}}")],
            "watt", [TEAM_RUN, PIPELINE_RUN])
    # A team on streams (docs/streams.md): what arrives, what its buffer
    # drops, what waits in it, and how long each worker waited for samples,
    # which is not the team's doing (the stall).
    b.row("Streams")
    b.panel("Stream samples a second",
            "Samples each worker's stream delivered a second, and those its full buffer pushed out unseen "
            "(spec.data.stream.buffer, bufferCapacity): a stream faster than its worker trains.",
            [(f"sum by ({by_worker}) (rate(edgetrain_stream_arrived_samples_total{{{worker}}}[{ri}]))",
              "worker {{worker}} arrived"),
             (f"sum by ({by_worker}) (rate(edgetrain_stream_dropped_samples_total{{{worker}}}[{ri}]))",
              "worker {{worker}} dropped")],
            "none", STREAM_RUN)
    b.panel("Waiting for samples",
            "The share of time each worker's compute waited for a batch's minimum of samples to arrive "
            "(spec.data.stream.minBatchSize): its stream, not the team, set its pace.",
            [(f"sum by ({by_worker}) (rate(edgetrain_data_wait_seconds_total{{{worker}}}[{ri}]))", "worker {{worker}}")],
            "percentunit", STREAM_RUN, field_defaults={"min": 0, "max": 1})
    b.panel("Stream backlog", "Samples waiting in each worker's stream buffer.",
            [(f"max by ({by_worker}) (edgetrain_stream_backlog_samples{{{worker}}})", "worker {{worker}}")],
            "none", STREAM_RUN)
    # A pipeline's head exports its stages' series (docs/pipeline.md); a stage
    # is named by its number and the rank of the device it runs on.
    by_stage = "namespace, trainingjob, stage, worker"
    b.row("Pipeline")
    b.panel("Stage compute and bubbles",
            "The share of time each stage's device computed (forward and backward passes), and waited within a "
            "step for a neighbour's micro-batch (the pipeline's bubbles) or for its group's summed gradient. A "
            "stage with much bubble waits on a slower one, or on its group's exchange.",
            [(f"clamp_max(sum by ({by_stage}) (rate(edgetrain_stage_compute_seconds_total{{{worker}}}[{ri}])), 1)",
              "stage {{stage}} (worker {{worker}}) compute"),
             (f"clamp_max(sum by ({by_stage}) (rate(edgetrain_stage_bubble_seconds_total{{{worker}}}[{ri}])), 1)",
              "stage {{stage}} (worker {{worker}}) bubbles")],
            "percentunit", PIPELINE_RUN, field_defaults={"min": 0})
    b.panel("Activations relayed and replicas",
            "Bytes of activations and their gradients the head passes between stages a second, and of the "
            "replicas of their weights and optimizer state the stages send it (every replicateEvery steps), "
            "from which a stage whose only device is lost is rebuilt on its neighbour.",
            [(f"sum by ({by_job}) (rate(edgetrain_pipeline_relayed_bytes_total{{{job}}}[{ri}]))",
              "{{trainingjob}} activations"),
             (f"sum by ({by_job}) (rate(edgetrain_pipeline_replica_bytes_total{{{job}}}[{ri}]))",
              "{{trainingjob}} replicas")],
            "Bps", PIPELINE_RUN)
    return b.json()


def operator_dashboard():
    ri = "$__rate_interval"
    op = 'namespace=~"$namespace"'
    b = Board("edgetrain-operator", "edgetrain / operator",
              "The edgetrain operator: TrainingJobs by phase, reconciles, its queue, placements, re-plans, "
              "API errors and recovery time (docs/metrics.md).",
              [datasource_variable(),
               query_variable("namespace", "Operator namespace",
                              "label_values(edgetrain_operator_leader, namespace)")])
    b.row("Jobs")
    # Summed: two releases' leaders (namespace "All") each count their own jobs.
    b.panel("Jobs by phase", "TrainingJobs by status.phase, as the leading operators see them.",
            [(f"sum by (phase) (edgetrain_operator_jobs{{{op}}} and on (namespace, pod, instance) "
              f"(edgetrain_operator_leader{{{op}}} == 1))", "{{phase}}")],
            "none", OPERATOR_RUN, stack=True)
    b.panel("Leader", "Which operator replica holds the Lease and reconciles.",
            [(f"max by (pod, instance) (edgetrain_operator_leader{{{op}}})", "{{pod}} {{instance}}")],
            "none", OPERATOR_RUN)
    b.row("Reconciles")
    b.panel("Reconcile latency", "How long one reconcile of a TrainingJob takes: median and 99th percentile.",
            [(f"histogram_quantile(0.5, sum by (le) "
              f"(rate(edgetrain_operator_reconcile_duration_seconds_bucket{{{op}}}[{ri}])))", "p50"),
             (f"histogram_quantile(0.99, sum by (le) "
              f"(rate(edgetrain_operator_reconcile_duration_seconds_bucket{{{op}}}[{ri}])))", "p99")],
            "s", OPERATOR_RUN)
    b.panel("Reconciles/s by result", "Reconciles a second: ok, or error (an API failure, retried with back-off).",
            [(f"sum by (result) (rate(edgetrain_operator_reconcile_duration_seconds_count{{{op}}}[{ri}]))",
              "{{result}}")],
            "reqps", OPERATOR_RUN)
    b.panel("Queue depth", "TrainingJobs queued for a reconcile and ready now (the highest in each interval).",
            [(f"max(max_over_time(edgetrain_operator_queue_depth{{{op}}}[{ri}]))", "ready")],
            "none", OPERATOR_RUN)
    b.panel("Placements and re-plans", "Attempts to place a job's gang by result, and new plans given to running "
                                       "teams by reason, a minute.",
            [(f"sum by (result) (rate(edgetrain_operator_placements_total{{{op}}}[{ri}])) * 60", "placement {{result}}"),
             (f"sum by (reason) (rate(edgetrain_operator_replans_total{{{op}}}[{ri}])) * 60", "re-plan {{reason}}")],
            "opm", OPERATOR_RUN)
    b.panel("API requests/s", "Kubernetes API requests a second, by verb (edgetrain_operator_client_qps_limit "
                              "says whether a client-side limit holds them: none once the API server has shown it "
                              "does priority and fairness and --qps was not given).",
            [(f"sum by (verb) (rate(edgetrain_operator_api_requests_total{{{op}}}[{ri}]))", "{{verb}}")],
            "reqps", OPERATOR_RUN)
    b.panel("API errors", "Kubernetes API requests that failed, a minute, by verb and code.",
            [(f"sum by (verb, code) (rate(edgetrain_operator_api_errors_total{{{op}}}[{ri}])) * 60",
              "{{verb}} {{code}}")],
            "opm", OPERATOR_RUN)
    b.panel("Recovery time", "From a running team losing a worker (or having one moved off a leaving node) to "
                             "every pod of it running on a ready node again (losses mended in one stretch are one "
                             "recovery here): median and 90th percentile of the recoveries ended "
                             "in the hour before each point (recoveries are rare: over one scrape interval the "
                             "panel was empty nearly always).",
            [(f"histogram_quantile(0.5, sum by (le) "
              f"(increase(edgetrain_operator_recovery_seconds_bucket{{{op}}}[1h])))", "p50"),
             (f"histogram_quantile(0.9, sum by (le) "
              f"(increase(edgetrain_operator_recovery_seconds_bucket{{{op}}}[1h])))", "p90")],
            "s", OPERATOR_RUN)
    return b.json()


DASHBOARD_FILES = {
    "edgetrain-training.json": training_dashboard,
    "edgetrain-operator.json": operator_dashboard,
}


# -------------------------------------------------------------------- alerts

def alert(name, expr, for_, severity, summary, description, runbook):
    return {"alert": name, "expr": expr, "for": for_, "labels": {"severity": severity},
            "annotations": {"summary": summary, "description": description, "runbook": runbook}}


def alert_groups():
    job = "namespace, trainingjob"
    return [
        {"name": "edgetrain-training", "rules": [
            alert("EdgetrainJobStalled",
                  f"sum by ({job}) (rate(edgetrain_job_samples_total[5m])) == 0",
                  "5m", "warning",
                  # No sample over a 5-minute window, held for 5 minutes more.
                  "TrainingJob {{ $labels.trainingjob }} has trained no sample for 10 minutes",
                  "The coordinator of {{ $labels.namespace }}/{{ $labels.trainingjob }} runs but its team "
                  "consumed no sample in the last 10 minutes.",
                  "kubectl describe tj {{ $labels.trainingjob }} -n {{ $labels.namespace }}: look at the Running "
                  "and Stalled conditions and the workers' pods; a team still gathering waits for pods that are not "
                  "running, and a team on streams whose sources have gone quiet waits for samples (the Streams "
                  "row's data waits: edgetrain_data_wait_seconds_total rising on every worker)."),
            alert("EdgetrainLinkDown",
                  f"sum by ({job}, worker) (rate(edgetrain_coordinator_received_bytes_total[2m])) == 0 "
                  f"and on ({job}) sum by ({job}) (rate(edgetrain_job_samples_total[2m])) > 0",
                  "2m", "warning",
                  # Said as it fires, a 2-minute window held for 2 more: a user's
                  # trial read "2 minutes" off an alert 4 minutes after the last byte.
                  "Worker {{ $labels.worker }} of {{ $labels.trainingjob }} has sent nothing for 4 minutes",
                  "The coordinator applied no push from worker {{ $labels.worker }} of "
                  "{{ $labels.namespace }}/{{ $labels.trainingjob }} in 4 minutes while the rest of the team trains.",
                  "Check the link of the worker's node (edgetrain.dev/ annotations on the Node, the node's network); "
                  "the operator replaces the worker after spec.faultTolerance.nodeLossGrace if its pod is lost. A "
                  "worker whose pushes were refused (edgetrain_coordinator_refused_pushes_total) is quarantined, "
                  "and reads so too: the coordinator's log says why."),
            # Once the team trains: a new job's coordinator counts its team from
            # its start, and workers still pulling their image or connecting over
            # a slow link had paged as lost (found in review). A team that has
            # lost every worker trains nothing: EdgetrainJobStalled's.
            alert("EdgetrainWorkerLost",
                  f"max by ({job}) (edgetrain_job_active_workers) < max by ({job}) (edgetrain_job_workers) "
                  f"and on ({job}) sum by ({job}) (rate(edgetrain_job_samples_total[5m])) > 0",
                  "2m", "warning",
                  "{{ $labels.trainingjob }} trains with fewer workers than planned",
                  "Only {{ $value }} worker(s) of {{ $labels.namespace }}/{{ $labels.trainingjob }} are counted in "
                  "the staleness bound, fewer than its plan has, for 2 minutes.",
                  "kubectl get tj {{ $labels.trainingjob }} -n {{ $labels.namespace }} -o yaml: status.workers and "
                  "the Recovering phase say which worker is gone and whether a replacement is placed."),
            alert("EdgetrainEnergyBudgetNearlySpent",
                  f"max by ({job}) (edgetrain_job_energy_joules_total) "
                  f"/ on ({job}) (max by ({job}) (edgetrain_job_energy_budget_joules) > 0) > 0.9",
                  "0m", "info",
                  "{{ $labels.trainingjob }} has spent over 90% of its energy budget",
                  "The modelled energy of {{ $labels.namespace }}/{{ $labels.trainingjob }} is "
                  "{{ $value | humanizePercentage }} of spec.budget.energyJoules; the job stops at its budget.",
                  "Raise spec.budget.energyJoules if the job should go on (a job resumed from its checkpoint "
                  "counts its joules over every run); otherwise expect it to end Succeeded/BudgetSpent, stop "
                  "reason energyJoules, with the model it has. The joules are modelled (docs/energy.md), not "
                  "metered: a profile's power block sets each node's watts."),
            # A team's agents are each other's only judges of who joins
            # (docs/security.md): a refusal is someone at the job's port with
            # the wrong certificate, or one of its own agents whose has lapsed.
            alert("EdgetrainConnectionsRefused",
                  f"sum by ({job}, reason) (increase(edgetrain_agent_refused_connections_total[10m])) > 0",
                  "0m", "warning",
                  "The coordinator of {{ $labels.trainingjob }} refused connections: {{ $labels.reason }}",
                  "The coordinator (or pipeline head) of {{ $labels.namespace }}/{{ $labels.trainingjob }} "
                  "refused {{ $value | printf \"%.0f\" }} connection(s) for their TLS identity "
                  "({{ $labels.reason }}) in the last 10 minutes.",
                  "Its log's lines 'refused a connection from PEER: ...' name each peer and its certificate "
                  "(docs/security.md). From an address that is not one of the job's pods, someone else tries "
                  "to join; from one of its own agents, expired or not_yet_valid, look at its certificate (the "
                  "job's Secret NAME-tls) and the node's clock."),
        ]},
        {"name": "edgetrain-operator", "rules": [
            # An event, not a state: jobs in phase Failed stay until deleted
            # (no ttlSecondsAfterFinished by default), and a gauge of them kept
            # one alert firing for ever, silent on every later failure.
            alert("EdgetrainJobFailed",
                  "sum by (namespace, reason) (increase(edgetrain_operator_job_failures_total[10m])) > 0",
                  "0m", "warning",
                  "TrainingJobs failed: {{ $labels.reason }}",
                  "The operator in {{ $labels.namespace }} saw {{ $value | printf \"%.0f\" }} TrainingJob(s) fail "
                  "with reason {{ $labels.reason }} in the last 10 minutes.",
                  "kubectl get tj -A shows which (PHASE Failed); kubectl describe tj NAME gives the Failed "
                  "condition's message and the job's events."),
            # By release (its scrape `job`: one release's operator Service or
            # PodMonitor), and a release whose every replica stopped being
            # scraped within the last half hour: summed by namespace alone,
            # two releases in one namespace (each watching its own) read 1
            # with one's leader gone, and one release's pods gone left no
            # series while another's kept absent() false (found in review).
            # A release uninstalled among others fires for that half hour.
            alert("EdgetrainNoOperatorLeading",
                  "sum by (namespace, job) (edgetrain_operator_leader) < 1"
                  " or (max by (namespace, job) (last_over_time(edgetrain_operator_leader[30m]))"
                  " unless on (namespace, job) edgetrain_operator_leader)"
                  " or absent(edgetrain_operator_leader)",
                  "2m", "critical",
                  "No edgetrain operator replica is leading",
                  "No scraped operator replica{{ if $labels.namespace }} in {{ $labels.namespace }}{{ end }} holds "
                  "the Lease: its TrainingJobs are not reconciled.",
                  "kubectl -n NAMESPACE get pods -l app.kubernetes.io/component=operator: are the operator pods "
                  "running and ready, and can they reach the API server (their logs)? kubectl -n NAMESPACE get "
                  "leases: the operator's (the release's operator name, edgetrain-operator by default) names as "
                  "HOLDER the replica that held it last."),
            # A leader whose requests are refused keeps its Lease (renewed on
            # a client of its own) and answers /healthz: nothing else says so.
            # Refusals that go on, minute after minute: one refused request
            # (a helm upgrade swapping the roles) had held a 10-minute increase
            # above 0 past the 5 minutes held, and paged (found in review).
            alert("EdgetrainOperatorRequestsRefused",
                  "count_over_time((sum by (namespace, pod, verb) (increase(edgetrain_operator_api_errors_total"
                  "{code=\"FAILED_PRECONDITION\"}[2m])) > 0)[10m:1m]) >= 5",
                  "0m", "critical",
                  "The API server refuses the edgetrain operator's {{ $labels.verb }} requests",
                  "Operator pod {{ $labels.namespace }}/{{ $labels.pod }} has had {{ $labels.verb }} requests "
                  "refused as unauthorised or forbidden (HTTP 401 or 403) in at least 5 of the last 10 minutes: "
                  "the jobs those requests are for do not move.",
                  "Its log names the request refused. kubectl auth can-i --list "
                  "--as=system:serviceaccount:NAMESPACE:SERVICEACCOUNT shows what its ServiceAccount may do; "
                  "the chart's roles grant what docs/operator.md lists (rbac.create), and a Role of "
                  "operator.watchNamespace covers that namespace only."),
            alert("EdgetrainOperatorStuck",
                  "max by (namespace, pod) (edgetrain_operator_queue_depth) > 0 "
                  "and on (namespace, pod) sum by (namespace, pod) "
                  "(rate(edgetrain_operator_reconcile_duration_seconds_count[10m])) == 0 "
                  "and on (namespace, pod) max by (namespace, pod) (edgetrain_operator_leader) == 1",
                  "10m", "critical",
                  "The leading edgetrain operator reconciles nothing",
                  "Operator pod {{ $labels.namespace }}/{{ $labels.pod }} leads, and TrainingJobs wait in its "
                  "queue, but it has finished no reconcile in 20 minutes.",
                  "Its /readyz and its log's last lines say what it waits on; deleting the pod hands the Lease to "
                  "a standby, or restarts it."),
            alert("EdgetrainOperatorReconcileErrors",
                  "sum by (namespace, pod) (rate(edgetrain_operator_reconcile_duration_seconds_count"
                  "{result=\"error\"}[15m])) / sum by (namespace, pod) "
                  "(rate(edgetrain_operator_reconcile_duration_seconds_count[15m])) > 0.5",
                  "15m", "warning",
                  "Most of the edgetrain operator's reconciles fail",
                  "{{ $value | humanizePercentage }} of the reconciles of operator pod {{ $labels.namespace }}/"
                  "{{ $labels.pod }} have failed over 15 minutes; each is retried with back-off.",
                  "Its log's ReconcileFailed lines say which job and why; the Edgetrain operator dashboard's API "
                  "errors panel says which requests fail, by code."),
        ]},
    ]


def yaml_scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    # JSON strings are valid YAML double-quoted scalars.
    return json.dumps(v)


def to_yaml(value, indent=0):
    """A small YAML writer for dicts, lists and scalars (block style)."""
    pad = " " * indent
    lines = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{k}:")
                lines.append(to_yaml(v, indent + 2))
            else:
                lines.append(f"{pad}{k}: {yaml_scalar(v) if not isinstance(v, (dict, list)) else json.dumps(v)}")
    elif isinstance(value, list):
        for item in value:
            inner = to_yaml(item, indent + 2).lstrip()
            lines.append(f"{pad}- {inner}")
    else:
        lines.append(pad + yaml_scalar(value))
    return "\n".join(lines)


def rules_file():
    return ("# Generated by dashboards/generate.py: do not edit. A plain Prometheus rules file\n"
            "# (rule_files:); the Helm chart's PrometheusRule carries the same groups.\n"
            + to_yaml({"groups": alert_groups()}) + "\n")


# ------------------------------------------------------ the structural check

PANEL_KINDS = {"row", "timeseries", "heatmap", "stat", "bargauge", "table"}


def check_dashboard(d):
    """What Grafana needs to load a dashboard, checked without a Grafana server:
    required keys and types, unique panel ids, a datasource variable every target
    uses, every $variable defined, $__rate_interval in every rate() (a
    last_over_time may span $__range), no
    `or vector(0)`, grid positions inside the 24 columns and not overlapping."""
    errors = []

    def need(obj, key, kind, where):
        if key not in obj:
            errors.append(f"{where}: no {key}")
            return None
        if not isinstance(obj[key], kind):
            errors.append(f"{where}.{key}: not a {kind.__name__}")
            return None
        return obj[key]

    for key, kind in (("uid", str), ("title", str), ("schemaVersion", int), ("panels", list),
                      ("templating", dict), ("time", dict), ("tags", list)):
        need(d, key, kind, "dashboard")
    if errors:
        return errors
    if not (1 <= len(d["uid"]) <= 40):
        errors.append("uid: 1 to 40 characters")
    variables = need(d["templating"], "list", list, "templating") or []
    names = [v.get("name") for v in variables]
    if "datasource" not in names or next(v for v in variables if v["name"] == "datasource")["type"] != "datasource":
        errors.append("no datasource variable of type datasource")
    for v in variables:
        if v.get("type") == "query" and v.get("datasource") != DS:
            errors.append(f"variable {v.get('name')}: not on ${{datasource}}")
    defined = set(names) | {"__rate_interval", "__interval", "__range"}
    ids, cells = set(), []
    for p in d["panels"]:
        where = f"panel {p.get('title')!r}"
        for key, kind in (("type", str), ("title", str), ("id", int), ("gridPos", dict)):
            need(p, key, kind, where)
        if p.get("type") not in PANEL_KINDS:
            errors.append(f"{where}: unknown panel type {p.get('type')}")
        if p.get("id") in ids:
            errors.append(f"{where}: duplicate id {p.get('id')}")
        ids.add(p.get("id"))
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24 or g["w"] < 1:
            errors.append(f"{where}: gridPos {g} outside the 24 columns")
        else:
            cell = {(g["x"] + i, g["y"] + j) for i in range(g["w"]) for j in range(g["h"])}
            if any(cell & c for c in cells):
                errors.append(f"{where}: overlaps another panel")
            cells.append(cell)
        if p.get("type") == "row":
            continue
        if p.get("datasource") != DS:
            errors.append(f"{where}: datasource is not ${{datasource}}")
        targets = need(p, "targets", list, where) or []
        if not targets:
            errors.append(f"{where}: no targets")
        refs = [t.get("refId") for t in targets]
        if len(set(refs)) != len(refs):
            errors.append(f"{where}: duplicate refIds")
        for t in targets:
            expr = t.get("expr", "")
            if t.get("datasource") != DS:
                errors.append(f"{where} {t.get('refId')}: datasource is not ${{datasource}}")
            if not expr:
                errors.append(f"{where} {t.get('refId')}: no expr")
            if "vector(0)" in expr.replace(" ", ""):
                errors.append(f"{where}: `or vector(0)` makes nothing look like data")
            for used in _variables_in(expr):
                if used not in defined:
                    errors.append(f"{where}: ${used} is not a variable")
            # A rate over $__rate_interval; a series' last value over the
            # dashboard's range, for what is so far (a counter's total).
            if "rate(" in expr and "[$__rate_interval]" not in expr:
                errors.append(f"{where}: a rate without $__rate_interval")
            if "_over_time(" in expr and not ("[$__rate_interval]" in expr or "last_over_time(" in expr and
                                              "[$__range]" in expr):
                errors.append(f"{where}: a range without $__rate_interval (or last_over_time over $__range)")
            if expr.count("(") != expr.count(")") or expr.count("{") != expr.count("}"):
                errors.append(f"{where}: unbalanced brackets in {expr}")
        if "edgetrain" not in p or not p["edgetrain"].get("feeds"):
            errors.append(f"{where}: names no run that feeds it")
    return errors


def _variables_in(expr):
    out, i = [], 0
    while True:
        i = expr.find("$", i)
        if i < 0:
            return out
        j = i + 1
        while j < len(expr) and (expr[j].isalnum() or expr[j] == "_"):
            j += 1
        out.append(expr[i + 1:j])
        i = j


# --------------------------------------------------------------------- main

def outputs(boards):
    """{path: text} of every output, from the dashboards made once ({file name: dashboard})."""
    files = {}
    for name, board in boards.items():
        text = json.dumps(board, indent=2, sort_keys=False) + "\n"
        files[os.path.join(DASHBOARDS, name)] = text
        files[os.path.join(CHART_FILES, "dashboards", name)] = text
    rules = rules_file()
    files[os.path.join(DASHBOARDS, "alerts.yaml")] = rules
    files[os.path.join(CHART_FILES, "alerts.yaml")] = rules
    return files


def main(argv):
    check = "--check" in argv
    boards = {name: make() for name, make in DASHBOARD_FILES.items()}
    files = outputs(boards)
    problems = []
    for name, board in boards.items():
        problems += [f"{name}: {e}" for e in check_dashboard(board)]
    for path, text in files.items():
        rel = os.path.relpath(path, ROOT)
        if check:
            try:
                with open(path) as f:
                    if f.read() != text:
                        problems.append(f"{rel} differs from what dashboards/generate.py makes: run it")
            except FileNotFoundError:
                problems.append(f"{rel} is missing: run dashboards/generate.py")
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
    for p in problems:
        print(p, file=sys.stderr)
    if not check and not problems:
        print("generate.py: wrote " + ", ".join(sorted(os.path.relpath(p, ROOT) for p in files)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
