"""What the benchmark runs: scenarios, the settings compared in each, and per-mode effort.

Two families of scenarios: ``shapes`` (the default: the advisor's built-in network and the
benchmark's own shapes, across quotas, objectives and concurrencies) and ``serving`` (the five
signature kinds teams serve with TF Serving, testkit/serving_models.py, each replaying its own
warmup requests, under a 1-CPU quota and without one).

Pure data and arithmetic (no TensorFlow, no processes), so the tests can check the plan itself:
that the quick set keeps the 1-CPU latency scenario, that the grid is intra 1..2x affinity by
inter 1..4, and that the static rule is the one people actually use.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from dataclasses import dataclass, field

from benchmarks.figures import SHORT_BUDGET_S, done_when_short
from testkit.serving_models import KINDS as SERVING_KINDS

QUOTAS: tuple[float | None, ...] = (None, 1.5, 1.0)
OBJECTIVES = ("latency", "throughput")
CONCURRENCIES = (1, 2)
#: the models under test (subjects): the advisor's own network, and a shape the benchmark
#: builds (benchmarks/shapes.py)
SUBJECTS = ("builtin", "wide_mlp")
MAX_INTER = 4
FAMILIES = ("shapes", "serving", "networks")
#: the networks family's subjects (benchmarks/shapes.py): real architectures nobody here wrote,
#: the issue's "real networks", and its quotas: the 1-CPU target first
NETWORKS = ("mobilenet_v2", "resnet50")
NETWORK_QUOTAS: tuple[float | None, ...] = (1.0, None)
#: a serving scenario's subject is this prefix and the kind (``serving_bert``)
SERVING_PREFIX = "serving_"
#: the serving family's quotas: the issue's target names these two
SERVING_QUOTAS: tuple[float | None, ...] = (None, 1.0)
#: the model whose warmup replay is timed against synthesis (numeric inputs: both are possible),
#: and the one batch size of all its requests (so both feed the same shapes)
REPLAY_COST_KIND = "recommender"
REPLAY_COST_BATCH = 4


@dataclass(frozen=True)
class Scenario:
    subject: str
    quota_cpus: float | None
    objective: str
    concurrency: int
    batch_size: int = 1

    @property
    def name(self) -> str:
        quota = "noquota" if self.quota_cpus is None else f"{self.quota_cpus:g}cpu"
        return f"{self.subject}/{quota}/{self.objective}/c{self.concurrency}"

    @property
    def serving_kind(self) -> str | None:
        """The TF Serving model kind of a ``serving`` scenario, None for the other family."""
        return serving_kind(self.subject)

    @property
    def group_key(self) -> tuple[str, float | None, int, int]:
        """Scenarios sharing this key share one measurement: only the advice differs."""
        return (self.subject, self.quota_cpus, self.concurrency, self.batch_size)


@dataclass(frozen=True)
class Effort:
    """How hard each mode measures; the calibrate budget is None = the advisor's default."""

    rounds: int
    window_s: float
    warmup_s: float
    calibrate_budget_s: float | None = None
    #: calibrate with ``--spend-budget``: race until the budget is spent, as before the stopping
    #: rule (the "before" of a before/after comparison)
    spend_budget: bool = False
    grid_limit: tuple[int, int] | None = None  # (max intra, max inter), smoke only
    scaling_sizes: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128, 256)
    #: also calibrate with every trial spawned (--trial-mode spawn): the fork server's gain,
    #: measured in the same run; "all" scenarios, the "first" of each subject and quota (the
    #: full run: six more minutes instead of 24), or "none"
    compare_spawn: str = "all"
    #: also calibrate the no-quota latency scenarios with this short budget (the check
    #: that a 30 s sweep's advice is within 5% of the grid's best p99); None: not run
    short_budget_s: float | None = None
    #: and every other scenario too (``--short-everywhere``): the default budget against a short
    #: one on all 24 scenarios, judged by the same grid (how the default budget is derived)
    short_everywhere: bool = False
    #: then measure the advice and the ``refine_top`` best grid settings this many more rounds
    #: (the judge's second look: after five rounds two settings' figures can differ by 15-30% by
    #: noise alone here, too coarse to referee a 5% target); 0: no second look
    refine_rounds: int = 0
    refine_top: int = 2
    #: calibrate every scenario a second time with the first one's result as the incumbent
    #: (``calibrate --incumbent``): how often the advice a roll-out would act on stays the same
    repeat_with_incumbent: bool = True
    #: time a warmup-replay calibration against a synthesised one of the same shapes (``serving``)
    replay_cost: bool = False

    def short_budget_for(self, scenario: Scenario) -> float | None:
        """The short budget ``scenario`` is calibrated with a second time, or None."""
        if self.short_budget_s is None:
            return None
        done_when = done_when_short(scenario.quota_cpus, scenario.objective)
        return self.short_budget_s if done_when or self.short_everywhere else None


