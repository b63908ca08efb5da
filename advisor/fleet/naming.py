"""What names a calibration Job: its labels and annotations, the names of its containers and
of the volumes it defines itself, its name and the spec and pool hashes.

The planner selects the Jobs it made by these labels and reads back what each one is for from
these annotations, so they are the Job's public face: ``status`` and ``plan`` read them too.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from advisor import recommend
from advisor.recommend import ANNOTATION_PREFIX, APP_NAME

#: the workloads a calibration is derived from (a Job's owner, ``kind/name`` in ANN_WORKLOAD)
WorkloadKind = Literal["Deployment", "StatefulSet"]

#: labels every planned Job carries (a list selects them with PLANNED_SELECTOR): the keys the
#: advice ConfigMap's labels use
LABEL_NAME = recommend.LABEL_NAME
LABEL_COMPONENT = recommend.LABEL_COMPONENT
LABEL_MANAGED_BY = recommend.LABEL_MANAGED_BY
COMPONENT = "calibration"
MANAGED_BY = "tf-thread-advisor-plan"
PLANNED_SELECTOR = f"{LABEL_NAME}={APP_NAME},{LABEL_COMPONENT}={COMPONENT}"
#: the hashes as labels, to select by (a label value holds 63 characters at most, so the readable
#: values go in annotations)
LABEL_SPEC_HASH = ANNOTATION_PREFIX + "spec-hash"
LABEL_POOL_HASH = ANNOTATION_PREFIX + "pool-hash"
#: the full values, as annotations on the Job
ANN_WORKLOAD = ANNOTATION_PREFIX + "workload"  # deployment/NAME
ANN_CONTAINER = ANNOTATION_PREFIX + "container"
ANN_CONFIGMAP = ANNOTATION_PREFIX + "configmap"
ANN_POOL = ANNOTATION_PREFIX + "pool"  # readable: "pool=a" or "any node"

#: where the init container copies the model and the advisor reads it
MODEL_MOUNT = "/tfta-model"

#: the containers of the Job and the volumes it defines itself
ADVISOR_CONTAINER = "advisor"
COPY_CONTAINER = "copy-model"
MODEL_VOLUME = "model"
TMP_VOLUME = "tmp"
TOKEN_VOLUME = "kube-api-access"
#: hex digits of the spec and pool hashes (a label value and the tail of a Job name)
HASH_LENGTH = 10
#: a Job name is a DNS-1123 label: its pods' names and the job-name label derive from it
NAME_LIMIT = 63


def job_name(workload: str, container: str, spec_hash: str) -> str:
    """``tfta-<workload>-<container>-<hash>``, a DNS-1123 label: the readable part is cut to
    fit, the hash keeps two long names apart."""
    readable = re.sub(r"[^a-z0-9-]", "-", f"tfta-{workload}-{container}".lower())
    readable = readable[: NAME_LIMIT - len(spec_hash) - 1].rstrip("-")
    return f"{readable}-{spec_hash}"


def hash_of(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_LENGTH]
