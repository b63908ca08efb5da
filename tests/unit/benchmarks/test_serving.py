"""The ``serving`` family's plumbing: its plan, the calibrate command lines, the replay's cost and
how a run reports it, and the harness's replay order; with the models, the calibrations and the
measuring children replaced by fakes (the real ones run in tests/system/test_benchmark_smoke.py
and tests/system/test_serving_models.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from benchmarks import advice_quality, figures, plan, report, serving
from benchmarks.calibrate_run import CalibrateRun, calibrate_argv
from benchmarks.harness_child import Replay
from benchmarks.plan import Scenario
from benchmarks.results import Run
from testkit.serving_models import KINDS

from .factory import run


def test_the_full_family_is_every_kind_under_a_one_cpu_quota_and_without_one() -> None:
    made = plan.make_plan("full", can_quota=True, family="serving")
    expected = {(f"serving_{k}", q) for k in KINDS for q in (None, 1.0)}
    assert {(s.subject, s.quota_cpus) for s in made.scenarios} == expected
    assert len(made.scenarios) == 10
    assert {(s.objective, s.concurrency) for s in made.scenarios} == {("latency", 1)}
    assert {s.serving_kind for s in made.scenarios} == set(KINDS)
    assert made.effort.replay_cost
    # the shapes family's other questions are not asked again here
    assert made.effort.compare_spawn == "none"
    assert not made.effort.repeat_with_incumbent
    assert made.effort.short_budget_s is None
    assert made.effort.scaling_sizes == ()


def test_quick_is_every_kind_under_the_quota_and_smoke_is_the_recommender() -> None:
    quick = plan.make_plan("quick", can_quota=True, family="serving").scenarios
    assert [s.serving_kind for s in quick] == list(KINDS)
    assert {s.quota_cpus for s in quick} == {1.0}
    (smoke,) = plan.make_plan("smoke", can_quota=True, family="serving").scenarios
    assert smoke.name == "serving_recommender/1cpu/latency/c1"


@pytest.mark.parametrize("mode", ["full", "quick", "smoke"])
def test_without_cgroups_the_family_runs_without_a_quota_and_says_so(mode: str) -> None:
    made = plan.make_plan(mode, can_quota=False, why_not="not root", family="serving")
    assert made.scenarios
    assert all(s.quota_cpus is None for s in made.scenarios)
    assert any("not root" in note for note in made.notes)
    if mode != "smoke":
        assert {s.serving_kind for s in made.scenarios} == set(KINDS)


def test_the_default_family_is_unchanged_and_an_unknown_one_is_refused() -> None:
    assert plan.make_plan("quick", can_quota=True) == plan.make_plan(
        "quick", can_quota=True, family="shapes"
    )
    assert all(s.serving_kind is None for s in plan.make_plan("full", can_quota=True).scenarios)
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        plan.make_plan("quick", can_quota=True, family="nope")


def test_a_kind_round_trips_through_its_subject_name() -> None:
    for kind in KINDS:
        assert plan.serving_kind(plan.serving_subject(kind)) == kind
    assert plan.serving_kind("serving_unknown") is None
    assert plan.serving_kind("wide_mlp") is None


def test_a_serving_model_is_calibrated_without_a_batch_size_its_requests_carry_theirs() -> None:
    served = Scenario("serving_bert", 1.0, "latency", 1)
    argv = calibrate_argv(served, Path("/m/bert/1"), 45.0)
    assert "--batch-size" not in argv
    assert argv[argv.index("--model") + 1] == "/m/bert/1"
    shaped = calibrate_argv(Scenario("wide_mlp", None, "latency", 1), Path("/m/w"), None)
    assert shaped[shaped.index("--batch-size") + 1] == "1"
    # the synthesised run of the replay's cost: its flags go last
    synth = calibrate_argv(
        serving.replay_cost_scenario(1.0), Path("/m"), None, extra=serving.synthesised_args()
    )
    assert synth[-4:] == ["--requests", "none", "--batch-size", str(plan.REPLAY_COST_BATCH)]


def _run(
    ok: int,
    wall: float,
    exit_code: int = 0,
    error: str | None = None,
    source: str | None = "warmup",
) -> CalibrateRun:
    """A calibrate run with ``ok`` measured trials whose inputs came from ``source`` (None: the
    result does not say, as an advisor before request replay writes it)."""
    trials = [{"status": "ok"}] * ok + [{"status": "failed"}]
    result = None
    if exit_code == 0:
        subject: dict[str, Any] = {"inputs": {"user_id": "int64[4]"}}
        if source is not None:
            subject["inputs_source"] = {"kind": source}
        result = {
            "intra_op_threads": 1,
            "inter_op_threads": 1,
            "trials": trials,
            "workload": subject,
        }
    return CalibrateRun(
        argv=["python", "calibrate"], exit_code=exit_code, wall_s=wall, result=result, error=error
    )


def test_the_replay_cost_is_the_ratio_of_ok_trials_per_minute_and_its_verdict() -> None:
    scenario = serving.replay_cost_scenario(1.0)
    synthesised = _run(40, 45.0, source="synthesised")
    kept = serving.replay_cost_of(scenario, 32, _run(36, 45.0), synthesised)
    assert (kept.replay_per_60s, kept.synthesised_per_60s) == (48.0, 53.33)
    assert kept.ratio == 0.9
    assert kept.target == "PASS"
    assert kept.replay.its_own_subject == {
        "inputs": {"user_id": "int64[4]"},
        "inputs_source": {"kind": "warmup"},
    }
    slow = serving.replay_cost_of(scenario, 32, _run(30, 45.0), synthesised)
    assert slow.ratio == 0.75
    assert slow.target == "MISS"
    # an advisor that did not replay (it says nothing of its inputs, or says synthesised): the
    # ratio is shown, but it is no measure of the replay's cost
    for source in (None, "synthesised"):
        unreplayed = serving.replay_cost_of(
            scenario, 32, _run(36, 45.0, source=source), _run(40, 45.0, source=None)
        )
        assert (unreplayed.ratio, unreplayed.target) == (0.9, "n/a")
    # a run that failed measured nothing: no ratio, no verdict, and its error is kept
    refused = _run(0, 2.0, exit_code=2, error="exit 2: unrecognized arguments: --requests")
    failed = serving.replay_cost_of(scenario, 32, _run(36, 45.0), refused)
    assert (failed.ratio, failed.target, failed.synthesised_per_60s) == (None, "n/a", None)
    assert failed.synthesised.error == "exit 2: unrecognized arguments: --requests"


def test_the_report_shows_the_replay_cost_and_a_failed_calibration_says_why() -> None:
    scenario = serving.replay_cost_scenario(1.0)
    refused = _run(0, 2.0, exit_code=2, error="exit 2: unrecognized arguments: --requests")
    cost = serving.replay_cost_of(scenario, 32, _run(36, 45.0), refused)
    the_run = run({"family": "serving", "replay_cost": cost.dump()})
    text = report.render(the_run)
    assert "## Advice quality (full, serving family, x)" in text
    assert "### Replaying warmup requests against synthesised inputs" in text
    assert "| warmup replay | 0    | 45.0        | 36        | 48.0" in text
    assert "user_id int64[4]" in text
    assert "replay / synthesised = -, target n/a" in text
    assert "synthesised calibration failed: exit 2: unrecognized arguments: --requests" in text
    # the run writes out as the JSON it reads back
    written = json.dumps(the_run.dump())
    assert Run.model_validate_json(written) == the_run
    # a run of the default family says nothing of families or replay
    plain = report.render(run({}))
    assert "family" not in plain
    assert "Replaying" not in plain


def test_the_replay_cost_calibrates_replay_first_then_synthesised_in_one_group(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    built: list[tuple[str, int | None]] = []
    calls: list[tuple[str, Path | None, tuple[str, ...]]] = []

    def build(kind: str, out_dir: Path, batch_size: int | None = None) -> serving.ServingModel:
        built.append((kind, batch_size))
        base = out_dir / kind
        return serving.ServingModel(kind, base, base / "1", (plan.REPLAY_COST_BATCH,) * 32)

    def calibrate(
        scenario: Scenario, model: Path | None, *_a: Any, extra: tuple[str, ...] = (), **_k: Any
    ) -> CalibrateRun:
        calls.append((scenario.name, model, tuple(extra)))
        return _run(40, 45.0, source="synthesised") if extra else _run(36, 45.0)

    monkeypatch.setattr(serving, "build_serving", build)
    monkeypatch.setattr(serving, "run_calibrate", calibrate)
    the_plan = plan.make_plan("quick", can_quota=False, family="serving")
    cost = advice_quality.replay_cost(the_plan, False, tmp_path, "base")
    assert built == [("recommender", plan.REPLAY_COST_BATCH)]
    base = tmp_path / "replay-cost" / "recommender"
    assert calls == [
        ("serving_recommender/noquota/latency/c1", base, ()),
        ("serving_recommender/noquota/latency/c1", base, tuple(serving.synthesised_args())),
    ]
    assert cost.quota_cpus is None
    assert cost.requests == 32
    assert cost.target == "PASS"


def test_a_serving_subject_gives_calibrate_its_path_and_the_judge_its_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def build(kind: str, out_dir: Path, batch_size: int | None = None) -> serving.ServingModel:
        base = out_dir / kind
        return serving.ServingModel(kind, base, base / "1", (1, 2))

    monkeypatch.setattr(serving, "build_serving", build)
    version = advice_quality.subject_model("serving_text", tmp_path, "version")
    assert version == (tmp_path / "text" / "1", ["--serving", str(tmp_path / "text" / "1")])
    base = advice_quality.subject_model("serving_text", tmp_path, "base")
    assert base == (tmp_path / "text", ["--serving", str(tmp_path / "text" / "1")])
    assert advice_quality.subject_model("builtin", tmp_path, "base") == (None, ["--builtin"])


def test_the_harness_replays_requests_in_the_files_order_from_the_first_every_window() -> None:
    sent: list[int] = []
    replay = Replay([lambda i=i: sent.append(i) for i in range(3)])
    for _ in range(4):
        replay()
    replay.restart()
    replay()
    assert sent == [0, 1, 2, 0, 0]


def test_concurrent_callers_each_take_a_distinct_request() -> None:
    sent: list[int] = []
    lock = threading.Lock()

    def call(i: int) -> None:
        with lock:
            sent.append(i)

    replay = Replay([lambda i=i: call(i) for i in range(1000)])
    threads = [threading.Thread(target=lambda: [replay() for _ in range(250)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(sent) == list(range(1000))


def test_kind_keeps_only_those_models_and_needs_the_serving_family(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = advice_quality.parse_args(["--family", "serving", "--kind", "bert", "--kind", "text"])
    made = advice_quality.plan_of(args, "full", None)
    assert [s.name for s in made.scenarios] == [
        "serving_text/noquota/latency/c1",
        "serving_text/1cpu/latency/c1",
        "serving_bert/noquota/latency/c1",
        "serving_bert/1cpu/latency/c1",
    ]
    assert made.effort.replay_cost
    smoke = advice_quality.plan_of(
        advice_quality.parse_args(["--family", "serving", "--kind", "text", "--no-replay-cost"]),
        "smoke",
        None,
    )
    assert [s.serving_kind for s in smoke.scenarios] == ["text"]
    assert not smoke.effort.replay_cost
    with pytest.raises(SystemExit) as refused:
        advice_quality.parse_args(["--kind", "bert"])
    assert refused.value.code == 2
    assert "add --family serving" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("subject", "source", "verdict"),
    [
        ("serving_text", "warmup", "PASS"),
        ("serving_text", "synthesised", "MISS"),
        ("serving_text", None, "MISS"),  # refused, or an advisor that does not say
        ("builtin", None, "n/a"),
    ],
)
def test_a_serving_calibration_passes_from_warmup_only_when_it_replayed_the_warmup_file(
    subject: str, source: str | None, verdict: str
) -> None:
    inputs = None if source is None else {"inputs_source": {"kind": source}}
    kind = figures.inputs_kind(inputs)
    made = figures.targets(
        Scenario(subject, 1.0, "latency", 1),
        advice=10.0,
        default=20.0,
        best=10.0,
        calibrate_wall_s=40.0,
        grid_s=300.0,
        peak_rss_mib=900.0,
        inputs_kind=kind,
    )
    assert made["from_warmup"] == verdict


def test_the_serving_report_says_what_each_calibration_fed_the_model() -> None:
    replayed = {
        "inputs": {"user_id": "int64[1-8]"},
        "inputs_source": {"kind": "warmup", "requests": 32, "batch_sizes": [1, 8]},
    }
    the_run = run(
        {
            "family": "serving",
            "scenarios": [
                {
                    "scenario": "serving_recommender/1cpu/latency/c1",
                    "workload": "serving_recommender",
                    "calibrate": {"exit_code": 0, "its_own_workload": replayed},
                },
                {
                    "scenario": "serving_text/1cpu/latency/c1",
                    "workload": "serving_text",
                    "calibrate": {"exit_code": 4, "error": "exit 4: a string input"},
                },
            ],
        }
    )
    text = report.render(the_run)
    table = text.split("### Inputs each calibration measured on\n")[1]
    assert "| serving_recommender/1cpu/latency/c1 | warmup      | 32       | 1-8 " in table
    assert "| serving_text/1cpu/latency/c1        | - (failed)  | -        | -   " in table
    assert "calibrate failed in serving_text/1cpu/latency/c1: exit 4: a string input" in text
    assert "### Inputs each calibration" not in report.render(run({"scenarios": [{}]}))