@dataclass(frozen=True)
class Plan:
    mode: str
    scenarios: tuple[Scenario, ...]
    effort: Effort
    notes: tuple[str, ...] = field(default=())


EFFORT = {
    "full": Effort(
        rounds=5,
        window_s=2.0,
        warmup_s=0.3,
        compare_spawn="first",
        short_budget_s=SHORT_BUDGET_S,
        refine_rounds=8,
    ),
    "quick": Effort(
        rounds=3, window_s=0.7, warmup_s=0.15, short_budget_s=SHORT_BUDGET_S, refine_rounds=4
    ),
    "smoke": Effort(
        rounds=2,
        window_s=0.2,
        warmup_s=0.05,
        calibrate_budget_s=30.0,
        grid_limit=(2, 1),
        scaling_sizes=(2, 64),
        compare_spawn="none",
        refine_rounds=1,
    ),
}


def serving_kind(subject: str) -> str | None:
    """``bert`` for ``serving_bert``; None for a subject of the ``shapes`` family."""
    if not subject.startswith(SERVING_PREFIX):
        return None
    kind = subject.removeprefix(SERVING_PREFIX)
    return kind if kind in SERVING_KINDS else None


def serving_subject(kind: str) -> str:
    return f"{SERVING_PREFIX}{kind}"


#: the serving family measures latency with one request in flight: per request, each with its
#: own batch, as the issue's target asks. Shorter than the shapes family's full effort, so the
#: five kinds under two quotas fit in about 20 min on 2 cores; no spawn, short or incumbent
#: reruns (those questions are the shapes family's), but the replay's cost beside synthesis.
_SERVING_FULL = Effort(
    rounds=3,
    window_s=0.8,
    warmup_s=0.15,
    compare_spawn="none",
    refine_rounds=3,
    repeat_with_incumbent=False,
    scaling_sizes=(),
    replay_cost=True,
)
SERVING_EFFORT = {
    "full": _SERVING_FULL,
    "quick": dataclasses.replace(_SERVING_FULL, rounds=2, window_s=0.6, refine_rounds=2),
    "smoke": dataclasses.replace(
        _SERVING_FULL,
        rounds=2,
        window_s=0.2,
        warmup_s=0.05,
        calibrate_budget_s=30.0,
        grid_limit=(2, 1),
        refine_rounds=1,
    ),
}


#: the networks family: latency with one request in flight, as the target names it. A request
#: takes 10-40 ms (MobileNetV2) to 100-250 ms (ResNet50) here, so the judge's windows are longer
#: than the shapes family's (a 3 s window holds 12-30 ResNet50 requests under one CPU) and its
#: second look longer too; no spawn, short or incumbent reruns (the shapes family's questions).
_NETWORKS_FULL = Effort(
    rounds=5,
    window_s=3.0,
    warmup_s=0.5,
    compare_spawn="none",
    refine_rounds=8,
    repeat_with_incumbent=False,
    scaling_sizes=(),
)
NETWORK_EFFORT = {
    "full": _NETWORKS_FULL,
    "quick": dataclasses.replace(_NETWORKS_FULL, rounds=3, refine_rounds=4),
    "smoke": dataclasses.replace(
        _NETWORKS_FULL,
        rounds=2,
        window_s=0.3,
        warmup_s=0.1,
        calibrate_budget_s=30.0,
        grid_limit=(2, 1),
        refine_rounds=1,
    ),
}


def network_scenarios(mode: str, can_quota: bool) -> tuple[Scenario, ...]:
    """Full: each network under each of ``NETWORK_QUOTAS``; quick: each under the 1-CPU quota;
    smoke: MobileNetV2 alone, under the quota where one can be made."""
    if mode == "smoke":
        return (Scenario(NETWORKS[0], 1.0 if can_quota else None, "latency", 1),)
    quotas = NETWORK_QUOTAS if mode == "full" else NETWORK_QUOTAS[:1]
    return tuple(Scenario(n, q, "latency", 1) for n in NETWORKS for q in quotas)


