"""The advice as data: the Recommendation from a calibration (``build``), its ConfigMap and
env-file renderings (``configmap``), the way back from a ConfigMap to a validated Recommendation
(``parse``), and the names its metadata carries (``metadata``). Its label and annotation keys
are ``advisor.keys``, Kubernetes' own name rules ``advisor.kubenames``.

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
    ANNOTATIONS_LIMIT_BYTES,
    DEFAULT_CONFIGMAP_NAME,
    annotation_key_problem,
)
from advisor.recommend.parse import ParsedAdvice, describe, load_configmap_yaml, parse_configmap

__all__ = [
    "ANNOTATIONS_LIMIT_BYTES",
    "DEFAULT_CONFIGMAP_NAME",
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
