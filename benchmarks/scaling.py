"""Simulated scaling: the advisor's real search on nodes of 2..256 CPUs, against a cost model.

Why simulate: this machine has 2 cores, but the product's users run 64-core nodes. The question
here is not "is the advice right" (only real measurements say that) but "how does the sweep's
cost grow with the node": how many trials, how many rounds, how many seconds of a Job, and whether
it still lands near the cost model's own optimum. Time is a fake clock advanced by what a trial
child would take (start-up + warm-up + window), so the numbers come out in seconds of a real run.

The cost model is the benchmark's own (deliberately not the search tests' one): a request has a
serial part and a parallel part; intra-op threads split the parallel part over the CPUs that
exist; threads beyond the quota make the CFS throttle (a tail of up to one 100 ms period at the
p99); inter-op threads help only as far as the model has independent branches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.calibrate import calibrate
from advisor.models import CalibrationOptions, CgroupInfo, NodeProfile, Topology, TrialResult

#: one simulated trial child: process start + import tensorflow + model load, seconds
TRIAL_OVERHEAD_S = 3.0
PERIOD_MS = 100.0


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
        compute = self.serial_ms + self.parallel_ms / (min(intra, usable) ** 0.9) / branch_speedup
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


def simulate_one(cpus: int, quota: float | None) -> dict[str, Any]:
    model = CostModel(cpus, quota)
    clock = FakeClock()
    trials = 0

    def trial_fn(spec: Any, _deadline_s: float) -> TrialResult:
        nonlocal trials
        trials += 1
        clock.now += TRIAL_OVERHEAD_S + spec.warmup_s + spec.measure_s
        intra, inter = spec.intra_op_threads, spec.inter_op_threads
        if intra is None or inter is None:
            intra, inter = model.default_setting()
        p99 = model.p99_ms(intra, inter)
        return TrialResult(
            intra_op_threads=spec.intra_op_threads,
            inter_op_threads=spec.inter_op_threads,
            round=spec.round,
            status="ok",
            measure_s=spec.measure_s,
            requests=max(1, int(spec.measure_s * 1000 / p99)),
            p50_ms=p99 * 0.7,
            p90_ms=p99 * 0.85,
            p99_ms=p99,
            max_ms=p99 * 1.2,
            throughput_rps=1000 / (p99 * 0.7),
        )

    result = calibrate(
        CalibrationOptions(),
        sim_node(cpus, quota),
        trial_fn=trial_fn,
        clock=clock,
        progress=lambda _line: None,
    )
    (best_i, best_j), best = model.best()
    advice = model.p99_ms(result.intra_op_threads, result.inter_op_threads)
    return {
        "cpus": cpus,
        "quota_cpus": quota,
        "candidates": len({(t.intra_op_threads, t.inter_op_threads) for t in result.trials}) - 1,
        "trials": trials,
        "rounds": 1 + max(t.round for t in result.trials),
        "simulated_s": round(clock.now, 1),
        "advice": f"{result.intra_op_threads}/{result.inter_op_threads}",
        "model_best": f"{best_i}/{best_j}",
        "advice_vs_best": round(advice / best, 3),
        "default_vs_best": round(model.p99_ms(*model.default_setting()) / best, 3),
    }


def simulate(sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Each size without a quota, and (from 8 CPUs up) with a 4-CPU quota, the case the advisor
    exists for."""
    rows = []
    for cpus in sizes:
        rows.append(simulate_one(cpus, None))
        if cpus >= 8:
            rows.append(simulate_one(cpus, 4.0))
    return rows
