"""What names the advice's ConfigMap and what its metadata carries: its default name, the rule
for extra annotations (its keys are ``advisor.keys``), the API server's size limit on them.
Their times are written in ``advisor.models.times``'s one format.
"""

from __future__ import annotations

from advisor.keys import PREFIX
from advisor.kubenames import qualified_key_problem

#: the ConfigMap name when none is given (also the name deploy/rbac.yaml allows)
DEFAULT_CONFIGMAP_NAME = "tf-thread-advice"

#: the API server refuses an object whose annotations together exceed this many bytes
ANNOTATIONS_LIMIT_BYTES = 256 * 1024


def annotation_key_problem(key: str) -> str | None:
    """Why ``key`` cannot be an extra annotation of the advice ConfigMap, or None when it can.
    Our own prefix is refused: those annotations carry the provenance and the content hash."""
    if key.startswith(PREFIX):
        return f"annotation keys under {PREFIX} are the advisor's own"
    return qualified_key_problem(key, "annotation")
