"""sweep(): the orchestration with a synthetic trial function and a fake clock (no TF)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from advisor.calibrate.spec import TrialSpec
from advisor.errors import CalibrationError
from advisor.models import CalibrationOptions, CalibrationResult, TrialResult
from advisor.pipeline.sweep import sweep
from tests.support.search_fakes import FakeClock, FakeTrials, node


def run(
    cpus: int = 2,
    quota: float | None = 1.0,
    budget: float = 60.0,
    objective: str = "latency",
    p99: float | None = None,
    **fake: Any,
) -> tuple[CalibrationResult, FakeTrials, FakeClock, list[str]]:
    profile = node(cpus, quota=quota)
    clock = FakeClock()
    trials = FakeTrials(clock=clock, usable=profile.effective_cpus, affinity=cpus, **fake)
    lines: list[str] = []
    options = CalibrationOptions.model_validate(
        {"objective": objective, "p99_slo_ms": p99, "budget_s": budget}
    )
    result = sweep(
        options,
        profile,
        progress=lambda event: lines.append(event.line),
        trial_fn=trials,
        clock=clock,
    )
    return result, trials, clock, lines


def test_json_contract_is_the_results_dump() -> None:
    result, _, _, _ = run()
    data = json.loads(json.dumps(result.model_dump(mode="json")))
    for key in ("intra_op_threads", "inter_op_threads", "objective", "baseline", "chosen"):
        assert key in data
    for which in ("baseline", "chosen"):
        assert set(data[which]) >= {"p50_ms", "p99_ms", "throughput_rps"}
    assert data["trials"]
    for trial in data["trials"]:
        assert set(trial) >= {
            "intra_op_threads",
            "inter_op_threads",
            "p50_ms",
            "p99_ms",
            "throughput_rps",
            "nr_throttled",
            "status",
        }
    baselines = [t for t in data["trials"] if t["intra_op_threads"] is None]
    assert baselines
    assert all(t["inter_op_threads"] is None for t in baselines)
    assert data["node"]["effective_cpus"] == 1.0
    assert data["objective"] == "latency"
    # and it reads back as the same model
    assert CalibrationResult.model_validate(data) == result


def test_advice_beats_the_oversubscribed_default_and_stays_in_budget() -> None:
    # 60 s hold too few race rounds of the fakes' 3 s windows to replace TF's default: 200
    result, fake, clock, _ = run(budget=200.0)
    assert clock.monotonic() - 1000.0 <= 200.0
    assert result.elapsed_s <= 200.0
    assert result.counts != (2, 2)
    assert result.gain is not None
    assert result.gain > 1
    assert result.chosen.p99_ms is not None
    assert result.baseline.p99_ms is not None
    assert result.chosen.p99_ms < result.baseline.p99_ms
    assert result.rounds >= 2
    assert result.subject.model_format == "builtin"
    assert len(result.trials) == len(fake.calls)


def test_progress_reports_every_trial() -> None:
    result, fake, _, lines = run()
    finished = [line for line in lines if " -> " in line]
    assert len(finished) == len(fake.calls)
    assert all(line.startswith("[") and "/60 s]" in line for line in finished)
    assert lines[-1].startswith(
        f"advice: intra={result.setting.intra} inter={result.setting.inter}"
    )


def test_slo_missed_is_said_in_the_result() -> None:
    result, _, _, _ = run(objective="slo", p99=0.001)
    assert result.slo_met is False
    assert any("no setting met" in note for note in result.notes)
    assert result.p99_slo_ms == 0.001


def test_an_slo_objective_needs_its_bound_in_the_options_themselves() -> None:
    # not only on the command line: sweep() could not rank an SLO without its bound
    with pytest.raises(ValidationError, match="objective slo needs p99_slo_ms"):
        CalibrationOptions(objective="slo")


def test_baseline_failure_is_a_calibration_error() -> None:
    with pytest.raises(CalibrationError, match="baseline"):
        run(faults={(None, None): "timeout"})


def test_all_settings_failing_is_a_calibration_error() -> None:
    faults = {(i, j): "crashed" for i in (1, 2) for j in (1, 2)}
    with pytest.raises(CalibrationError, match="no thread setting could be measured"):
        run(faults=faults)


def test_unmeasured_settings_are_noted() -> None:
    result, _, _, _ = run(cpus=256, quota=None, budget=40.0)
    assert any(note.startswith("not measured for lack of budget") for note in result.notes)


def test_savedmodel_and_keras_paths_are_described_without_a_child() -> None:
    profile = node(2, quota=1.0)
    # the same rule as the child's loader: Keras 3 loads .keras and .h5, in any case
    paths = (
        ("/models/resnet", "savedmodel"),
        ("/models/m.keras", "keras"),
        ("/models/m.h5", "keras"),
        ("/models/M.KERAS", "keras"),
    )
    for path, kind in paths:
        clock = FakeClock()
        fake = FakeTrials(clock=clock, usable=1.0, affinity=2)
        options = CalibrationOptions(model_path=path, budget_s=40.0)
        result = sweep(options, profile, trial_fn=fake, clock=clock)
        assert result.subject.model_format == kind
        assert result.subject.path == path


def test_default_best_is_kept_and_spelled_out() -> None:
    result, _, _, lines = run(cpus=2, quota=None, baseline_factor=0.3)
    assert result.kept_default
    assert result.counts == (2, 2)
    assert result.chosen == result.baseline
    assert result.gain == 1.0
    assert any("keeps TF's default" in note for note in result.notes)
    assert "the advice is TF's default" in lines[-1]


def test_interruption_terminates_every_child_and_propagates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the real runner wiring (its functions replaced: no TF), SIGTERM mid-sweep has the
    launcher kill what it started, once, on the way out."""
    from advisor.errors import InterruptedRunError
    from advisor.models import SubjectInfo
    from advisor.trials import runner
    from advisor.trials.launch import Launcher

    clock = FakeClock()
    fake = FakeTrials(clock=clock, usable=1.0, affinity=2)
    terminated: list[bool] = []

    def interrupted_on_third(
        spec: TrialSpec, subject: object, *, deadline_s: float, **_launcher: object
    ) -> TrialResult:
        if len(fake.calls) == 2:
            raise InterruptedRunError.by_signal("SIGTERM")
        return fake(spec, deadline_s)

    builtin = SubjectInfo(model_format="builtin")
    monkeypatch.setattr(runner, "inspect_subject", lambda subject, **_: builtin)
    monkeypatch.setattr(runner, "run_trial", interrupted_on_third)
    terminate = Launcher.terminate

    def recorded(launcher: Launcher) -> None:
        terminated.append(True)
        terminate(launcher)

    monkeypatch.setattr(Launcher, "terminate", recorded)
    with pytest.raises(InterruptedRunError):
        sweep(
            CalibrationOptions(budget_s=60.0, trial_mode="spawn"), node(2, quota=1.0), clock=clock
        )
    assert terminated == [True]
    assert len(fake.calls) == 2