def full_scenarios() -> tuple[Scenario, ...]:
    return tuple(
        Scenario(w, q, o, c)
        for w, q, o, c in itertools.product(SUBJECTS, QUOTAS, OBJECTIVES, CONCURRENCIES)
    )


def quick_scenarios() -> tuple[Scenario, ...]:
    """Four scenarios, three measurements: the 1-CPU latency target, both objectives, both
    concurrencies, both models, every quota level."""
    return (
        Scenario("builtin", 1.0, "latency", 1),
        Scenario("builtin", 1.0, "throughput", 1),
        Scenario("builtin", 1.5, "throughput", 2),
        Scenario("wide_mlp", None, "latency", 1),
    )


def smoke_scenarios(can_quota: bool) -> tuple[Scenario, ...]:
    return (Scenario("builtin", 1.0 if can_quota else None, "latency", 1),)


def serving_scenarios(
    mode: str, can_quota: bool, kinds: tuple[str, ...] | None = None
) -> tuple[Scenario, ...]:
    """Full: every kind under each of ``SERVING_QUOTAS``; quick: every kind under the 1-CPU
    quota; smoke: the recommender alone (numeric inputs: the advisor calibrates it with or without
    its warmup requests), under the quota where one can be made. ``kinds`` keeps only those."""
    if mode == "smoke":
        quota = 1.0 if can_quota else None
        chosen = kinds or (REPLAY_COST_KIND,)
        return tuple(Scenario(serving_subject(k), quota, "latency", 1) for k in chosen)
    quotas = SERVING_QUOTAS if mode == "full" else (1.0,)
    return tuple(
        Scenario(serving_subject(kind), quota, "latency", 1)
        for kind in SERVING_KINDS
        if kinds is None or kind in kinds
        for quota in quotas
    )


def make_plan(
    mode: str,
    can_quota: bool,
    why_not: str | None = None,
    family: str = "shapes",
    kinds: tuple[str, ...] | None = None,
) -> Plan:
    """The scenarios of ``mode`` in ``family`` (``serving``: of ``kinds`` only, when given);
    without cgroups only the no-quota ones remain (and it says so)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    effort = EFFORT[mode]
    if family == "serving":
        scenarios = serving_scenarios(mode, can_quota, kinds)
        effort = SERVING_EFFORT[mode]
    elif family == "networks":
        scenarios = network_scenarios(mode, can_quota)
        effort = NETWORK_EFFORT[mode]
    elif mode == "smoke":
        scenarios = smoke_scenarios(can_quota)
    elif mode == "quick":
        scenarios = quick_scenarios()
    else:
        scenarios = full_scenarios()
    notes: list[str] = []
    if not can_quota:
        kept = tuple(s for s in scenarios if s.quota_cpus is None)
        dropped = len(scenarios) - len(kept)
        if mode == "quick" and not kept:
            kept = tuple(dataclasses.replace(s, quota_cpus=None) for s in scenarios)
            if family == "shapes":
                kept = (Scenario("builtin", None, "latency", 1),)
        notes.append(
            f"no real cgroup quotas ({why_not or 'unavailable'}): dropped {dropped} quota "
            "scenario(s), only no-quota scenarios were run"
        )
        scenarios = kept
    return Plan(mode, scenarios, effort, tuple(notes))


def effective_cpus(affinity: int, quota_cpus: float | None) -> float:
    return float(affinity) if quota_cpus is None else min(float(affinity), quota_cpus)


def static_rule(affinity: int, quota_cpus: float | None, sockets: int) -> tuple[int, int]:
    """The usual hand rule: intra = effective cores rounded down (at least 1), inter = sockets."""
    return max(1, math.floor(effective_cpus(affinity, quota_cpus))), max(1, sockets)


def grid(affinity: int, limit: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """The exhaustive grid: intra 1..2x affinity, inter 1..4."""
    max_intra, max_inter = 2 * affinity, MAX_INTER
    if limit is not None:
        max_intra, max_inter = min(max_intra, limit[0]), min(max_inter, limit[1])
    return [(i, j) for i in range(1, max_intra + 1) for j in range(1, max_inter + 1)]


def round_orders(keys: list[str], rounds: int, seed: int) -> list[list[str]]:
    """Each round runs every setting once; the order is reshuffled per round (seeded) so that
    drift and neighbour effects hit every setting alike."""
    rng = random.Random(seed)
    orders = []
    for _ in range(rounds):
        order = list(keys)
        rng.shuffle(order)
        orders.append(order)
    return orders
