"""Calibration results and advice as the publish tests need them, built from the real models.

These are inputs, not expected outputs: each test derives what it asserts from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from advisor import __version__
from advisor.models import (
    CalibrationResult,
    Measurement,
    NodeProfile,
    Recommendation,
    ServingTarget,
    SubjectInfo,
    ThreadSetting,
    TrialResult,
)
from advisor.recommend import build_recommendation, render_configmap

FIXED_NOW = datetime(2026, 11, 21, 8, 0, 0, tzinfo=timezone.utc)


def node_profile(affinity: int = 4, quota: float | None = 2.0, logical: int = 8) -> NodeProfile:
    fields: dict[str, Any] = {
        "logical_cpus": logical,
        "affinity_cpus": list(range(affinity)),
        "quota_cpus": quota,
        "effective_cpus": min(float(affinity), quota) if quota else float(affinity),
        "topology": {
            "online_cpus": list(range(logical)),
            "sockets": 1,
            "physical_cores": max(1, logical // 2),
            "threads_per_core": 2,
            "cpu_model": "Test CPU @ 2.0GHz",
            "isa_flags": ["avx2"],
        },
        "downward_api": {"node_name": "node-a", "pod_namespace": "ml"},
    }
    # the probe engineer may add required fields; fill the ones known to exist
    if "affinity_source" in NodeProfile.model_fields:
        fields["affinity_source"] = "sched_getaffinity"
    return NodeProfile.model_validate(fields)


def trial(intra: int | None, inter: int | None, p99: float, **extra: Any) -> TrialResult:
    return TrialResult(
        setting=ThreadSetting(intra, inter),
        status="ok",
        reason=extra.pop("reason", None),
        p50_ms=p99 / 2,
        p99_ms=p99,
        throughput_rps=1000.0 / p99,
        threads=(intra or 8) + (inter or 8) + 3,
        **extra,
    )


def calibration_result(
    intra: int = 2,
    inter: int = 1,
    *,
    budget_s: float = 60.0,
    node: NodeProfile | None = None,
    trials: list[TrialResult] | None = None,
) -> CalibrationResult:
    trials = trials if trials is not None else [trial(None, None, 20.0), trial(intra, inter, 9.5)]
    return CalibrationResult(
        setting=ThreadSetting(intra, inter),
        objective="latency",
        baseline=Measurement(p50_ms=10.0, p99_ms=20.0, throughput_rps=50.0),
        chosen=Measurement(p50_ms=4.75, p99_ms=9.5, throughput_rps=105.26315),
        gain=20.0 / 9.5,
        trials=trials,
        subject=SubjectInfo(model_format="builtin"),
        budget_s=budget_s,
        elapsed_s=42.123,
        tf_version="2.21.0",
        node=node or node_profile(),
    )


def recommendation(intra: int = 2, inter: int = 1, **kw: Any) -> Recommendation:
    return build_recommendation(
        calibration_result(intra, inter, budget_s=kw.pop("budget_s", 60.0)),
        advisor_version="0.1.0",
        now=FIXED_NOW,
        **kw,
    )


def advice_configmap(
    name: str,
    namespace: str,
    *,
    measured: datetime,
    quota: float | None = 4.0,
    node_selector: dict[str, str] | None = None,
    target: ServingTarget | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ConfigMap of an advice (2/1) measured under ``quota`` CPUs on an 8-CPU node at
    ``measured`` (for ``target``), as this advisor writes it."""
    result = calibration_result(2, 1, node=node_profile(affinity=8, quota=quota))
    rec = build_recommendation(
        result,
        advisor_version=__version__,
        node_selector=node_selector,
        target=target,
        now=measured,
    )
    return render_configmap(rec, name, namespace, extra_annotations=annotations)
