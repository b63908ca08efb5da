"""Objectives as types: each one's value, direction, bound and words; the registry as the one place
the CLI's choices and the models' validation come from; and the oneDNN verdict judged by what the
thread setting was chosen by (under an SLO no setting met, p99, not the objective's throughput)."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import pytest
from pydantic import ValidationError

from advisor import objectives
from advisor.calibrate import onednn
from advisor.calibrate.spec import TrialSpec
from advisor.cli import build_parser, main
from advisor.cli._args import spelled
from advisor.cli.calibrate_cmd import options_from_args
from advisor.errors import UsageError
from advisor.models import CalibrationOptions, CalibrationResult, Measurement, TrialResult
from advisor.objectives import (
    DEFAULT_OBJECTIVE,
    OBJECTIVES,
    P99,
    THROUGHPUT,
    Latency,
    Measure,
    Objective,
    Slo,
    Throughput,
    named,
    register,
)
from advisor.pipeline.sweep import sweep
from advisor.render.words import compare_text, figure_text, onednn_reason
from tests.support.search_fakes import FakeClock, FakeTrials, node

#: lower p99 but fewer requests/s than SLOW: the objectives disagree about the two
FAST = Measurement(p50_ms=2.0, p99_ms=5.0, throughput_rps=300.0)
SLOW = Measurement(p50_ms=4.0, p99_ms=10.0, throughput_rps=500.0)


@dataclass(frozen=True)
class Row:
    """A setting as the ranking sees it: its figures and its thread cost."""

    name: str
    p99_ms: float
    throughput_rps: float
    threads: int
    p50_ms: float | None = None


# --------------------------------------------------------------------------------------------------
# each objective: value, direction, admissibility


def test_latency_ranks_by_p99_lowest_first_and_admits_every_setting() -> None:
    latency = named("latency")
    assert latency.value(FAST) == FAST.p99_ms
    assert latency.value(FAST) < latency.value(SLOW)
    assert latency.lower_is_better() and latency.lower_is_better(met=False)
    assert latency.measure(met=False) is P99  # no bound to miss: always p99
    assert latency.admits(SLOW, 1.0) and latency.admits(SLOW, None)
    assert latency.met([], None)
    assert latency.bounded_by is None


def test_throughput_ranks_by_requests_per_second_highest_first() -> None:
    throughput = named("throughput")
    assert throughput.value(SLOW) == SLOW.throughput_rps
    assert not throughput.lower_is_better() and not throughput.lower_is_better(met=False)
    assert throughput.admits(FAST, 1.0)
    assert throughput.bounded_by is None


def test_slo_ranks_by_throughput_among_settings_within_the_bound_else_by_p99() -> None:
    slo = named("slo")
    assert slo.value(SLOW, met=True) == SLOW.throughput_rps
    assert slo.value(SLOW, met=False) == SLOW.p99_ms  # nobody met it: the nearest wins
    assert not slo.lower_is_better(met=True) and slo.lower_is_better(met=False)
    assert slo.admits(FAST, FAST.p99_ms)  # the bound itself is met
    assert not slo.admits(SLOW, 9.0)
    assert slo.admits(SLOW, 9.0, slack=0.2)  # 10 ms is within 9 ms + 20%
    assert not slo.admits(SLOW, 9.0, slack=0.1)
    assert not slo.admits(FAST, None)  # without a bound, nothing meets it
    assert not slo.met([SLOW], 9.0) and slo.met([SLOW, FAST], 9.0)


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_a_missing_figure_is_the_worst_value_and_meets_no_bound(name: str) -> None:
    objective = named(name)
    for met in (True, False):
        worst = math.inf if objective.lower_is_better(met) else 0.0
        assert objective.value(Measurement(), met) == worst
    if objective.bounded_by is not None:
        assert not objective.admits(Measurement(), 1e9)


def test_ranking_puts_admissible_settings_first_then_the_nearest_to_the_bound() -> None:
    rows = [
        Row("A", p99_ms=5.0, throughput_rps=300.0, threads=2),
        Row("B", p99_ms=10.0, throughput_rps=500.0, threads=2),
        Row("C", p99_ms=7.0, throughput_rps=400.0, threads=4),
        Row("D", p99_ms=9.0, throughput_rps=100.0, threads=1),
        Row("E", p99_ms=5.0, throughput_rps=300.0, threads=1),  # A's figures, fewer threads
    ]

    def order(objective: str, bound: float | None = None) -> list[str]:
        return [r.name for r in named(objective).rank(rows, bound)]

    def by(key: str, lower: bool, among: list[Row]) -> list[str]:
        sign = 1 if lower else -1
        return [r.name for r in sorted(among, key=lambda r: (sign * getattr(r, key), r.threads))]

    assert order("latency") == by("p99_ms", True, rows) == ["E", "A", "C", "D", "B"]
    assert order("throughput") == by("throughput_rps", False, rows)
    within = [r for r in rows if r.p99_ms <= 8.0]
    beyond = [r for r in rows if r.p99_ms > 8.0]
    assert order("slo", 8.0) == by("throughput_rps", False, within) + by("p99_ms", True, beyond)
    assert order("slo", None) == order("latency")  # no bound: nobody meets it


# --------------------------------------------------------------------------------------------------
# words


@pytest.mark.parametrize(
    ("name", "met", "figure"),
    [
        ("latency", True, "p99 5.00 ms"),
        ("throughput", True, "throughput 300 req/s"),
        ("slo", True, "throughput 300 req/s"),
        ("slo", False, "p99 5.00 ms"),
    ],
)
def test_a_figure_is_written_in_the_terms_of_what_ranked_it(
    name: str, met: bool, figure: str
) -> None:
    assert figure_text(named(name).measure(met), FAST) == figure


def test_a_comparison_says_which_way_is_better_for_the_measure() -> None:
    assert compare_text(P99, FAST, SLOW, "TF's default", 0.09) == (
        "p99 5.00 ms against 10.00 ms for TF's default (50% lower, noise \u00b19%)"
    )
    assert compare_text(THROUGHPUT, FAST, SLOW, "4/2", None) == (
        "throughput 300 req/s against 500 req/s for 4/2 (40% lower)"
    )


def test_each_measure_has_the_words_render_and_the_logs_need() -> None:
    assert (P99.what, P99.unit, P99.digits, P99.title) == ("p99", "ms", 2, "p99 latency")
    assert (THROUGHPUT.what, THROUGHPUT.unit, THROUGHPUT.digits) == ("throughput", "req/s", 0)
    # bare figures need the measure named when the unit does not say it
    assert (P99.named_unit, THROUGHPUT.named_unit) == ("ms p99", "req/s")
    assert (P99.limit(40), P99.beyond(40)) == ("p99 <= 40 ms", "p99 over 40 ms")
    assert (THROUGHPUT.limit(100), THROUGHPUT.beyond(100)) == (
        "throughput >= 100 req/s",
        "throughput under 100 req/s",
    )
    assert (P99.best, THROUGHPUT.best) == ("lowest", "highest")


# --------------------------------------------------------------------------------------------------
# the registry


def test_the_registry_holds_one_instance_per_class_under_its_name() -> None:
    # not pinned to these three: adding an objective must not mean editing this test
    assert list(OBJECTIVES)[:3] == ["latency", "throughput", "slo"]
    for name, objective in OBJECTIVES.items():
        assert isinstance(objective, Objective) and objective.name == name
    for cls in (Latency, Throughput, Slo):
        assert named(cls.name) == cls() and hash(named(cls.name)) == hash(cls())
    assert named("latency") != named("slo")
    assert DEFAULT_OBJECTIVE in OBJECTIVES
    with pytest.raises(ValueError, match=r"unknown objective 'speed' \(one of latency, "):
        named("speed")
    with pytest.raises(ValueError, match="registered twice"):
        register(Latency)


class _Median(Objective):
    """A made-up objective for the registry tests (registered only inside them)."""

    name = "median"
    help = "lowest p50"
    ranks_by = Measure(
        what="p50",
        title="p50 latency",
        short="p50",
        unit="ms",
        digits=2,
        lower_is_better=True,
        read=lambda f: f.p50_ms,
    )


@pytest.fixture
def with_median(monkeypatch: pytest.MonkeyPatch) -> Objective:
    """``median`` registered for one test, as a class registered in advisor.objectives would be."""
    monkeypatch.setitem(objectives._REGISTRY, _Median.name, _Median())
    return named(_Median.name)


def _objective_flag(command: str) -> argparse.Action:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub = subparsers.choices[command]
    return next(a for a in sub._actions if "--objective" in a.option_strings)


@pytest.mark.parametrize("command", ["calibrate", "run"])
def test_the_cli_offers_what_the_registry_holds(command: str, with_median: Objective) -> None:
    flag = _objective_flag(command)
    assert list(flag.choices or ()) == list(OBJECTIVES)
    assert "median" in (flag.choices or ())
    assert flag.default == DEFAULT_OBJECTIVE
    for name, objective in OBJECTIVES.items():
        assert f"{name}: {objective.help}" in (flag.help or "")


def test_the_models_accept_what_the_registry_holds(with_median: Objective) -> None:
    options = CalibrationOptions(objective="median")
    assert options.objective == "median"  # stored as the plain name
    assert options.model_dump()["objective"] == "median"
    schema = CalibrationResult.model_json_schema()["properties"]["objective"]
    assert schema["type"] == "string" and set(schema["enum"]) >= {"latency", "throughput", "slo"}
    with pytest.raises(ValidationError, match=r"unknown objective 'speed'.*median"):
        CalibrationOptions(objective="speed")


def test_a_bounded_objective_needs_its_bound_in_the_models() -> None:
    with pytest.raises(ValidationError, match="objective slo needs p99_slo_ms"):
        CalibrationOptions(objective="slo")
    assert CalibrationOptions(objective="slo", p99_slo_ms=20.0).p99_slo_ms == 20.0


def test_an_unknown_objective_is_a_one_line_usage_error_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str], with_median: Objective
) -> None:
    code = main(["calibrate", "--objective", "speed"])
    err = capsys.readouterr().err
    assert code == UsageError.exit_code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "invalid choice: 'speed'" in err
    for name in OBJECTIVES:
        assert repr(name) in err


def test_an_unknown_objective_past_the_parser_fails_the_models_validation() -> None:
    args = build_parser().parse_args(["calibrate"])
    args.objective = "speed"
    with pytest.raises(UsageError) as refused:
        options_from_args(args)
    assert spelled(refused.value).startswith("--objective: unknown objective 'speed' (one of ")


# --------------------------------------------------------------------------------------------------
# the oneDNN verdict judges by what the setting was chosen by


def _onednn_sweep(p99_slo_ms: float) -> CalibrationResult:
    """An SLO sweep where TF_ENABLE_ONEDNN_OPTS=0 lowers p99 by 30% and leaves requests/s alone."""
    clock = FakeClock()
    fake = FakeTrials(clock=clock, usable=2.0, affinity=2, overhead_s=0.3, noise=0.01)

    def trial(spec: TrialSpec, deadline_s: float) -> TrialResult:
        result = fake(spec, deadline_s)
        if result.status != "ok" or spec.onednn is None:
            return result
        scale = 0.7 if spec.onednn == "0" else 1.0
        return result.model_copy(
            update={"p99_ms": (result.p99_ms or 0) * scale, "onednn": spec.onednn}
        )

    options = CalibrationOptions(
        objective="slo", p99_slo_ms=p99_slo_ms, budget_s=60.0, sweep_onednn=True
    )
    return sweep(options, node(2), trial_fn=trial, clock=clock)


def test_under_an_slo_nobody_meets_the_onednn_verdict_judges_by_p99_as_the_threads_were() -> None:
    result = _onednn_sweep(p99_slo_ms=0.5)  # no setting comes near 0.5 ms
    assert result.slo_met is False
    assert result.onednn is not None and result.onednn.value == "0"
    assert "ms p99" in result.onednn.reason
    # judged by the objective's own measure regardless of the bound (what the verdict did before:
    # lower_is_better(objective) without slo_met), the same pairs show no difference at all
    before = onednn.verdict(result.onednn_trials, named("slo").measure(), result.onednn.pairs)
    assert before.value is None and "req/s" in onednn_reason(before)


def test_under_an_slo_that_is_met_the_onednn_verdict_judges_by_throughput() -> None:
    result = _onednn_sweep(p99_slo_ms=1000.0)
    assert result.slo_met is True
    assert result.onednn is not None and result.onednn.value is None  # same requests/s
    assert "req/s" in result.onednn.reason
