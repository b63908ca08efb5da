"""The way back: a ConfigMap to a validated Recommendation, checking everything ``run``
guarantees (kind, names, data exactly the advice env, the provenance, the content hash), and the
one line a person reads about it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml
from pydantic import ValidationError

from advisor.errors import InvalidAdviceError, first_error
from advisor.keys import (
    DATA_CHANGED_ANNOTATION,
    HASH_ANNOTATION,
    LABEL_MANAGED_BY,
    PROVENANCE_ANNOTATION,
    SCHEMA_ANNOTATION,
)
from advisor.kubenames import dns1123_label_problem, dns1123_subdomain_problem
from advisor.models import Recommendation
from advisor.models.times import parse_timestamp
from advisor.recommend.configmap import content_hash


@dataclass(frozen=True)
class ParsedAdvice:
    """A ConfigMap that validated: where it lives and what it says."""

    name: str
    namespace: str | None
    recommendation: Recommendation
    resource_version: str | None = None
    managed_by: str | None = None
    #: when ``data`` last changed (the data-changed-at annotation; None for older advice)
    data_changed_at: datetime | None = None


def load_configmap_yaml(text: str, source: str) -> Any:
    """The single YAML document in ``text``; InvalidAdviceError naming ``source`` otherwise."""
    try:
        docs = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise InvalidAdviceError(f"{source}: not valid YAML{line}") from None
    except RecursionError:  # the YAML parser recurses per nesting level
        raise InvalidAdviceError(f"{source}: nested too deeply to be a ConfigMap") from None
    if len(docs) != 1:
        raise InvalidAdviceError(f"{source}: expected one YAML document, found {len(docs)}")
    return docs[0]


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidAdviceError(f"{what} must be a mapping, not {type(value).__name__}")
    return value


def parse_configmap(obj: Any, source: str = "ConfigMap") -> ParsedAdvice:
    """The Recommendation a ConfigMap carries, after checking everything ``run`` guarantees:
    kind, names, data = exactly the advice env, provenance annotation, and the content hash."""
    if not isinstance(obj, dict):
        raise InvalidAdviceError(
            f"{source}: expected a ConfigMap mapping, not {type(obj).__name__}"
        )
    if obj.get("apiVersion") != "v1" or obj.get("kind") != "ConfigMap":
        raise InvalidAdviceError(
            f"{source}: expected apiVersion v1, kind ConfigMap; "
            f"got {obj.get('apiVersion')!r}, {obj.get('kind')!r}"
        )
    metadata = _mapping(obj.get("metadata"), f"{source}: metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or dns1123_subdomain_problem(name):
        problem = dns1123_subdomain_problem(name) if isinstance(name, str) else "is missing"
        raise InvalidAdviceError(f"{source}: metadata.name {name!r} {problem}")
    namespace = metadata.get("namespace")
    if namespace is not None:
        ns_problem = (
            dns1123_label_problem(namespace) if isinstance(namespace, str) else "is not a string"
        )
        if ns_problem:
            raise InvalidAdviceError(f"{source}: metadata.namespace {namespace!r} {ns_problem}")
    where = f"{source} ({namespace + '/' if namespace else ''}{name})"
    if obj.get("binaryData"):
        raise InvalidAdviceError(f"{where}: binaryData must be empty (envFrom reads data only)")
    data = _mapping(obj.get("data"), f"{where}: data")
    for key, value in data.items():
        if not isinstance(value, str):
            raise InvalidAdviceError(
                f"{where}: data.{key} must be a string, not {type(value).__name__}"
            )
    annotations = _mapping(metadata.get("annotations"), f"{where}: metadata.annotations")
    raw = annotations.get(PROVENANCE_ANNOTATION)
    if not isinstance(raw, str):
        raise InvalidAdviceError(f"{where}: annotation {PROVENANCE_ANNOTATION} is missing")
    schema = annotations.get(SCHEMA_ANNOTATION, "v1")
    try:
        provenance = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:  # json recurses per nesting level
        problem = (
            f"is not JSON ({exc.msg} at {exc.pos})"
            if isinstance(exc, json.JSONDecodeError)
            else "is nested too deeply to be a provenance"
        )
        raise InvalidAdviceError(f"{where}: annotation {PROVENANCE_ANNOTATION} {problem}") from None
    try:
        rec = Recommendation.model_validate(
            {"schema_version": schema, "env": data, "provenance": provenance}
        )
    except ValidationError as exc:
        raise InvalidAdviceError(f"{where}: {first_error(exc, count_more=True)}") from None
    stored_hash = annotations.get(HASH_ANNOTATION)
    if stored_hash != content_hash(rec.env):
        raise InvalidAdviceError(
            f"{where}: annotation {HASH_ANNOTATION} is {stored_hash!r}, "
            f"but the data hashes to {content_hash(rec.env)} (edited by hand?)"
        )
    labels = _mapping(metadata.get("labels"), f"{where}: metadata.labels")
    rv = metadata.get("resourceVersion")
    managed_by = labels.get(LABEL_MANAGED_BY)
    return ParsedAdvice(
        name=name,
        namespace=namespace,
        recommendation=rec,
        resource_version=rv if isinstance(rv, str) else None,
        managed_by=managed_by if isinstance(managed_by, str) else None,
        data_changed_at=_data_changed_at(annotations, where),
    )


def _data_changed_at(annotations: Mapping[str, Any], where: str) -> datetime | None:
    raw = annotations.get(DATA_CHANGED_ANNOTATION)
    if raw is None:
        return None
    when = parse_timestamp(raw) if isinstance(raw, str) else None
    if when is None:
        raise InvalidAdviceError(
            f"{where}: annotation {DATA_CHANGED_ANNOTATION} is {raw!r}, not a UTC time like "
            "2026-11-21T08:00:00Z"
        )
    return when


def describe(parsed: ParsedAdvice) -> str:
    """One line for people: which ConfigMap, what it advises, what it was measured on."""
    rec = parsed.recommendation
    prov = rec.provenance
    where = f"{parsed.namespace + '/' if parsed.namespace else ''}{parsed.name}"
    quota = "none" if prov.quota_cpus is None else f"{prov.quota_cpus:g}"
    return (
        f"{where}: intra={rec.intra_op_threads} inter={rec.inter_op_threads} "
        f"(objective {prov.objective}, {len(prov.affinity_cpus)} affinity CPUs, quota {quota}, "
        f"budget {prov.budget_s:g}s, TF {prov.tf_version or 'unknown'})"
    )
