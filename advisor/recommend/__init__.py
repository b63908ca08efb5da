"""The advice as data: Recommendation from a calibration, ConfigMap and env-file renderings, and
the way back from a ConfigMap to a validated Recommendation.

Everything here is pure (no cluster, no files): the CLI and the cluster writer decide where the
text goes. Rendering and parsing are inverse, so whatever ``run`` writes, ``validate`` and ``check``
read back with the same rules, and a ConfigMap that does not parse is never written.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import yaml
from pydantic import ValidationError

from advisor.errors import InvalidAdviceError, first_error
from advisor.models import (
    CPU_DECIMALS,
    ENV_INTER_OP,
    ENV_INTRA_OP,
    ENV_OMP,
    ENV_ONEDNN,
    MAX_PROVENANCE_TRIALS,
    CalibrationResult,
    Measurement,
    NearBestRange,
    Provenance,
    Recommendation,
    ServingTarget,
    TopologySummary,
    TrialResult,
    TrialSummary,
)

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

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


# --------------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------------


def dns1123_label_problem(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 label (namespaces), or None when it is one."""
    if not value:
        return "must not be empty"
    if len(value) > 63:
        return f"is {len(value)} characters long, at most 63 are allowed"
    if not _DNS1123_LABEL.match(value):
        return "must be lowercase letters, digits and '-', starting and ending alphanumeric"
    return None


def dns1123_subdomain_problem(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 subdomain (ConfigMap names), or None when it is one."""
    if not value:
        return "must not be empty"
    if len(value) > 253:
        return f"is {len(value)} characters long, at most 253 are allowed"
    for part in value.split("."):
        if not _DNS1123_LABEL.match(part):
            return (
                "must be lowercase letters, digits, '-' and '.', "
                "each dot-separated part starting and ending alphanumeric"
            )
    return None


def _key_problem(key: str, what: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if prefix and dns1123_subdomain_problem(prefix):
        return f"{what} key prefix {prefix!r} is not a DNS subdomain"
    if len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return f"{what} key {key!r} is not a valid qualified name"
    return None


def annotation_key_problem(key: str) -> str | None:
    """Why ``key`` cannot be an extra annotation of the advice ConfigMap, or None when it can.
    Our own prefix is refused: those annotations carry the provenance and the content hash."""
    if key.startswith(ANNOTATION_PREFIX):
        return f"annotation keys under {ANNOTATION_PREFIX} are the advisor's own"
    return _key_problem(key, "annotation")


def node_label_problem(key: str, value: str) -> str | None:
    """Why ``key=value`` cannot be a Kubernetes label, or None when it can."""
    return _key_problem(key, "label") or label_value_problem(value)


def label_value_problem(value: str) -> str | None:
    """Why ``value`` cannot be a Kubernetes label value, or None when it can."""
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return f"label value {value!r} is not a valid label value"
    return None


def _label_value(text: str) -> str:
    """``text`` squeezed into a label value (a version like ``0.1.0+dev`` has a '+')."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", text)[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", cleaned)


# --------------------------------------------------------------------------------------------------
# Building the Recommendation
# --------------------------------------------------------------------------------------------------


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, CPU_DECIMALS)


def _measurement(m: Measurement) -> Measurement:
    return Measurement(
        p50_ms=_round(m.p50_ms), p99_ms=_round(m.p99_ms), throughput_rps=_round(m.throughput_rps)
    )


def _trial_summary(t: TrialResult) -> TrialSummary:
    return TrialSummary(
        intra=t.intra_op_threads,
        inter=t.inter_op_threads,
        round=t.round,
        status=t.status,
        p50_ms=_round(t.p50_ms),
        p99_ms=_round(t.p99_ms),
        throughput_rps=_round(t.throughput_rps),
        threads=t.threads,
        nr_throttled=t.nr_throttled,
    )


def _kept_trials(trials: list[TrialResult]) -> list[TrialResult]:
    """At most MAX_PROVENANCE_TRIALS: the baseline and the last rounds matter most."""
    if len(trials) <= MAX_PROVENANCE_TRIALS:
        return trials
    baselines = [t for t in trials if t.is_baseline][:1]
    rest = [t for t in trials if t not in baselines]
    return baselines + rest[-(MAX_PROVENANCE_TRIALS - len(baselines)) :]


