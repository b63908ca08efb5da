"""The advice rendered: the ConfigMap manifest (``data`` the env values only, the rest in
annotations), its YAML, the env file, and the content hash a consumer rolls on. Parsing it back
is ``advisor.recommend.parse``: whatever is rendered here parses there with the same rules."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import yaml

from advisor.errors import InvalidAdviceError
from advisor.keys import (
    ADVICE_COMPONENT,
    APP_NAME,
    DATA_CHANGED_ANNOTATION,
    HASH_ANNOTATION,
    LABEL_COMPONENT,
    LABEL_MANAGED_BY,
    LABEL_NAME,
    LABEL_VERSION,
    PROVENANCE_ANNOTATION,
    SCHEMA_ANNOTATION,
)
from advisor.kubenames import as_label_value, dns1123_label_problem, dns1123_subdomain_problem
from advisor.models import Recommendation
from advisor.models.times import parse_timestamp, timestamp
from advisor.recommend.metadata import ANNOTATIONS_LIMIT_BYTES, annotation_key_problem


def content_hash(env: Mapping[str, str]) -> str:
    """``sha256:<hex>`` of the env values only: it changes exactly when consumers would see a
    change, so a Deployment can copy it into a pod-template annotation to roll on new advice."""
    canonical = json.dumps(dict(sorted(env.items())), separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def provenance_json(rec: Recommendation) -> str:
    """Compact JSON of the provenance (no nulls, no spaces): what the annotation holds."""
    return json.dumps(
        rec.provenance.model_dump(mode="json", exclude_none=True),
        separators=(",", ":"),
        ensure_ascii=False,
    )


def render_configmap(
    rec: Recommendation,
    name: str,
    namespace: str | None = None,
    *,
    extra_annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ConfigMap manifest: ``data`` is the env values only, the rest rides in annotations.

    ``data`` is a function of the thread values alone (no time, no measurement), so the same
    advice renders byte-identical data and a data-driven reloader (Stakater Reloader) restarts
    consumers only when the values change. ``extra_annotations`` are the user's (e.g.
    ``reloader.stakater.com/match: "true"``); keys under our prefix are refused."""
    name_problem = dns1123_subdomain_problem(name)
    if name_problem:
        raise InvalidAdviceError(f"ConfigMap name {name!r} {name_problem}")
    if namespace is not None:
        ns_problem = dns1123_label_problem(namespace)
        if ns_problem:
            raise InvalidAdviceError(f"namespace {namespace!r} {ns_problem}")
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = {
        LABEL_NAME: APP_NAME,
        LABEL_MANAGED_BY: APP_NAME,
        LABEL_COMPONENT: ADVICE_COMPONENT,
        LABEL_VERSION: as_label_value(rec.provenance.advisor_version) or "unknown",
    }
    for key in extra_annotations or {}:
        key_problem = annotation_key_problem(key)
        if key_problem:
            raise InvalidAdviceError(key_problem)
    annotations = {
        **dict(sorted((extra_annotations or {}).items())),
        SCHEMA_ANNOTATION: rec.schema_version,
        HASH_ANNOTATION: content_hash(rec.env),
        DATA_CHANGED_ANNOTATION: timestamp(rec.provenance.created_at),
        PROVENANCE_ANNOTATION: provenance_json(rec),
    }
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_LIMIT_BYTES:
        raise InvalidAdviceError(
            f"provenance annotations are {size} bytes, over the API server's "
            f"{ANNOTATIONS_LIMIT_BYTES}-byte limit"
        )
    metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {key: rec.env[key] for key in rec.env_names},
    }


def keep_data_changed_at(
    configmap: Mapping[str, Any], stored: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``configmap`` about to replace ``stored``, with the stored data-changed time when the data
    stays the same: a re-measurement that advises the same values leaves running pods current,
    and must not make every consumer look out of date."""
    new = copy.deepcopy(dict(configmap))
    if stored is None or stored.get("data") != new.get("data"):
        return new
    kept = ((stored.get("metadata") or {}).get("annotations") or {}).get(DATA_CHANGED_ANNOTATION)
    if isinstance(kept, str) and parse_timestamp(kept) is not None:
        new["metadata"]["annotations"][DATA_CHANGED_ANNOTATION] = kept
    return new


def configmap_yaml(configmap: Mapping[str, Any]) -> str:
    """One YAML document; long annotation lines are kept whole so the JSON stays greppable."""
    return yaml.safe_dump(dict(configmap), sort_keys=False, width=1 << 30, allow_unicode=True)


def env_file_text(rec: Recommendation) -> str:
    """``KEY=VALUE`` lines for ``docker run --env-file`` (values are digits: nothing to quote)."""
    return "".join(f"{key}={rec.env[key]}\n" for key in rec.env_names)
