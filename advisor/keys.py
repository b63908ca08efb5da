"""Every label and annotation key the advisor writes or reads, grouped by the object that carries
it, with the label values it selects by.

The keys are the advisor's public face: a user labels a workload with them, kubectl and
dashboards select by them, and an advice written by an older advisor is read back by them, so a
key's text never changes. They sit at the bottom of the layers, importing nothing, because every
layer uses them: the advice's ConfigMap (``advisor.recommend``), the cluster code, fleet mode's
decisions and the pipeline. One text has one name here: a key two objects carry (``ANN_CONTAINER``
on a workload asks for a container, on a calibration Job says which one it measures) is defined
once, with both meanings, so the two can never drift apart.
"""

from __future__ import annotations

#: the advisor's own annotation and label keys are under this prefix
PREFIX = "tf-thread-advisor.io/"
#: the app's name: the value of LABEL_NAME on what it writes, and the advice's manager
APP_NAME = "tf-thread-advisor"
#: the field manager of every server-side apply and patch: the ownership of the fields the
#: advisor writes hangs on it, so the ConfigMap writer and the restarter must send the same one
FIELD_MANAGER = "tf-thread-advisor"

# --------------------------------------------------------------------------------------------------
# Kubernetes' recommended labels, on every object the advisor writes

LABEL_NAME = "app.kubernetes.io/name"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_VERSION = "app.kubernetes.io/version"

# --------------------------------------------------------------------------------------------------
# The advice ConfigMap

#: its LABEL_COMPONENT (LABEL_MANAGED_BY is APP_NAME)
ADVICE_COMPONENT = "thread-advice"
#: what a list of the advice ConfigMaps selects
ADVICE_SELECTOR = f"{LABEL_NAME}={APP_NAME},{LABEL_COMPONENT}={ADVICE_COMPONENT}"
PROVENANCE_ANNOTATION = PREFIX + "provenance"
HASH_ANNOTATION = PREFIX + "content-hash"
#: when ``data`` last changed (UTC, RFC 3339): kept across runs that advise the same values, so a
#: pod that started after it runs the current values (what ``status`` checks consumers against)
DATA_CHANGED_ANNOTATION = PREFIX + "data-changed-at"
SCHEMA_ANNOTATION = PREFIX + "schema-version"
#: the advice it replaced (what a revert goes back to)
PREVIOUS_ANNOTATION = PREFIX + "previous"
#: why the advice was reverted
REVERTED_ANNOTATION = PREFIX + "reverted"
#: the settings production rejected
REJECTED_ANNOTATION = PREFIX + "rejected"

# --------------------------------------------------------------------------------------------------
# A workload (and a Namespace): opting in, and what it asks of its calibration

#: the label that opts a workload, or every workload of a Namespace (``plan -A``), in: "true" in,
#: "false" out. A list selects the label's key, whatever its value, so a value that is neither
#: ("True", "yes") is a decision naming it rather than a workload silently left out
LABEL_CALIBRATE = PREFIX + "calibrate"
OPT_IN_SELECTOR = LABEL_CALIBRATE
NAMESPACE_SELECTOR = OPT_IN_SELECTOR
#: the calibration options a workload's annotations set
ANN_MODEL = PREFIX + "model"
ANN_OBJECTIVE = PREFIX + "objective"
ANN_CONCURRENCY = PREFIX + "concurrency"
ANN_BATCH_SIZE = PREFIX + "batch-size"
ANN_P99_MS = PREFIX + "p99-ms"
ANN_BUDGET = PREFIX + "budget"
#: a request file inside the model directory (relative to it), or "none"
ANN_REQUESTS = PREFIX + "requests"
#: the dimensions after the batch of inputs with unknown ones (--input-shape's syntax)
ANN_INPUT_SHAPE = PREFIX + "input-shape"
ANN_RESTART = PREFIX + "restart"
#: on a workload: the serving container to calibrate, where its pod has several; on a
#: calibration Job: the container it measures
ANN_CONTAINER = PREFIX + "container"
#: on a workload: the advice ConfigMap to write, where its container reads none or several; on a
#: calibration Job: the ConfigMap it writes
ANN_CONFIGMAP = PREFIX + "configmap"
#: its latency query (PromQL, the p99 in seconds), for production verdicts
LATENCY_QUERY_ANNOTATION = PREFIX + "latency-query"
#: its load query (PromQL, requests per second): windows of different load are not compared
LOAD_QUERY_ANNOTATION = PREFIX + "load-query"
#: "false": ``plan`` never writes the previous advice back where production regressed on its
#: advice (the verdict is still shown); "true" or absent: it may
ANN_REVERT = PREFIX + "revert"
#: on its pod template: a restart sets it to the advice's content hash
ADVICE_HASH_ANNOTATION = PREFIX + "advice-hash"

#: Reloader's (stakater) keys on a workload, which restart it when its ConfigMaps change
RELOADER_RELOAD = "configmap.reloader.stakater.com/reload"
RELOADER_AUTO = ("reloader.stakater.com/auto", "configmap.reloader.stakater.com/auto")
RELOADER_SEARCH = "reloader.stakater.com/search"
RELOADER_MATCH = "reloader.stakater.com/match"

# --------------------------------------------------------------------------------------------------
# A calibration Job (``plan``): the planner selects the Jobs it made by these labels and reads
# back what each is for from these annotations; ``status`` reads them too

#: its LABEL_COMPONENT and LABEL_MANAGED_BY
CALIBRATION_COMPONENT = "calibration"
PLANNER_MANAGED_BY = "tf-thread-advisor-plan"
PLANNED_SELECTOR = f"{LABEL_NAME}={APP_NAME},{LABEL_COMPONENT}={CALIBRATION_COMPONENT}"
#: the spec and pool hashes as labels, to select by (a label value holds 63 characters at most,
#: so the readable values go in annotations)
LABEL_SPEC_HASH = PREFIX + "spec-hash"
LABEL_POOL_HASH = PREFIX + "pool-hash"
#: what the Job measures: the workload (``deployment/NAME``), its container (ANN_CONTAINER), the
#: ConfigMap it writes (ANN_CONFIGMAP) and the node pool, readable ("pool=a" or "any node")
ANN_JOB_WORKLOAD = PREFIX + "workload"
ANN_JOB_POOL = PREFIX + "pool"

#: the service meshes' opt-outs of sidecar injection, on the calibration pod, which a namespace
#: may turn on for every pod: a proxy sidecar never exits, so the Job would never complete, and
#: the calibration pod serves nothing and talks only to the API server. Istio reads the label
#: (newer) or the annotation (older), Kuma the label (the annotation before 2.x), Linkerd and
#: Consul the annotation
MESH_OPT_OUT_LABELS = {
    "sidecar.istio.io/inject": "false",
    "kuma.io/sidecar-injection": "disabled",
}
MESH_OPT_OUT_ANNOTATIONS = {
    **MESH_OPT_OUT_LABELS,
    "linkerd.io/inject": "disabled",
    "consul.hashicorp.com/connect-inject": "false",
}
