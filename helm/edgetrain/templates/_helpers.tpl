{{/* Names and labels shared by every template. */}}

{{- define "edgetrain.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's objects are named this (the operator's Deployment, Service, roles). */}}
{{- define "edgetrain.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
A name of at most 63 characters that ends in its suffix: (list BASE SUFFIX).
The base is cut, never the suffix: cut after it was added, a release name of
37-53 characters gave a metrics Service of 64, which the API server refuses,
and one of 53 lost "-operator" altogether (found in review).
*/}}
{{- define "edgetrain.suffixed" -}}
{{- $base := index . 0 -}}
{{- $suffix := index . 1 -}}
{{- printf "%s%s" ($base | trunc (int (sub 63 (len $suffix))) | trimSuffix "-") $suffix -}}
{{- end -}}

{{- define "edgetrain.operatorName" -}}
{{- include "edgetrain.suffixed" (list (include "edgetrain.fullname" .) "-operator") -}}
{{- end -}}

{{/*
Cluster-scoped objects (the ClusterRole and its binding) carry the release's
namespace: a release of one name in two namespaces made the same ClusterRole, and
the second install failed on its ownership. Where the two do not fit in 63
characters, a hash of both stands for the namespace, so that a cut never makes two
releases' names one (two long release names in edge-site-north and -south had).
*/}}
{{- define "edgetrain.clusterName" -}}
{{- $whole := printf "%s-%s" (include "edgetrain.operatorName" .) .Release.Namespace -}}
{{- if le (len $whole) 63 -}}
{{- $whole -}}
{{- else -}}
{{- include "edgetrain.suffixed" (list $whole (printf "-%s" ($whole | sha256sum | trunc 10))) -}}
{{- end -}}
{{- end -}}

{{- define "edgetrain.metricsServiceName" -}}
{{- include "edgetrain.suffixed" (list (include "edgetrain.operatorName" .) "-metrics") -}}
{{- end -}}

{{/* A duration's milliseconds (500ms, 1m30s), its parts summed, as the operator reads it. */}}
{{- define "edgetrain.durationMs" -}}
{{- $ms := 0.0 -}}
{{- $unitMs := dict "ms" 1.0 "s" 1000.0 "m" 60000.0 "h" 3600000.0 -}}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ms|s|m|h)" . -1 -}}
{{- $ms = addf $ms (mulf (regexFind "^[0-9]+(\\.[0-9]+)?" . | float64) (get $unitMs (regexFind "(ms|s|m|h)$" .))) -}}
{{- end -}}
{{- $ms -}}
{{- end -}}

{{- define "edgetrain.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "edgetrain.labels" -}}
helm.sh/chart: {{ include "edgetrain.chart" . }}
app.kubernetes.io/name: {{ include "edgetrain.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: edgetrain
{{- end -}}

{{/* What selects the operator's pods: stable across upgrades (a Deployment's selector is immutable). */}}
{{- define "edgetrain.operatorSelector" -}}
app.kubernetes.io/name: {{ include "edgetrain.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "edgetrain.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "edgetrain.operatorName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* An image as (list REPOSITORY TAG DIGEST APPVERSION): pinned by its digest where one is given. */}}
{{- define "edgetrain.image" -}}
{{- $repository := index . 0 -}}
{{- if index . 2 -}}
{{- printf "%s@%s" $repository (index . 2) -}}
{{- else -}}
{{- printf "%s:%s" $repository (default (index . 3) (index . 1)) -}}
{{- end -}}
{{- end -}}

{{- define "edgetrain.operatorImage" -}}
{{- with .Values.image -}}
{{- include "edgetrain.image" (list .repository .tag .digest $.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{- define "edgetrain.agentImage" -}}
{{- with .Values.agent.image -}}
{{- include "edgetrain.image" (list .repository .tag .digest $.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/*
Values that each pass the schema but contradict one another: rendering fails with
what to change. Included once, by the Deployment's template.
*/}}
{{- define "edgetrain.validate" -}}
{{- $op := .Values.operator -}}
{{- if and (gt (int $op.replicas) 1) (not $op.leaderElection.enabled) -}}
{{- fail (printf "operator.replicas is %d but operator.leaderElection.enabled is false: every replica would reconcile the same jobs at once. Enable leader election or run one replica." (int $op.replicas)) -}}
{{- end -}}
{{- if and (not .Values.serviceAccount.create) (not .Values.serviceAccount.name) -}}
{{- fail "serviceAccount.create is false but serviceAccount.name is empty: name the existing ServiceAccount the operator should run as." -}}
{{- end -}}
{{- if and .Values.serviceMonitor.enabled (not .Values.metrics.service.enabled) -}}
{{- fail "serviceMonitor.enabled is true but metrics.service.enabled is false: the ServiceMonitor scrapes the operator through that Service. Enable both or neither." -}}
{{- end -}}
{{- if and .Values.prometheusRule.enabled (not .Values.prometheusRule.edgetrainAlerts) (not .Values.prometheusRule.groups) -}}
{{- fail "prometheusRule.enabled is true but prometheusRule.edgetrainAlerts is false and prometheusRule.groups is empty: the PrometheusRule would have no rules. Turn edgetrainAlerts on, give groups, or leave it disabled." -}}
{{- end -}}
{{- /* The schema's duration takes any length over 0; the agents read a keepalive in milliseconds, and the operator refuses less. Its parts are summed, so that 0s0.5ms is as short as 0.5ms. */ -}}
{{- with .Values.jobDefaults.agentKeepalive -}}
{{- if lt (include "edgetrain.durationMs" . | float64) 1.0 -}}
{{- fail (printf "jobDefaults.agentKeepalive is %s, under 1ms: the agents read their keepalive in milliseconds, and the operator refuses less. Give 1ms or more, or leave it empty for the operator's default (10s)." .) -}}
{{- end -}}
{{- end -}}
{{- /* The operator reads its /progress timeout in milliseconds too, and refused less at start: its pods crash-looped (found in review). */ -}}
{{- with $op.waits.progressTimeout -}}
{{- if lt (include "edgetrain.durationMs" . | float64) 1.0 -}}
{{- fail (printf "operator.waits.progressTimeout is %s, under 1ms: the operator times a read of /progress in milliseconds, and refuses less. Give 1ms or more, or leave it empty for the operator's default (3s)." .) -}}
{{- end -}}
{{- end -}}
{{- /* The operator refuses these at start, and its pods crash-looped: said at install instead. "" is the operator's default. */ -}}
{{- $le := $op.leaderElection -}}
{{- if $le.enabled -}}
{{- $lease := include "edgetrain.durationMs" (default "15s" $le.leaseDuration) | float64 -}}
{{- $renew := include "edgetrain.durationMs" (default "10s" $le.renewDeadline) | float64 -}}
{{- $retry := include "edgetrain.durationMs" (default "2s" $le.retryPeriod) | float64 -}}
{{- if not (and (gt $lease $renew) (gt $renew $retry)) -}}
{{- fail (printf "operator.leaderElection: leaseDuration (%s) must be longer than renewDeadline (%s), and that longer than retryPeriod (%s); \"\" is the operator's default (15s, 10s, 2s)." (default "15s" $le.leaseDuration) (default "10s" $le.renewDeadline) (default "2s" $le.retryPeriod)) -}}
{{- end -}}
{{- if or (ne (mod (int $lease) 1000) 0) (ne $lease (float64 (int $lease))) -}}
{{- fail (printf "operator.leaderElection: leaseDuration (%s) must be whole seconds: the Lease records it in seconds, as standbys read it." (default "15s" $le.leaseDuration)) -}}
{{- end -}}
{{- if lt (subf $lease $renew) 100.0 -}}
{{- fail (printf "operator.leaderElection: leaseDuration (%s) must be at least 100ms longer than renewDeadline (%s): a renewal must end within the margin." (default "15s" $le.leaseDuration) (default "10s" $le.renewDeadline)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The operator's flags (operator/main.cc), as a YAML list. A wait left "" is not passed,
so the operator's own default holds.
*/}}
{{- define "edgetrain.operatorArgs" -}}
{{- $op := .Values.operator -}}
{{- $le := $op.leaderElection -}}
{{- $args := list (printf "--http=%s:%d" (default "0.0.0.0" $op.httpAddress) (int $op.httpPort)) (printf "--leader-elect=%t" $le.enabled) -}}
{{- if $le.enabled -}}
{{- $args = append $args (printf "--leader-election-namespace=%s" .Release.Namespace) -}}
{{- $args = append $args (printf "--leader-election-id=%s" (include "edgetrain.operatorName" .)) -}}
{{- range $flag, $value := dict "lease-duration" $le.leaseDuration "renew-deadline" $le.renewDeadline "retry-period" $le.retryPeriod -}}
{{- if $value }}{{ $args = append $args (printf "--%s=%s" $flag $value) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- with $op.watchNamespace -}}
{{- $args = append $args (printf "--namespace=%s" .) -}}
{{- end -}}
{{- $args = append $args (printf "--workers=%d" (int $op.workers)) -}}
{{- if $op.qps }}{{ $args = append $args (printf "--qps=%v" $op.qps) }}{{ end -}}
{{- $args = append $args (printf "--burst=%d" (int $op.burst)) -}}
{{- $args = append $args (printf "--default-image=%s" (include "edgetrain.agentImage" .)) -}}
{{- $args = append $args (printf "--termination-grace=%d" (int .Values.jobDefaults.terminationGracePeriodSeconds)) -}}
{{- with .Values.jobDefaults.agentKeepalive }}{{ $args = append $args (printf "--agent-keepalive=%s" .) }}{{ end -}}
{{- $w := $op.waits -}}
{{- range $flag, $value := dict "status-interval" $w.statusInterval "unschedulable-retry" $w.unschedulableRetry "watch-timeout" $w.watchTimeout "measurement-interval" $w.measurementInterval "measurement-max-age" $w.measurementMaxAge "progress-timeout" $w.progressTimeout -}}
{{- if $value }}{{ $args = append $args (printf "--%s=%s" $flag $value) }}{{ end -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}

{{/* What the operator does to jobs and the objects it makes for them (rbac.yaml). */}}
{{- define "edgetrain.jobRules" -}}
# follow jobs; delete one ttlSecondsAfterFinished after it ended
- apiGroups: [edgetrain.dev]
  resources: [trainingjobs]
  verbs: [list, watch, delete]
# write a job's status
- apiGroups: [edgetrain.dev]
  resources: [trainingjobs/status]
  verbs: [update]
# owner references that block the job's deletion (blockOwnerDeletion), which a cluster
# enforcing OwnerReferencesPermissionEnforcement (OpenShift's) allows only to who may
# update the job's finalizers: every object made for a job was refused there
- apiGroups: [edgetrain.dev]
  resources: [trainingjobs/finalizers]
  verbs: [update]
# a job's agents
- apiGroups: [""]
  resources: [pods]
  verbs: [create, delete]
# a job's headless Service; one of its name already there is read, to leave another's alone
- apiGroups: [""]
  resources: [services]
  verbs: [get, create]
# a job's plan, and its next generations
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update]
# a team's credentials for mutual TLS: its authority, and its agents' certificate, renewed
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, create, update]
# name the coordinator's node on an unbound output claim
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, patch]
# the story `kubectl describe tj` tells, an event said again counted on the one written
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
{{- end -}}
