{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "tfta.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-scoped name: the release name alone when it already contains the chart name. */}}
{{- define "tfta.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 30 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 30 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tfta.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels: stable across upgrades (the NetworkPolicy selects on these). */}}
{{- define "tfta.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tfta.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The standard app.kubernetes.io/* labels every object carries. */}}
{{- define "tfta.labels" -}}
helm.sh/chart: {{ include "tfta.chart" . }}
{{ include "tfta.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tf-thread-advisor
{{- end -}}

{{- define "tfta.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tfta.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
repository:tag or repository@digest (a digest pins the exact image). No registry publishes the
image, so an empty repository fails the install here instead of as an image pull error later.
*/}}
{{- define "tfta.image" -}}
{{- if not .Values.image.repository -}}
{{- fail "image.repository is not set: no public registry has the tf-thread-advisor image. Build and push it first (docs/deploy.md, \"0. Build the image\"), then install with --set image.repository=REGISTRY/tf-thread-advisor (and image.tag or image.digest)" -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
Per-target object name: <fullname>-<target>, at most 51 characters (fullname <= 30, target name
<= 20), so "-r<revision>" still fits the 63 characters of a Job name.
*/}}
{{- define "tfta.targetName" -}}
{{- printf "%s-%s" (include "tfta.fullname" .root) .target.name | trunc 51 | trimSuffix "-" -}}
{{- end -}}

{{/*
Checks the schema cannot express: target names and ConfigMap names must be unique, since each
target owns one Job and one ConfigMap.
*/}}
{{- define "tfta.validateTargets" -}}
{{- $names := dict -}}
{{- $cms := dict -}}
{{- range .Values.targets -}}
{{- if hasKey $names .name -}}
{{- fail (printf "targets: name %q is used twice; each target needs its own name" .name) -}}
{{- end -}}
{{- if hasKey $cms .configMapName -}}
{{- fail (printf "targets: configMapName %q is used by two targets; each target writes its own ConfigMap" .configMapName) -}}
{{- end -}}
{{- $_ := set $names .name true -}}
{{- $_ := set $cms .configMapName true -}}
{{- end -}}
{{- end -}}

{{/*
Checkov exceptions that hold for every advisor pod, each with its reason; the image ones only
when the user has not pinned a digest / chosen Always.
*/}}
{{- define "tfta.checkovSkips" -}}
checkov.io/skip1: CKV_K8S_38=the advisor GETs and server-side-applies its ConfigMap through the API; the token is its only credential and its Role allows only the target ConfigMaps
{{- include "tfta.checkovImageSkips" . }}
{{- end -}}

{{/* The image exceptions alone (every pod running the advisor image). */}}
{{- define "tfta.checkovImageSkips" -}}
{{- if not .Values.image.digest }}
checkov.io/skip2: CKV_K8S_43=no image.digest given; set image.digest to pin the image you mirror
{{- end }}
{{- if ne .Values.image.pullPolicy "Always" }}
checkov.io/skip3: CKV_K8S_15=the tag (or digest) is pinned, and IfNotPresent lets nodes with a preloaded image run the Job
{{- end }}
{{- end -}}

{{/* The container securityContext every container here runs with. */}}
{{- define "tfta.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/*
The ServiceAccount token of a pod whose other containers run someone else's code (the target's
serving image copying the model): the pod sets automountServiceAccountToken: false and mounts
this volume, what the kubelet would have mounted, into the advisor container alone. In-cluster
config reads token, ca.crt and namespace from the mount path.
*/}}
{{- define "tfta.apiAccessVolume" -}}
- name: kube-api-access
  projected:
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 3607
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
      - downwardAPI:
          items:
            - path: namespace
              fieldRef:
                apiVersion: v1
                fieldPath: metadata.namespace
{{- end -}}

{{- define "tfta.apiAccessMount" -}}
- name: kube-api-access
  mountPath: /var/run/secrets/kubernetes.io/serviceaccount
  readOnly: true
{{- end -}}

{{- define "tfta.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Value of a target key, falling back to .Values.defaults. Call with (dict "root" $ "target" $t "key" "budget"). */}}
{{- define "tfta.setting" -}}
{{- if hasKey .target .key -}}
{{- index .target .key -}}
{{- else -}}
{{- index .root.Values.defaults .key | default "" -}}
{{- end -}}
{{- end -}}

{{/* Where the advisor finds the model inside its container ("" = built-in model). */}}
{{- define "tfta.modelPath" -}}
{{- $m := .target.model | default (dict "source" "builtin") -}}
{{- if eq $m.source "image" -}}
{{- $m.path -}}
{{- else if eq $m.source "initContainer" -}}
{{- printf "/model/%s" (base $m.path) -}}
{{- else if eq $m.source "pvc" -}}
{{- if $m.path -}}{{- printf "/model/%s" (trimPrefix "/" $m.path) -}}{{- else -}}/model{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The pod spec of one target's calibration run, shared by its Job and its CronJob.
Call with (dict "root" $ "target" $t).
*/}}
{{- define "tfta.podSpec" -}}
{{- $root := .root -}}
{{- $t := .target -}}
{{- $m := $t.model | default (dict "source" "builtin") -}}
{{- $modelPath := include "tfta.modelPath" . -}}
{{- $objective := include "tfta.setting" (dict "root" $root "target" $t "key" "objective") -}}
{{- if and (eq $objective "slo") (not (include "tfta.setting" (dict "root" $root "target" $t "key" "p99Ms"))) -}}
{{- fail (printf "targets[%s]: objective slo needs p99Ms (on the target or in defaults)" $t.name) -}}
{{- end -}}
{{- /* The Job's deadline covers image pull, TF start-up and the publish too, not just the sweep:
a budget that does not fit would be killed (DeadlineExceeded) with nothing written. */ -}}
{{- $budget := include "tfta.setting" (dict "root" $root "target" $t "key" "budget") | int -}}
{{- if gt (add $budget 300) (int $root.Values.job.activeDeadlineSeconds) -}}
{{- fail (printf "targets[%s]: budget %d s needs job.activeDeadlineSeconds >= %d (budget + 300 s for image pull, start-up and publishing), not %d" $t.name $budget (add $budget 300) (int $root.Values.job.activeDeadlineSeconds)) -}}
{{- end -}}
restartPolicy: Never
serviceAccountName: {{ include "tfta.serviceAccountName" $root }}
# The token goes to the advisor container alone (kube-api-access below), never to the init
# container that runs the target's serving image.
automountServiceAccountToken: false
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.job.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
securityContext:
  {{- include "tfta.podSecurityContext" $root | nindent 2 }}
{{- with $t.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $t.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $t.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if eq $m.source "initContainer" }}
initContainers:
  # Copies the model out of the target's own serving image, so the advisor measures exactly
  # the model that is served, without baking it into a second image.
  - name: copy-model
    image: {{ $m.image }}
    imagePullPolicy: {{ $m.imagePullPolicy | default "IfNotPresent" }}
    command: ["cp", "-RL", {{ $m.path | quote }}, "/model/"]
    resources:
      requests:
        cpu: 100m
        memory: 128Mi
      limits:
        cpu: "1"
        memory: 512Mi
    securityContext:
      {{- include "tfta.containerSecurityContext" $root | nindent 6 }}
    volumeMounts:
      - name: model
        mountPath: /model
{{- end }}
containers:
  - name: advisor
    image: {{ $t.image | default (include "tfta.image" $root) }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    args:
      - run
      - --configmap={{ $t.configMapName }}
      - --namespace=$(TFTA_POD_NAMESPACE)
      - --budget={{ include "tfta.setting" (dict "root" $root "target" $t "key" "budget") }}
      - --objective={{ $objective }}
      {{- if eq $objective "slo" }}
      - --p99-ms={{ include "tfta.setting" (dict "root" $root "target" $t "key" "p99Ms") }}
      {{- end }}
      - --batch-size={{ include "tfta.setting" (dict "root" $root "target" $t "key" "batchSize") }}
      - --concurrency={{ include "tfta.setting" (dict "root" $root "target" $t "key" "concurrency") }}
      {{- $trialMode := include "tfta.setting" (dict "root" $root "target" $t "key" "trialMode") }}
      {{- if and $trialMode (ne $trialMode "auto") }}
      - --trial-mode={{ $trialMode }}
      {{- end }}
      {{- if eq (include "tfta.setting" (dict "root" $root "target" $t "key" "sweepOnednn")) "true" }}
      - --sweep-onednn
      {{- end }}
      {{- if $modelPath }}
      - --model={{ $modelPath }}
      {{- with $m.signature }}
      - --signature={{ . }}
      {{- end }}
      {{- /* a file inside the model directory, relative to it, or none */}}
      {{- with $m.requests }}
      - --requests={{ if eq . "none" }}none{{ else }}{{ $modelPath }}/{{ . }}{{ end }}
      {{- end }}
      {{- with $m.inputShape }}
      - --input-shape={{ . }}
      {{- end }}
      {{- end }}
      {{- /* the Job's node pool, recorded in the advice (also as node labels): status
      reports consumers that are not pinned to it (node-pool-differs) */}}
      {{- range $k, $v := $t.nodeSelector }}
      - --node-selector={{ $k }}={{ $v }}
      {{- end }}
      {{- if $root.Values.reloader.match }}
      - --configmap-annotation=reloader.stakater.com/match=true
      {{- end }}
      {{- range $t.restart }}
      - --restart={{ . }}
      {{- end }}
    env:
      # Downward API: the probe cross-checks the cgroup quota against the pod's CPU limit and
      # the advice records the node it was measured on.
      - name: TFTA_NODE_NAME
        valueFrom:
          fieldRef:
            fieldPath: spec.nodeName
      - name: TFTA_POD_NAME
        valueFrom:
          fieldRef:
            fieldPath: metadata.name
      - name: TFTA_POD_NAMESPACE
        valueFrom:
          fieldRef:
            fieldPath: metadata.namespace
      - name: TFTA_CPU_LIMIT
        valueFrom:
          resourceFieldRef:
            containerName: advisor
            resource: limits.cpu
            divisor: 1m
      - name: TFTA_CPU_REQUEST
        valueFrom:
          resourceFieldRef:
            containerName: advisor
            resource: requests.cpu
            divisor: 1m
    # Exactly the target Deployment's resources: the advice holds for the CPUs it was measured on.
    resources:
      {{- toYaml $t.resources | nindent 6 }}
    securityContext:
      {{- include "tfta.containerSecurityContext" $root | nindent 6 }}
    volumeMounts:
      {{- include "tfta.apiAccessMount" $root | nindent 6 }}
      - name: tmp
        mountPath: /tmp
      {{- if or (eq $m.source "initContainer") (eq $m.source "pvc") }}
      - name: model
        mountPath: /model
        readOnly: true
      {{- end }}
volumes:
  {{- include "tfta.apiAccessVolume" $root | nindent 2 }}
  # The only writable path: Python, Keras and the trial children write here.
  - name: tmp
    emptyDir:
      sizeLimit: {{ $root.Values.job.tmpSizeLimit }}
  {{- if eq $m.source "initContainer" }}
  - name: model
    emptyDir: {}
  {{- else if eq $m.source "pvc" }}
  - name: model
    persistentVolumeClaim:
      claimName: {{ $m.claimName }}
      readOnly: true
  {{- end }}
{{- end -}}

{{/* Job-level settings shared by the Job and the CronJob's jobTemplate. */}}
{{- define "tfta.jobSpecSettings" -}}
backoffLimit: {{ .Values.job.backoffLimit }}
activeDeadlineSeconds: {{ .Values.job.activeDeadlineSeconds }}
ttlSecondsAfterFinished: {{ .Values.job.ttlSecondsAfterFinished }}
podFailurePolicy:
  rules:
    # Exit codes (advisor/errors.py, README "Exit codes") a retry cannot fix: internal 1,
    # usage 2, probe 3, model 4, invalid advice 6, forbidden 8, rejected by the API server 10,
    # mismatch 11, local output 12, a better stored advice kept 13, a restart target missing or
    # not patchable 14, a restart failed after the advice was written 15 (the advice stands), a
    # request file that cannot be replayed 18.
    - action: FailJob
      onExitCodes:
        containerName: advisor
        operator: In
        values: [1, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15, 18]
    # Retried, counting towards backoffLimit: calibration 5, unreachable 7, conflict 9.
    # Interrupted (130) is in no exit-code rule: a drained pod's SIGTERM reaches the
    # DisruptionTarget rule below.
    - action: Count
      onExitCodes:
        containerName: advisor
        operator: In
        values: [5, 7, 9]
    # Eviction, preemption, node drain: retried without counting.
    - action: Ignore
      onPodConditions:
        - type: DisruptionTarget
          status: "True"
{{- end -}}

{{- /*
The pod labels and annotations of every pod the chart runs: the service meshes' opt-outs of
sidecar injection (meshOptOut; the advisor talks to the API server alone, and a proxy sidecar never
exits, so its Job would never complete), then job.podLabels/podAnnotations, which win on a key
they share. The keys are the calibration Jobs' (advisor/fleet/advisor_pod.py MESH_OPT_OUT_*).
*/}}
{{- define "tfta.podLabels" -}}
{{- $labels := deepCopy (.Values.job.podLabels | default dict) -}}
{{- if .Values.meshOptOut -}}
{{- $labels = merge $labels (dict "sidecar.istio.io/inject" "false" "kuma.io/sidecar-injection" "disabled") -}}
{{- end -}}
{{- with $labels }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{- define "tfta.podAnnotations" -}}
{{- $annotations := deepCopy (.Values.job.podAnnotations | default dict) -}}
{{- if .Values.meshOptOut -}}
{{- $annotations = merge $annotations (dict "sidecar.istio.io/inject" "false" "kuma.io/sidecar-injection" "disabled" "linkerd.io/inject" "disabled" "consul.hashicorp.com/connect-inject" "false") -}}
{{- end -}}
{{- with $annotations }}{{ toYaml . }}{{ end -}}
{{- end -}}
