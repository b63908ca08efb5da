{{/*
Fleet mode (planner.enabled): the planner's CronJob and the two identities it needs. The planner
creates calibration Jobs; the Jobs run as the calibration ServiceAccount, never as the planner's.
*/}}

{{- define "tfta.plannerName" -}}
{{- printf "%s-planner" (include "tfta.fullname" .) -}}
{{- end -}}

{{/* The ServiceAccount the planned calibration Jobs run as (plan --service-account). */}}
{{- define "tfta.calibrationName" -}}
{{- printf "%s-calibration" (include "tfta.fullname" .) -}}
{{- end -}}

{{/*
Checks across values the schema cannot express: something must calibrate, and what the planner
passes as defaults must be a valid calibration.
*/}}
{{- define "tfta.validatePlanner" -}}
{{- if and (not .Values.targets) (not .Values.planner.enabled) -}}
{{- fail "targets is empty and planner.enabled is false: nothing would ever calibrate. Add a target, or set planner.enabled=true (fleet mode: docs/deploy.md, \"Fleet mode\")" -}}
{{- end -}}
{{- if and .Values.planner.enabled (eq (toString .Values.defaults.objective) "slo") (not .Values.defaults.p99Ms) -}}
{{- fail "planner.enabled with defaults.objective slo needs defaults.p99Ms (the planner's default bound)" -}}
{{- end -}}
{{- with .Values.planner.prometheus -}}
{{- if and (or .tokenKey .caKey) (not .existingSecret) -}}
{{- fail "planner.prometheus.tokenKey and caKey name keys of planner.prometheus.existingSecret: set it" -}}
{{- end -}}
{{- if and (or .existingSecret (not (empty .headers))) (not .url) -}}
{{- fail "planner.prometheus.existingSecret and headers need planner.prometheus.url" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.planner.namespaces (not (include "tfta.plannerCluster" .)) -}}
{{- fail "planner.namespaces lists namespaces for a planner of the whole cluster: set planner.scope=cluster too (scope namespace plans the release namespace alone)" -}}
{{- end -}}
{{- if and .Values.cleanup.enabled (not .Values.targets) -}}
{{- fail "cleanup.enabled deletes the targets' ConfigMaps at uninstall, and targets is empty (the planner's calibrations write the workloads' own ConfigMaps, which this cleanup does not touch): set cleanup.enabled=false" -}}
{{- end -}}
{{- end -}}

{{/* Whether the planner mounts the Prometheus Secret ("true" or empty). */}}
{{- define "tfta.prometheusSecret" -}}
{{- with .Values.planner.prometheus -}}
{{- if and .url .existingSecret (or .tokenKey .caKey) -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* planner.scope cluster: `plan --all-namespaces`, under a ClusterRole. */}}
{{- define "tfta.plannerCluster" -}}
{{- if eq (toString .Values.planner.scope) "cluster" }}true{{ end -}}
{{- end -}}

{{/*
The planner's rules, in a Role (scope namespace) or a ClusterRole (scope cluster): read the
opted-in workloads, their advice ConfigMaps, the claims their models live on and the calibration
Jobs already there; create Jobs.
In cluster scope also list the Namespaces that opted in and where the calibration ServiceAccount
exists.
*/}}
{{- define "tfta.plannerRules" -}}
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets"]
  verbs: ["get", "list"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "create"{{ if .Values.planner.retryFailed }}, "delete"{{ end }}]
{{- if .Values.planner.events }}
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{- end }}
# the access modes of the claim a model lives on: one only a node may mount is not calibrated
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "list"]
{{- if .Values.planner.prometheus.url }}
# production verdicts: which pods ran which containers, and a revert written back
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
- apiGroups: ["apps"]
  resources: ["daemonsets"]
  verbs: ["list"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["update"]
{{- end }}
{{- if include "tfta.plannerCluster" . }}
# plan --all-namespaces: the Namespaces labelled tf-thread-advisor.io/calibrate=true, and the
# namespaces holding the calibration ServiceAccount (names only: no token is stored in one)
- apiGroups: [""]
  resources: ["namespaces", "serviceaccounts"]
  verbs: ["list"]
{{- end }}
{{- end -}}

{{/*
The namespaces whose calibration Jobs run as the chart's calibration ServiceAccount: the release
namespace, then each of planner.namespaces (cluster scope), once each.
*/}}
{{- define "tfta.calibrationNamespaces" -}}
{{- $all := list .Release.Namespace -}}
{{- range .Values.planner.namespaces -}}
{{- $all = append $all . -}}
{{- end -}}
{{- $all | uniq | toJson -}}
{{- end -}}
