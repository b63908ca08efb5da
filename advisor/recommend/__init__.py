"""The advice as data: the Recommendation from a calibration (``build``), its ConfigMap and
env-file renderings (``configmap``), the way back from a ConfigMap to a validated Recommendation
(``parse``), and the names and keys its metadata carries (``metadata``). Kubernetes' own name
rules are ``advisor.kubenames``.

Everything here is pure (no cluster, no files): the CLI and the cluster writer decide where the
text goes. Rendering and parsing are inverse, so whatever ``run`` writes, ``validate`` and ``check``
read back with the same rules, and a ConfigMap that does not parse is never written.
"""

from advisor.recommend.build import build_recommendation
from advisor.recommend.configmap import (
    configmap_yaml,
    content_hash,
    env_file_text,
    keep_data_changed_at,
    provenance_json,
    render_configmap,
)
from advisor.recommend.metadata import (
    ANNOTATION_PREFIX,
    ANNOTATIONS_LIMIT_BYTES,
    APP_NAME,
    COMPONENT,
    DATA_CHANGED_ANNOTATION,
    DEFAULT_CONFIGMAP_NAME,
    HASH_ANNOTATION,
    LABEL_COMPONENT,
    LABEL_MANAGED_BY,
    LABEL_NAME,
    LABEL_VERSION,
    PROVENANCE_ANNOTATION,
    SCHEMA_ANNOTATION,
    annotation_key_problem,
)
from advisor.recommend.parse import ParsedAdvice, describe, load_configmap_yaml, parse_configmap

__all__ = [
    "ANNOTATIONS_LIMIT_BYTES",
    "ANNOTATION_PREFIX",
    "APP_NAME",
    "COMPONENT",
    "DATA_CHANGED_ANNOTATION",
    "DEFAULT_CONFIGMAP_NAME",
    "HASH_ANNOTATION",
    "LABEL_COMPONENT",
    "LABEL_MANAGED_BY",
    "LABEL_NAME",
    "LABEL_VERSION",
    "PROVENANCE_ANNOTATION",
    "SCHEMA_ANNOTATION",
    "ParsedAdvice",
    "annotation_key_problem",
    "build_recommendation",
    "configmap_yaml",
    "content_hash",
    "describe",
    "env_file_text",
    "keep_data_changed_at",
    "load_configmap_yaml",
    "parse_configmap",
    "provenance_json",
    "render_configmap",
]
