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
