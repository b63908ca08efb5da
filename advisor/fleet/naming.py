"""What names a calibration Job: the names of its containers and of the volumes it defines
itself, its name and the spec and pool hashes (its labels and annotations are ``advisor.keys``).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

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
