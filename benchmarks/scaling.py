"""Simulated scaling: the advisor's real search on nodes of 2..256 CPUs, against a cost model.

Why simulate: this machine has 2 cores, but the product's users run 64-core nodes. The question
here is not "is the advice right" (only real measurements say that) but "how does the sweep's
cost grow with the node": how many settings, how many of them the default budget measures, how
many trials and race rounds, and whether it still lands near the cost model's own optimum. Time is
a fake clock advanced by what a trial child would take (start-up + warm-up + a window that lasts
until its requests completed, as the real child's does), so the numbers come out in seconds of a
real run.

Two ways to start a trial are simulated: ``spawn``, a fresh process that imports TensorFlow every
time (~3.5 s), and ``fork``, a fork from a server that imported it once (~0.3 s per trial, plus
~3 s once, paid by the first trial).

    python -m benchmarks scaling          # both tables, as docs/benchmark.md shows them

The cost model is the benchmark's own (deliberately not the search tests' one): a request has a
serial part and a parallel part; intra-op threads split the parallel part over the CPUs that
exist; threads beyond the quota make the CFS throttle (a tail of up to one 100 ms period at the
p99); inter-op threads help only as far as the model has independent branches.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.calibrate.candidates import candidate_configs
from advisor.calibrate.spec import TrialSpec
from advisor.models import (
    CalibrationOptions,
    CgroupInfo,
    NodeProfile,
    Topology,
    TrialResult,
)
from advisor.pipeline.sweep import sweep
from benchmarks.results import ScalingRow

PERIOD_MS = 100.0


@dataclass(frozen=True)
class Launcher:
    """How a trial child is started: what each one pays, and what the first pays once more."""

    name: str
    overhead_s: float
    first_s: float = 0.0


#: a fresh process per trial: process start + import tensorflow + model load
SPAWN = Launcher("spawn", overhead_s=3.5)
#: a fork from a server that imported TensorFlow once (its import paid by the first trial)
FORK = Launcher("fork", overhead_s=0.3, first_s=3.0)
LAUNCHERS = (SPAWN, FORK)


@dataclass(frozen=True)
class CostModel:
    """p99 (ms) and throughput of a CPU inference request under a thread setting."""

    cpus: int
    quota: float | None
    serial_ms: float = 2.0
    parallel_ms: float = 40.0
    branches: int = 3
    sync_ms: float = 0.05

    @property
    def usable(self) -> float:
        return float(self.cpus) if self.quota is None else min(float(self.cpus), self.quota)

    def p99_ms(self, intra: int, inter: int) -> float:
        usable = self.usable
        branch_speedup = 1 + 0.2 * (min(inter, self.branches, math.ceil(usable)) - 1)
        spread = math.pow(min(intra, usable), 0.9)
        compute = self.serial_ms + self.parallel_ms / spread / branch_speedup
        runnable = intra + inter - 1
        contention = 0.1 * compute * max(0.0, runnable - usable) / usable
        throttle = 0.0
        if self.quota is not None and runnable > self.quota:
            # a burst of ``runnable`` threads uses the period's quota early, then waits it out
            throttle = PERIOD_MS * (1 - self.quota / runnable) * min(1.0, compute / PERIOD_MS * 4)
        return compute + contention + throttle + self.sync_ms * intra

    def default_setting(self) -> tuple[int, int]:
        """TF sizes both pools from the affinity mask."""
        return self.cpus, self.cpus

    def best(self) -> tuple[tuple[int, int], float]:
        grid = [(i, j) for i in range(1, 2 * self.cpus + 1) for j in range(1, 5)]
        return min(((s, self.p99_ms(*s)) for s in grid), key=lambda sv: (sv[1], sv[0]))


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def sim_node(cpus: int, quota: float | None) -> NodeProfile:
    return NodeProfile(
        logical_cpus=cpus,
        affinity_cpus=list(range(cpus)),
        affinity_source="simulated",
        quota_cpus=quota,
        effective_cpus=float(cpus) if quota is None else min(float(cpus), quota),
        cgroup=CgroupInfo(version=1, quota_cpus=quota),
        topology=Topology(online_cpus=list(range(cpus)), sockets=1 if cpus <= 64 else 2),
    )


def ok_result(spec: TrialSpec, p99: float, rps: float, window: float) -> TrialResult:
    """A simulated trial's result: the window's requests at ``rps``, the percentiles in the
    fixed ratios to p99 that every simulation here uses."""
    return TrialResult(
        setting=spec.setting,
        round=spec.round,
        status="ok",
        measure_s=window,
        requests=max(1, int(window * rps)),
        p50_ms=p99 * 0.7,
        p90_ms=p99 * 0.85,
        p99_ms=p99,
        max_ms=p99 * 1.2,
        throughput_rps=rps,
    )


def window_s(spec: TrialSpec, rps: float) -> float:
    """What the real child measures: ``measure_s`` and until ``min_requests`` completed, capped."""
    return min(max(spec.measure_s, spec.min_requests / rps), spec.longest_s)


def simulate_one(
    cpus: int, quota: float | None, launcher: Launcher = FORK, budget_s: float | None = None
) -> ScalingRow:
    """One node size, searched with ``budget_s`` (None: the advisor's default budget)."""
    model = CostModel(cpus, quota)
    node = sim_node(cpus, quota)
    clock = FakeClock()
    trials = 0

    def trial_fn(spec: TrialSpec, _deadline_s: float) -> TrialResult:
        nonlocal trials
        trials += 1
        intra, inter = spec.setting.intra, spec.setting.inter
        if intra is None or inter is None:
            intra, inter = model.default_setting()
        p99 = model.p99_ms(intra, inter)
        rps = 1000 / (p99 * 0.7)
        window = window_s(spec, rps)
        start_up = launcher.overhead_s + (launcher.first_s if trials == 1 else 0.0)
        clock.now += start_up + spec.warmup_s + window
        return ok_result(spec, p99, rps, window)

    # spending the budget as before the stopping rule: the coverage this measures is the
    # screen's, and the race's rounds are a budget's worth
    options = CalibrationOptions(spend_budget=True)
    if budget_s is not None:
        options = options.model_copy(update={"budget_s": budget_s})
    result = sweep(
        options,
        node,
        trial_fn=trial_fn,
        clock=clock,
        progress=lambda _event: None,
    )
    (best_i, best_j), best = model.best()
    advice = model.p99_ms(*result.counts)
    measured = {(t.setting.intra, t.setting.inter) for t in result.trials} - {(None, None)}
    return ScalingRow(
        launcher=launcher.name,
        overhead_s=launcher.overhead_s,
        cpus=cpus,
        quota_cpus=quota,
        candidates=len(candidate_configs(node)),
        measured=len(measured),
        trials=trials,
        race_rounds=max(0, result.rounds - 1),
        simulated_s=round(clock.now, 1),
        advice=f"{result.setting.intra}/{result.setting.inter}",
        kept_default=result.kept_default,
        model_best=f"{best_i}/{best_j}",
        advice_vs_best=round(advice / best, 3),
        default_vs_best=round(model.p99_ms(*model.default_setting()) / best, 3),
    )


def simulate(sizes: Sequence[int], launchers: Sequence[Launcher] = LAUNCHERS) -> list[ScalingRow]:
    """Each size without a quota, and (from 8 CPUs up) with a 4-CPU quota, the case the advisor
    exists for; for each way of starting a trial."""
    rows = []
    for launcher in launchers:
        for cpus in sizes:
            rows.append(simulate_one(cpus, None, launcher))
            if cpus >= 8:
                rows.append(simulate_one(cpus, 4.0, launcher))
    return rows


def main(argv: Sequence[str] = ()) -> int:
    """Prints both tables; takes no options."""
    from benchmarks.report import scaling_table

    if argv:
        print(f"python -m benchmarks scaling takes no arguments (got {' '.join(argv)})")
        return 2
    print(scaling_table(simulate((2, 4, 8, 16, 32, 64, 128, 256))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
