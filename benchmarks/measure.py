"""The judge's rounds: every setting measured in seeded, reshuffled rounds, then a second look at
the contenders, and the grid's best and adv/best from some rounds alone (a look).

The measuring children answer each round with their raw samples (a JSON object a line:
latencies, completed requests, window, CPU seconds); ``figures.pool_rounds`` pools them.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Mapping
from typing import Any, Protocol

from benchmarks import cgroups, figures, plan
from benchmarks.plan import Effort
from benchmarks.pool import Arm
from benchmarks.results import Look, Pick, Pooled, SecondLook

#: one round's raw samples of one setting, as its measuring child answered
Sample = dict[str, Any]


class Measures(Protocol):
    """What the rounds need of the pool (benchmarks/pool.py): one measurement of one arm."""

    def measure(self, setting: Arm, window_s: float, warmup_s: float, concurrency: int) -> Sample:
        """One round of ``setting`` (its child must be running)."""


def log(line: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def measure_rounds(
    pool: Measures,
    settings: list[Arm],
    *,
    effort: Effort,
    concurrency: int,
    group: cgroups.RealCgroup | None,
    seed: int,
) -> tuple[dict[str, list[Sample]], dict[str, float]]:
    """Every setting once per round, in a fresh seeded order each round; returns raw samples per
    setting key and the wall seconds spent measuring each key."""
    samples: dict[str, list[Sample]] = {s.key: [] for s in settings}
    spent: dict[str, float] = dict.fromkeys(samples, 0.0)
    by_key = {s.key: s for s in settings}
    for number, order in enumerate(plan.round_orders(list(by_key), effort.rounds, seed)):
        for key in order:
            before = group.cpu_stat() if group is not None else {}
            began = time.monotonic()
            sample = pool.measure(by_key[key], effort.window_s, effort.warmup_s, concurrency)
            spent[key] += time.monotonic() - began
            if group is not None:
                after = group.cpu_stat()
                sample["nr_throttled"] = after["nr_throttled"] - before["nr_throttled"]
            samples[key].append(sample)
        log(f"  round {number + 1}/{effort.rounds} done ({len(order)} settings)")
    return samples, spent


def first_look(
    stats: Mapping[str, Pooled],
    grid_keys: list[str],
    objective: str,
    advice: tuple[int, int] | None,
) -> Look:
    """The grid's best and adv/best from the first rounds alone, kept beside the final figures
    so the report shows what the second look changed.

    Also the held-out figure, given only the second look's rounds (the settings they measured):
    there, neither the best nor the advice's figure comes from the rounds that picked the
    contenders, so the best is not the luckiest of many noisy figures (the winner's curse that
    pooling every round keeps in part)."""
    grid_keys = [k for k in grid_keys if k in stats]
    best_key, best = figures.best_of(stats, grid_keys, objective)
    key = None if advice is None else Arm.of(*advice).key
    value = (
        None if key is None or key not in stats else figures.objective_value(stats[key], objective)
    )
    return Look(
        grid_best=Pick(setting=best_key, value=best),
        advice_vs_grid_best=None if value is None else round(value / best, 3),
        advice_value=value,
        rounds=stats[best_key].rounds,
    )


def refine(
    pool: Measures,
    settings: list[Arm],
    samples: dict[str, list[Sample]],
    contenders: list[list[str]],
    *,
    effort: Effort,
    concurrency: int,
    group: cgroups.RealCgroup | None,
    seed: int,
    held_out: dict[str, Pooled] | None = None,
) -> SecondLook:
    """The judge's second look: ``effort.refine_rounds`` more interleaved rounds of the
    contenders (the advice and the top grid settings of every scenario measured here), added to
    their samples in place. Every other setting keeps its first rounds: it was already further
    from the best than the contenders, and its figure cannot decide a near-best verdict.
    ``held_out`` receives the new rounds' figures alone, per setting."""
    held_out = {} if held_out is None else held_out
    keys = list(dict.fromkeys(k for of_scenario in contenders for k in of_scenario))
    if effort.refine_rounds <= 0 or not keys:
        return SecondLook(rounds=0, settings=[], measure_s=0.0)
    by_key = {s.key: s for s in settings}
    log(f"second look: {len(keys)} settings ({', '.join(keys)}), {effort.refine_rounds} rounds")
    more, spent = measure_rounds(
        pool,
        [by_key[k] for k in keys],
        effort=dataclasses.replace(effort, rounds=effort.refine_rounds),
        concurrency=concurrency,
        group=group,
        seed=seed,
    )
    held_out.update({key: figures.pool_rounds(rounds) for key, rounds in more.items()})
    for key, rounds in more.items():
        samples[key].extend(rounds)
    return SecondLook(
        rounds=effort.refine_rounds, settings=keys, measure_s=round(sum(spent.values()), 2)
    )