def test_model_error_from_inspection_comes_before_any_trial(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from advisor.errors import ModelError
    from advisor.trials import runner

    calls: list[object] = []

    def broken(subject: object, timeout_s: float, **_launcher: object) -> None:
        raise ModelError("/m: not a SavedModel directory (no saved_model.pb in it)")

    model = tmp_path / "m"
    (model / "variables").mkdir(parents=True)
    (model / "saved_model.pb").write_bytes(b"not a protobuf")
    monkeypatch.setattr(runner, "inspect_subject", broken)
    monkeypatch.setattr(runner, "run_trial", lambda *a, **k: calls.append(a))
    with pytest.raises(ModelError, match="not a SavedModel"):
        sweep(
            CalibrationOptions(model_path=str(model), budget_s=60.0, trial_mode="spawn"),
            node(2),
            clock=FakeClock(),
        )
    assert calls == []


def test_a_slow_loading_model_gets_deadlines_sized_from_its_inspection(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Inspection took 20 s (a big model): the baseline must not be killed at a small-model
    deadline before it has even loaded."""
    from advisor.models import SubjectInfo
    from advisor.trials import runner

    clock = FakeClock()
    fake = FakeTrials(clock=clock, usable=1.0, affinity=2, overhead_s=20.0)

    def slow_inspect(subject: object, timeout_s: float, **_launcher: object) -> SubjectInfo:
        clock.advance(20.0)
        return SubjectInfo(model_format="savedmodel", path="/big")

    def trial(
        spec: TrialSpec, subject: object, *, deadline_s: float, **_launcher: object
    ) -> TrialResult:
        return fake(spec, deadline_s)

    big = tmp_path / "big"
    big.mkdir()
    (big / "saved_model.pb").write_bytes(b"a big model")
    monkeypatch.setattr(runner, "inspect_subject", slow_inspect)
    monkeypatch.setattr(runner, "run_trial", trial)
    result = sweep(
        CalibrationOptions(model_path=str(big), budget_s=150.0, trial_mode="spawn"),
        node(2, quota=1.0),
        clock=clock,
    )
    first_spec, first_deadline, _ = fake.calls[0]
    assert first_spec.setting.is_default
    assert first_deadline >= 20.0 + first_spec.warmup_s + first_spec.measure_s
    assert result.trials[0].status == "ok"
    assert clock.monotonic() - 1000.0 <= 150.0
