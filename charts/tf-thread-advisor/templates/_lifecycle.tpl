{{/*
Names and annotations for the release lifecycle: how the one-off Job is named under Helm, Flux
and Argo CD (job.mode), and the opt-in uninstall cleanup (cleanup.enabled).
*/}}

{{/*
The one-off Job of a target. revision: -r<revision>, a new Job per install/upgrade (a Job's pod
template is immutable, so it is never patched). hook: a fixed name, since the hook annotations
make Helm and Argo CD delete the previous Job before creating it again.
Call with (dict "root" $ "target" $t).
*/}}
{{- define "tfta.jobName" -}}
{{- if eq (.root.Values.job.mode | default "revision") "hook" -}}
{{- printf "%s-calibrate" (include "tfta.targetName" .) -}}
{{- else -}}
{{- printf "%s-r%d" (include "tfta.targetName" .) (int .root.Release.Revision) -}}
{{- end -}}
{{- end -}}

{{/*
job.mode hook: Helm runs the Job after install/upgrade, Argo CD after each sync (PostSync: the
ServiceAccount and Role exist by then); both delete the previous Job before creating the new one.
*/}}
{{- define "tfta.jobHookAnnotations" -}}
{{- if eq (.Values.job.mode | default "revision") "hook" }}
helm.sh/hook: post-install,post-upgrade
helm.sh/hook-delete-policy: before-hook-creation
argocd.argoproj.io/hook: PostSync
argocd.argoproj.io/hook-delete-policy: BeforeHookCreation
{{- end }}
{{- end -}}

{{/* Checks across values the schema cannot express. */}}
{{- define "tfta.validateLifecycle" -}}
{{- if and .Values.targets (eq (.Values.job.mode | default "revision") "none") (not .Values.cronJob.enabled) -}}
{{- fail "job.mode none renders no one-off Job: enable cronJob (cronJob.enabled=true), or nothing ever calibrates" -}}
{{- end -}}
{{- end -}}

{{/* The uninstall cleanup's ServiceAccount, Role, RoleBinding and Job all carry this name. */}}
{{- define "tfta.cleanupName" -}}
{{- printf "%s-cleanup" (include "tfta.fullname" .) -}}
{{- end -}}

{{/*
Hook annotations of the uninstall cleanup: Helm post-delete (Argo CD PostDelete, 2.10+), the
ServiceAccount and Role before the Job (weights), all deleted once the Job succeeded; a failed Job
is kept for `kubectl logs` until ttlSecondsAfterFinished or the next attempt.
*/}}
{{- define "tfta.cleanupHookAnnotations" -}}
helm.sh/hook: post-delete
helm.sh/hook-weight: {{ .weight | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
argocd.argoproj.io/hook: PostDelete
argocd.argoproj.io/hook-delete-policy: HookSucceeded
{{- end -}}
