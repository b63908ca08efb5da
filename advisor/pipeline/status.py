"""Every advice in a namespace (or the cluster) at a glance, and which ones are stale: ``status``.

Like a VPA's recommendation or krr's table, but for thread settings: what each ConfigMap advises,
what it was measured on, how sure the measurement was, and whether it still applies. An advice is
stale when the advisor or TensorFlow changed since it was measured (a new TF may size its pools
differently) or when it is older than ``max_age`` (nodes, kernels and models move on). A
ConfigMap that carries the labels but does not validate is listed too, as stale, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.errors import InvalidAdviceError, UsageError
from advisor.pipeline.drift import installed_tf_version
from advisor.pipeline.source import check_cluster_timeout, check_names, namespace_or_env
from advisor.recommend import parse_configmap

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> timedelta:
    """``90s``, ``45m``, ``12h``, ``30d``, ``2w`` or combinations (``1d12h``); ValueError else."""
    compact = text.strip().lower()
    parts = _DURATION.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ValueError("must be a duration like 90m, 12h, 30d or 1d12h")
    seconds = sum(float(n) * _UNIT_S[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError("must be longer than zero")
    return timedelta(seconds=seconds)


def format_age(age: timedelta) -> str:
    """kubectl's style: the largest unit or two (``3d4h``, ``25m``, ``40s``)."""
    seconds = max(0, int(age.total_seconds()))
    for unit, size, smaller, small_size in (
        ("d", 86400, "h", 3600),
        ("h", 3600, "m", 60),
        ("m", 60, "s", 1),
    ):
        if seconds >= size:
            whole, rest = divmod(seconds, size)
            tail = rest // small_size if whole < 10 else 0
            return f"{whole}{unit}" + (f"{tail}{smaller}" if tail else "")
    return f"{seconds}s"


@dataclass(frozen=True)
class AdviceStatus:
    """One advice ConfigMap as ``status`` shows it (None where the advice does not say)."""

    name: str
    namespace: str | None
    intra_op_threads: int | None = None
    inter_op_threads: int | None = None
    stale: bool = False
    stale_reasons: list[str] = field(default_factory=list)
    node: str | None = None
    node_labels: dict[str, str] = field(default_factory=dict)
    cpu_model: str | None = None
    effective_cpus: float | None = None
    quota_cpus: float | None = None
    #: the settings measured within noise of the best (newer advice only), as stored
    within_noise: dict[str, Any] | None = None
    range: str | None = None
    objective: str | None = None
    gain: float | None = None
    gain_within_noise: bool | None = None
    trials: int | None = None
    budget_s: float | None = None
    tf_version: str | None = None
    advisor_version: str | None = None
    created_at: str | None = None
    age: str | None = None
    age_s: int | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def advice_status(
    obj: dict[str, Any],
    *,
    now: datetime,
    max_age: timedelta | None = None,
    advisor_version: str = __version__,
    tf_version: str | None = None,
) -> AdviceStatus:
    """The status of one ConfigMap that carries the advice labels."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    name = str(metadata.get("name", "?"))
    namespace = metadata.get("namespace")
    try:
        parsed = parse_configmap(obj, "ConfigMap")
    except InvalidAdviceError as exc:
        reason = f"invalid: {exc}"
        return AdviceStatus(name, namespace, stale=True, stale_reasons=[reason], error=str(exc))
    rec = parsed.recommendation
    prov = rec.provenance
    reasons = []
    if prov.advisor_version != advisor_version:
        reasons.append(f"advisor changed ({prov.advisor_version} -> {advisor_version})")
    if prov.tf_version and tf_version and prov.tf_version != tf_version:
        reasons.append(f"TensorFlow changed ({prov.tf_version} -> {tf_version})")
    age = now - prov.created_at
    if max_age is not None and age > max_age:
        reasons.append(f"older than {format_age(max_age)}")
    within = prov.near_best
    return AdviceStatus(
        name=name,
        namespace=namespace,
        intra_op_threads=rec.intra_op_threads,
        inter_op_threads=rec.inter_op_threads,
        stale=bool(reasons),
        stale_reasons=reasons,
        node=prov.node_name,
        node_labels=dict(prov.node_labels),
        cpu_model=prov.cpu_model,
        effective_cpus=prov.effective_cpus,
        quota_cpus=prov.quota_cpus,
        within_noise=None if within is None else within.model_dump(mode="json"),
        range=None if within is None else within.describe(),
        objective=prov.objective,
        gain=prov.gain,
        gain_within_noise=prov.gain_within_noise,
        trials=prov.trials_total,
        budget_s=prov.budget_s,
        tf_version=prov.tf_version,
        advisor_version=prov.advisor_version,
        created_at=prov.created_at.isoformat().replace("+00:00", "Z"),
        age=format_age(age),
        age_s=int(age.total_seconds()),
    )


def statuses(
    objects: Iterable[dict[str, Any]],
    *,
    now: datetime | None = None,
    max_age: timedelta | None = None,
) -> list[AdviceStatus]:
    """The status of each ConfigMap, sorted by namespace and name; versions compared with this
    advisor and the TensorFlow installed beside it (the image's, when run from the image)."""
    now = now or datetime.now(timezone.utc)
    tf_version = installed_tf_version()
    rows = [advice_status(o, now=now, max_age=max_age, tf_version=tf_version) for o in objects]
    return sorted(rows, key=lambda r: (r.namespace or "", r.name))


def cluster_status(
    namespace: str | None = None,
    *,
    all_namespaces: bool = False,
    kubeconfig: Path | None = None,
    max_age: timedelta | None = None,
    cluster_timeout_s: float = 60.0,
) -> list[AdviceStatus]:
    """Every advice ConfigMap in ``namespace`` (default: $TFTA_POD_NAMESPACE, then the
    kubeconfig context's, then ``default``) or, with ``all_namespaces``, in the cluster."""
    from advisor.cluster import RetryPolicy, connect
    from advisor.cluster.listing import default_namespace, list_advice

    if all_namespaces and namespace:
        raise UsageError("--namespace and --all-namespaces exclude each other")
    check_cluster_timeout(cluster_timeout_s)
    connection = connect(kubeconfig)
    where: str | None = None
    if not all_namespaces:
        where = namespace_or_env(namespace) or default_namespace(kubeconfig) or "default"
        check_names(namespace=where)
    objects = list_advice(connection, where, RetryPolicy(total_s=cluster_timeout_s))
    return statuses(objects, max_age=max_age)
