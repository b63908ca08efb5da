"""Calibration results built directly, for the render tests: each setting's statistics and
verdict are stated here, as the sweep would have recorded them, so a renderer is tested on its own
input and never through the pipeline."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.models import (
    CalibrationResult,
    IncumbentOutcome,
    Measurement,
    NearBest,
    SettingStats,
    SettingVerdict,
    SubjectInfo,
    ThreadSetting,
    TrialResult,
    TrialStatus,
)
from tests.support.search_fakes import node


@dataclass(frozen=True)
class Row:
    """One setting as the result records it; ``p99`` None: failed with ``status``."""

    setting: ThreadSetting
    verdict: SettingVerdict
    p99: float | None = None
    raced: bool = True
    within_noise: bool = False
    best: bool = False
    unstable: bool = False
    status: TrialStatus = "ok"
    windows: int = 3

    def stats(self) -> SettingStats:
        if self.p99 is None:
            return SettingStats(
                intra=self.setting.intra,
                inter=self.setting.inter,
                verdict="failed",
                status=self.status,
                reason=f"fake {self.status}",
            )
        return SettingStats(
            intra=self.setting.intra,
            inter=self.setting.inter,
            verdict=self.verdict,
            best=self.best,
            within_noise=self.within_noise,
            unstable=self.unstable,
            raced=self.raced,
            windows=self.windows,
            trials=self.windows,
            p50_ms=self.p99 / 2,
            p99_ms=self.p99,
            throughput_rps=1000.0 / self.p99,
            cv=0.02,
            nr_throttled=self.windows,
        )

    def trials(self) -> list[TrialResult]:
        intra, inter = self.setting.intra, self.setting.inter
        if self.p99 is None:
            return [
                TrialResult(
                    intra_op_threads=intra,
                    inter_op_threads=inter,
                    status=self.status,
                    reason=f"fake {self.status}",
                )
            ]
        return [
            TrialResult(
                intra_op_threads=intra,
                inter_op_threads=inter,
                round=(window + 1) if self.raced else 0,
                status="ok",
                p50_ms=self.p99 / 2,
                p99_ms=self.p99,
                throughput_rps=1000.0 / self.p99,
            )
            for window in range(self.windows)
        ]


def figures(row: Row) -> Measurement:
    assert row.p99 is not None
    return Measurement(p50_ms=row.p99 / 2, p99_ms=row.p99, throughput_rps=1000.0 / row.p99)


def result(
    rows: list[Row],
    *,
    cpus: int = 8,
    objective: str = "latency",
    p99_slo_ms: float | None = None,
    noise_band: float = 0.06,
    gain_band: float | None = 0.08,
) -> CalibrationResult:
    """The result these rows make: the advice is the row judged ``chosen`` (TF's default spelled
    out when it is that row), the baseline TF's default, the range the rows within noise."""
    chosen = next(r for r in rows if r.verdict == "chosen")
    baseline = next(r for r in rows if r.setting.is_default)
    kept = chosen.setting.is_default
    advice = chosen.setting.spelled_out(cpus)
    assert advice.intra is not None and advice.inter is not None
    near = [r for r in rows if r.within_noise]
    near.sort(key=lambda r: r.p99 or 0.0)
    ours, theirs = figures(chosen).p99_ms, figures(baseline).p99_ms
    assert ours is not None and theirs is not None
    within = kept or (abs(ours - theirs) <= (gain_band or 0.0) * theirs)
    return CalibrationResult(
        intra_op_threads=advice.intra,
        inter_op_threads=advice.inter,
        objective=objective,
        p99_slo_ms=p99_slo_ms,
        baseline=figures(baseline),
        chosen=figures(chosen),
        gain=1.0 if within else theirs / ours,
        gain_within_noise=within,
        noise_band=noise_band,
        gain_band=None if kept else gain_band,
        incumbent=IncumbentOutcome(
            intra=cpus,
            inter=cpus,
            default=True,
            source="none stored: TF's default",
            kept=kept,
            reason="measured best: kept" if kept else "replaced by the advice",
        ),
        near_best=[
            NearBest(
                intra=r.setting.spelled_out(cpus).intra or 1,
                inter=r.setting.spelled_out(cpus).inter or 1,
                default=r.setting.is_default,
                p99_ms=r.p99,
                windows=r.windows,
            )
            for r in near
        ],
        rounds=2,
        kept_default=kept,
        trials=[t for r in rows for t in r.trials()],
        settings=[r.stats() for r in rows],
        subject=SubjectInfo(model_format="builtin"),
        budget_s=60.0,
        elapsed_s=58.0,
        node=node(cpus, quota=cpus / 2),
    )


