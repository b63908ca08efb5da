"""Deterministic stand-ins for the search tests: simulated nodes, a fake clock, a cost model, and
tripwires for a command's probe or sweep (``Instruments``) that must not be reached.

The cost model is a made-up but plausible CPU inference server: a request needs ``work_ms`` of CPU,
split over ``intra`` threads, but only ``usable`` CPUs' worth of quota exist; threads beyond that
add contention. Its best setting is known in closed form, so tests can check the search finds it
without hard-coding what the search returns. A trial's window is sized as the real child sizes it:
``measure_s`` and until ``min_requests`` completed, capped at ``max_measure_s``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from advisor.calibrate.spec import TrialSpec
from advisor.models import (
    CgroupInfo,
    NodeProfile,
    ThreadSetting,
    Topology,
    TrialResult,
    TrialStatus,
)

#: a setting as the fakes' tables name it: (intra, inter), (None, None) for TF's default, or a
#: ThreadSetting
Key = tuple[int | None, int | None] | ThreadSetting


def _pair(key: Key) -> tuple[int | None, int | None]:
    return (key.intra, key.inter) if isinstance(key, ThreadSetting) else key


def tripwire(what: str) -> Callable[..., NoReturn]:
    """A probe or sweep that fails the test when called: ``what`` should not have happened."""

    def tripped(*_args: Any, **_kwargs: Any) -> NoReturn:
        raise AssertionError(what)

    return tripped


def node(cpus: int, quota: float | None = None, sockets: int = 1) -> NodeProfile:
    """A simulated node: ``cpus`` online and in the affinity mask, optionally a CFS quota."""
    effective = min(float(cpus), quota) if quota is not None else float(cpus)
    return NodeProfile.model_validate(
        {
            "logical_cpus": cpus,
            "affinity_cpus": list(range(cpus)),
            "affinity_source": "simulated",
            "quota_cpus": quota,
            "effective_cpus": effective,
            "cgroup": CgroupInfo(quota_cpus=quota),
            "topology": Topology(online_cpus=list(range(cpus)), sockets=sockets),
        }
    )


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        assert seconds >= 0
        self.now += seconds


def model_p99(intra: int, inter: int, usable: float, work_ms: float = 20.0) -> float:
    """Latency of one setting: parallel speed-up up to the usable CPUs, contention beyond."""
    speedup: float = math.pow(min(intra, usable), 0.8)
    oversubscribed = max(0.0, intra + inter - usable - 1)
    return work_ms / speedup * (1 + 0.15 * oversubscribed) + 0.3 * inter


@dataclass
class FakeTrials:
    """A trial function over the cost model that spends fake time like a child process would."""

    clock: FakeClock
    usable: float
    affinity: int
    overhead_s: float = 3.0
    noise: float = 0.0
    seed: int = 1
    #: (intra, inter) -> status to return instead of "ok" (None key = the baseline)
    faults: dict[Key, TrialStatus] = field(default_factory=dict)
    hang: bool = False
    #: scales the baseline's latency (below 1: TF's default is the best setting of all)
    baseline_factor: float = 1.0
    #: start-up overhead by round, overriding ``overhead_s`` (a node that gets busier mid-sweep)
    overhead_by_round: dict[int, float] = field(default_factory=dict)
    #: every setting has this p99, the baseline too (times ``baseline_factor``)
    flat_p99: float | None = None
    #: per-setting noise overriding ``noise`` (a setting whose windows do not hold still)
    noisy: dict[Key, float] = field(default_factory=dict)
    #: per-setting p99 overriding the cost model (None key = the baseline): a made-up near tie
    table: dict[Key, float] = field(default_factory=dict)
    calls: list[tuple[TrialSpec, float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.faults = {_pair(k): v for k, v in self.faults.items()}
        self.noisy = {_pair(k): v for k, v in self.noisy.items()}
        self.table = {_pair(k): v for k, v in self.table.items()}

    def p99(self, intra: int | None, inter: int | None) -> float:
        if (intra, inter) in self.table:
            return self.table[(intra, inter)]
        if self.flat_p99 is not None:
            return self.flat_p99 * (self.baseline_factor if intra is None else 1.0)
        if intra is None or inter is None:
            return model_p99(self.affinity, self.affinity, self.usable) * self.baseline_factor
        return model_p99(intra, inter, self.usable)

    def __call__(self, spec: TrialSpec, deadline_s: float) -> TrialResult:
        started = self.clock.monotonic()
        self.calls.append((spec, deadline_s, started))
        key = (spec.setting.intra, spec.setting.inter)
        status = self.faults.get(key)
        if self.hang and status == "timeout":
            self.clock.advance(deadline_s)
            return TrialResult(
                intra_op_threads=key[0],
                inter_op_threads=key[1],
                round=spec.round,
                status="timeout",
                reason=f"no result within {deadline_s:.1f} s; killed",
            )
        overhead = self.overhead_by_round.get(spec.round, self.overhead_s)
        noise = self.noisy.get(key, self.noise)
        p99 = self.p99(*key) * (1 + noise * self.rng.uniform(-1, 1))
        concurrency_rps = 1000.0 / (p99 * 0.8)
        window = max(spec.measure_s, spec.min_requests / concurrency_rps)
        window = min(window, spec.longest_s)
        self.clock.advance(overhead + spec.warmup_s + window)
        if status is not None:
            return TrialResult(
                intra_op_threads=key[0],
                inter_op_threads=key[1],
                round=spec.round,
                status=status,
                reason=f"fake {status}",
            )
        return TrialResult(
            intra_op_threads=key[0],
            inter_op_threads=key[1],
            round=spec.round,
            status="ok",
            measure_s=window,
            requests=int(concurrency_rps * window),
            p50_ms=p99 * 0.8,
            p90_ms=p99 * 0.9,
            p99_ms=p99,
            max_ms=p99 * 1.1,
            throughput_rps=concurrency_rps,
            threads=5 + (key[0] or self.affinity) + (key[1] or self.affinity),
            nr_throttled=0,
        )


TrialFnLike = Callable[[TrialSpec, float], TrialResult]


@dataclass
class Bursts:
    """A noisy neighbour around a trial function: in half of the ``period_s`` slots of the fake
    clock (seeded), every trial that starts in one is ``factor`` times slower. Bursts last longer
    than a trial, so they hit runs of consecutive trials, not single windows."""

    trials: TrialFnLike
    clock: FakeClock
    seed: int = 0
    period_s: float = 6.0
    factor: float = 1.6
    start: float = field(init=False)

    def __post_init__(self) -> None:
        self.start = self.clock.monotonic()
        rng = random.Random(self.seed)
        self.on = [rng.random() < 0.5 for _ in range(4096)]

    def __call__(self, spec: TrialSpec, deadline_s: float) -> TrialResult:
        began = self.clock.monotonic()
        result = self.trials(spec, deadline_s)
        slot = int((began - self.start) / self.period_s) % len(self.on)
        if result.status != "ok" or not self.on[slot]:
            return result
        f = self.factor
        return result.model_copy(
            update={
                "p50_ms": (result.p50_ms or 0.0) * f,
                "p99_ms": (result.p99_ms or 0.0) * f,
                "throughput_rps": (result.throughput_rps or 0.0) / f,
            }
        )
