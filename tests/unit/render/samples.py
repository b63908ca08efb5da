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
    ThreadSetting,
    TrialResult,
    TrialStatus,
    WorkloadInfo,
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
        workload=WorkloadInfo(kind="builtin"),
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
