"""What names the advice's ConfigMap and what its metadata carries: the app's name, its labels,
the annotation keys under the advisor's prefix (provenance, content hash, data-changed time, schema
version), the API server's size limit on them, and the one time format they are written in.
"""

from __future__ import annotations

from datetime import datetime, timezone

from advisor.kubenames import qualified_key_problem

APP_NAME = "tf-thread-advisor"
#: the ConfigMap name when none is given (also the name deploy/rbac.yaml allows)
DEFAULT_CONFIGMAP_NAME = "tf-thread-advice"
ANNOTATION_PREFIX = "tf-thread-advisor.io/"
PROVENANCE_ANNOTATION = ANNOTATION_PREFIX + "provenance"
HASH_ANNOTATION = ANNOTATION_PREFIX + "content-hash"
#: when ``data`` last changed (UTC, RFC 3339): kept across runs that advise the same values, so a
#: pod that started after it runs the current values (what ``status`` checks consumers against)
DATA_CHANGED_ANNOTATION = ANNOTATION_PREFIX + "data-changed-at"
SCHEMA_ANNOTATION = ANNOTATION_PREFIX + "schema-version"
LABEL_NAME = "app.kubernetes.io/name"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_VERSION = "app.kubernetes.io/version"
COMPONENT = "thread-advice"

#: the API server refuses an object whose annotations together exceed this many bytes
ANNOTATIONS_LIMIT_BYTES = 256 * 1024


def annotation_key_problem(key: str) -> str | None:
    """Why ``key`` cannot be an extra annotation of the advice ConfigMap, or None when it can.
    Our own prefix is refused: those annotations carry the provenance and the content hash."""
    if key.startswith(ANNOTATION_PREFIX):
        return f"annotation keys under {ANNOTATION_PREFIX} are the advisor's own"
    return qualified_key_problem(key, "annotation")


def timestamp(when: datetime) -> str:
    """``when`` in UTC, RFC 3339 to the second (``2026-11-21T08:00:00Z``)."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> datetime | None:
    """An RFC 3339 UTC time as written by ``timestamp`` (``Z`` or an offset); None otherwise."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None