def build_recommendation(
    result: CalibrationResult,
    *,
    advisor_version: str,
    node_name: str | None = None,
    node_labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    target: ServingTarget | None = None,
    now: datetime | None = None,
) -> Recommendation:
    """The advice for ``result``, validated; InvalidAdviceError (one line) if it does not hold.

    ``node_name`` defaults to the Downward API value the probe saw. OMP_NUM_THREADS follows the
    intra-op count (oneDNN's OpenMP team does the intra-op work in CPU builds). An incumbent the
    run confirmed keeps its values and its TF_ENABLE_ONEDNN_OPTS unless the sweep found a winner:
    ``data`` renders byte-identical, so nothing downstream rolls. The
    ``node_selector`` pairs are labels of the node too, so they are node labels as well.
    ``target`` is the serving container the run measured for (fleet mode), recorded as given.
    """
    node = result.node
    downward = node.downward_api
    topo = node.topology
    created = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0)
    held = result.incumbent
    confirmed = held is not None and held.kept
    onednn = result.onednn.value if result.onednn is not None else None
    if onednn is None and confirmed and held is not None:
        onednn = held.onednn  # no evidence either way: the stored value stands
    try:
        provenance = Provenance(
            node_name=node_name or (downward.node_name if downward else None),
            node_labels={**(node_selector or {}), **(node_labels or {})},
            node_selector=dict(node_selector) if node_selector else None,
            cpu_model=topo.cpu_model,
            logical_cpus=node.logical_cpus,
            affinity_cpus=list(node.affinity_cpus),
            quota_cpus=node.quota_cpus,
            effective_cpus=node.effective_cpus,
            topology=TopologySummary(
                sockets=topo.sockets,
                physical_cores=topo.physical_cores,
                threads_per_core=topo.threads_per_core,
                smt_active=topo.smt_active,
                numa_nodes=topo.numa_nodes,
                isa_flags=list(topo.isa_flags),
            ),
            tf_version=result.tf_version,
            objective=result.objective,
            p99_slo_ms=result.p99_slo_ms,
            workload=result.workload,
            baseline=_measurement(result.baseline),
            chosen=_measurement(result.chosen),
            gain=_round(result.gain),
            onednn=result.onednn,
            gain_within_noise=result.gain_within_noise,
            near_best=NearBestRange.of(result.near_best, _round(result.noise_band)),
            gain_band=_round(result.gain_band),
            incumbent=held,
            target=target,
            trials_total=len(result.trials),
            trials=[_trial_summary(t) for t in _kept_trials(result.trials)],
            budget_s=result.budget_s,
            elapsed_s=round(result.elapsed_s, 1),
            advisor_version=advisor_version,
            created_at=created,
        )
        return Recommendation(
            env={
                ENV_INTRA_OP: str(result.intra_op_threads),
                ENV_INTER_OP: str(result.inter_op_threads),
                ENV_OMP: str(result.intra_op_threads),
                **({ENV_ONEDNN: onednn} if onednn is not None else {}),
            },
            provenance=provenance,
        )
    except ValidationError as exc:
        raise InvalidAdviceError(
            f"advice does not validate: {first_error(exc, count_more=True)}"
        ) from None


# --------------------------------------------------------------------------------------------------
# Renderings
# --------------------------------------------------------------------------------------------------


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
        LABEL_COMPONENT: COMPONENT,
        LABEL_VERSION: _label_value(rec.provenance.advisor_version) or "unknown",
    }
    for key in extra_annotations or {}:
        key_problem = annotation_key_problem(key)
        if key_problem:
            raise InvalidAdviceError(key_problem)
    annotations = {
        **dict(sorted((extra_annotations or {}).items())),
        SCHEMA_ANNOTATION: rec.schema_version,
        HASH_ANNOTATION: content_hash(rec.env),
        DATA_CHANGED_ANNOTATION: _timestamp(rec.provenance.created_at),
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


def _timestamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    if isinstance(kept, str) and _parse_timestamp(kept) is not None:
        new["metadata"]["annotations"][DATA_CHANGED_ANNOTATION] = kept
    return new


def _parse_timestamp(text: str) -> datetime | None:
    """An RFC 3339 UTC time as written by ``_timestamp`` (``Z`` or an offset); None otherwise."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def configmap_yaml(configmap: Mapping[str, Any]) -> str:
    """One YAML document; long annotation lines are kept whole so the JSON stays greppable."""
    return yaml.safe_dump(dict(configmap), sort_keys=False, width=1 << 30, allow_unicode=True)


def env_file_text(rec: Recommendation) -> str:
    """``KEY=VALUE`` lines for ``docker run --env-file`` (values are digits: nothing to quote)."""
    return "".join(f"{key}={rec.env[key]}\n" for key in rec.env_names)


# --------------------------------------------------------------------------------------------------
# Parsing a ConfigMap back
# --------------------------------------------------------------------------------------------------


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
    when = _parse_timestamp(raw) if isinstance(raw, str) else None
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