S = ThreadSetting
DEFAULT = ThreadSetting.TF_DEFAULT

#: 8 CPUs under a 4-CPU quota: 4/1 advised, 2/1 within noise of it, 8/1 dropped, 1/1 and 8/2
#: only screened, 2/2 crashed, TF's default (8/8) far behind
GRID = [
    Row(S(4, 1), "chosen", 5.0, within_noise=True, best=True),
    Row(DEFAULT, "baseline", 12.0),
    Row(S(2, 1), "within noise", 5.2, within_noise=True),
    Row(S(4, 2), "raced", 6.5),
    Row(S(8, 1), "dropped", 9.0),
    Row(S(1, 1), "screened", 10.0, raced=False, windows=1),
    Row(S(8, 2), "screened", 11.0, raced=False, windows=1),
    Row(S(2, 2), "failed", status="crashed"),
]


def _held(result_: CalibrationResult, setting: ThreadSetting, *, kept: bool) -> CalibrationResult:
    """``result_`` with ``setting`` as the advice in force before the run, read from a long
    ConfigMap name."""
    assert setting.intra is not None and setting.inter is not None
    held = IncumbentOutcome(
        intra=setting.intra,
        inter=setting.inter,
        default=False,
        source="configmaps/tf-thread-advice-for-the-recommendation-service in namespace "
        "ml-serving-production",
        kept=kept,
        reason="kept: nothing beat it beyond noise" if kept else "replaced by the advice",
    )
    return result_.model_copy(update={"incumbent": held})


def long_labels_default_chosen() -> CalibrationResult:
    """Labels as long as they get with TF's default chosen: 16 CPUs, objective slo with a bound
    most settings miss, requests/s in the ten thousands, every verdict (within noise, raced,
    dropped, screened, failed three ways) and the advice in force before marked in its cell."""
    rows = [
        Row(DEFAULT, "chosen", 0.081, within_noise=True, best=True),
        Row(S(8, 2), "within noise", 0.084, within_noise=True),
        Row(S(16, 1), "within noise", 0.0815, within_noise=True),
        Row(S(8, 1), "raced", 0.1),
        Row(S(16, 2), "dropped", 0.2),
        Row(S(4, 1), "screened", 0.5, raced=False, windows=1),
        Row(S(2, 1), "screened", 0.9, raced=False, windows=1),
        Row(S(1, 1), "screened", 9.5, raced=False, windows=1),
        Row(S(4, 2), "failed", status="timeout"),
        Row(S(2, 2), "failed", status="skipped"),
        Row(S(1, 2), "failed", status="crashed"),
    ]
    built = result(rows, cpus=16, objective="slo", p99_slo_ms=0.082, noise_band=0.25)
    return _held(built, S(8, 2), kept=False)


def long_labels_held_and_chosen() -> CalibrationResult:
    """The advice in force before kept as the advice (both marks in one cell), p99s in the
    thousands of milliseconds, a wide range within noise and a long comparison with TF's
    default."""
    rows = [
        Row(S(3, 2), "chosen", 1234.5, within_noise=True, best=True),
        Row(DEFAULT, "baseline", 9876.5),
        Row(S(1, 1), "within noise", 1239.9, within_noise=True),
        Row(S(6, 1), "within noise", 1250.1, within_noise=True),
        Row(S(6, 3), "within noise", 1260.2, within_noise=True),
        Row(S(2, 3), "raced", 2345.6),
        Row(S(1, 3), "dropped", 8765.4),
        Row(S(2, 1), "screened", 7654.3, raced=False, windows=1),
        Row(S(3, 1), "failed", status="oom"),
    ]
    return _held(result(rows, cpus=6, gain_band=0.25), S(3, 2), kept=True)
