"""The Recommendation from a calibration: the advice's values and everything it was measured on,
validated (InvalidAdviceError, one line, if it does not hold)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone

from pydantic import ValidationError

from advisor.errors import InvalidAdviceError, first_error
from advisor.models import (
    MAX_PROVENANCE_TRIALS,
    ONEDNN,
    QUOTA_TOLERANCE,
    TENSORFLOW,
    CalibrationResult,
    Measurement,
    NearBestRange,
    NodeProfile,
    Provenance,
    Recommendation,
    ServingTarget,
    TopologySummary,
    TrialResult,
    TrialSummary,
)

#: measured latencies (ms) and throughputs (requests/s) are recorded to this many decimals: a
#: microsecond of latency is below any trial's noise, and the advice stays readable
MEASUREMENT_DECIMALS = 3


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, MEASUREMENT_DECIMALS)


def _measurement(m: Measurement) -> Measurement:
    return Measurement(
        p50_ms=_round(m.p50_ms), p99_ms=_round(m.p99_ms), throughput_rps=_round(m.throughput_rps)
    )


def _trial_summary(t: TrialResult) -> TrialSummary:
    return TrialSummary(
        setting=t.setting,
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


def cpus_exclusive(node: NodeProfile) -> bool | None:
    """Whether the run had CPUs of its own: the kubelet's static CPU manager gives a Guaranteed
    container with a whole-CPU limit exactly that many CPUs in its affinity mask, where a shared
    pod's mask is every CPU of the node. The limit is the CFS quota or, where there is none, the
    CPU limit the Downward API names: since Kubernetes 1.34 the kubelet sets no CFS quota on a
    container it gives exclusive CPUs (seen on the e2e tier's real node). None with neither."""
    quota = node.quota_cpus
    if quota is None and node.downward_api is not None:
        quota = node.downward_api.cpu_limit_cpus
    if quota is None:
        return None
    count = len(node.affinity_cpus)
    whole = abs(quota - round(quota)) <= QUOTA_TOLERANCE
    return whole and count == round(quota) and count < node.logical_cpus


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
            cpus_exclusive=cpus_exclusive(node),
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
            subject=result.subject,
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
            stopped=result.stopped,
            advisor_version=advisor_version,
            created_at=created,
        )
        return Recommendation(
            env={
                **TENSORFLOW.setting_env(result.setting),
                **({ONEDNN.name: onednn} if onednn is not None else {}),
            },
            provenance=provenance,
        )
    except ValidationError as exc:
        raise InvalidAdviceError(
            f"advice does not validate: {first_error(exc, count_more=True)}"
        ) from None
