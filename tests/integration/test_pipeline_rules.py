"""The pipeline owns the rules, the CLI only spells them: a Python caller of the pipeline gets the
budget floor, the SLO rule and every check before the sweep that the command line gets; the
``calibrate`` and ``cleanup`` commands are pipeline functions too; progress reaches a caller as
events whose numbers the CLI draws, and the lines it prints stay what they were.
"""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from pydantic import ValidationError

from advisor import errors
from advisor.calibrate.spec import SubjectSpec
from advisor.cli import build_parser, main
from advisor.cli._args import flag
from advisor.cli._progress import bar_line
from advisor.models import (
    MIN_BUDGET_S,
    CalibrationOptions,
    CalibrationResult,
    NodeProfile,
    Progress,
    TrialMode,
)
from advisor.objectives import OBJECTIVES
from advisor.pipeline import (
    CalibrateRequest,
    Instruments,
    RunRequest,
    calibrate_only,
    check_run_request,
    cleanup,
    run_advisor,
)
from advisor.pipeline.sweep import sweep
from advisor.recommend import render_configmap
from advisor.trials.launch import Launcher, TrialPrograms
from testkit.fakeapi.rbac import Rule
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer
from tests.support.search_fakes import FakeClock, FakeTrials, tripwire
from tests.support.search_fakes import node as simulated_node

NODE = simulated_node(4, quota=2.0)
NS = "ml"


def cost_model(seen: list[dict[str, Any]] | None = None) -> Instruments:
    """NODE and the real sweep over the cost model (no TF); ``seen`` gets each sweep's keywords."""

    def simulated_sweep(
        options: CalibrationOptions, node: NodeProfile, **kwargs: Any
    ) -> CalibrationResult:
        if seen is not None:
            seen.append(kwargs)
        clock = FakeClock()
        trials = FakeTrials(clock=clock, usable=node.effective_cpus, affinity=4)
        return sweep(options, node, trial_fn=trials, clock=clock, **kwargs)

    return Instruments(probe=lambda _root: NODE, sweep=simulated_sweep)


def rule_of(exc: ValidationError) -> errors.AdvisorError:
    """The model's own rule behind a ValidationError (what the CLI prints)."""
    cause = exc.errors()[0]["ctx"]["error"]
    assert isinstance(cause, errors.InvalidOptionsError)
    return cause


def cli_error(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv), instruments=Instruments(sweep=tripwire("the sweep started")))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return code, lines[0]


# --------------------------------------------------------------------------------------------------
# the rules are the model's: a Python caller meets them, the CLI spells them


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"budget_s": MIN_BUDGET_S - 0.5}, "budget_s 24.5 s is too small to measure anything"),
        ({"objective": "slo"}, "objective slo needs p99_slo_ms"),
        ({"p99_slo_ms": 20.0}, "p99_slo_ms only applies to objective slo"),
        ({"model_path": "  "}, "model_path must not be empty"),
    ],
)
def test_a_python_caller_meets_the_rules_the_cli_has(options: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says) as caught:
        CalibrationOptions(**options)
    rule = rule_of(caught.value)
    assert str(rule).startswith(says)
    assert rule.exit_code == errors.UsageError.exit_code
    with pytest.raises(ValidationError):  # so no RunRequest or CalibrateRequest can carry them
        RunRequest(options=CalibrationOptions(**options))


def test_the_floor_and_the_slo_bound_let_good_options_through() -> None:
    assert CalibrationOptions(budget_s=MIN_BUDGET_S).budget_s == MIN_BUDGET_S
    slo = CalibrationOptions(objective="slo", p99_slo_ms=12.5)
    assert (slo.objective, slo.p99_slo_ms) == ("slo", 12.5)


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        (["--budget", "10"], {"budget_s": 10.0}),
        (["--objective", "slo"], {"objective": "slo"}),
        (["--p99-ms", "20"], {"p99_slo_ms": 20.0}),
        (["--model", " "], {"model_path": " "}),
    ],
)
@pytest.mark.parametrize("command", ["calibrate", "run"])
def test_the_cli_prints_the_models_rule_with_its_flags(
    command: str, argv: list[str], options: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValidationError) as caught:
        CalibrationOptions(**options)
    code, line = cli_error(capsys, command, *argv)
    assert code == errors.UsageError.exit_code
    assert line == f"tf-thread-advisor: error: {rule_of(caught.value).spelled(flag)}"
    assert "--" in line and "_" not in line.split("error: ", 1)[1]  # flags, not field names


def test_the_flags_defaults_and_choices_are_the_models() -> None:
    parser = build_parser()
    defaults = CalibrationOptions()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("calibrate", "run"):
        args = parser.parse_args([command])
        assert (args.model, args.signature, args.batch_size, args.concurrency) == (
            defaults.model_path,
            defaults.signature,
            defaults.batch_size,
            defaults.concurrency,
        )
        assert (args.objective, args.p99_ms, args.budget) == (
            defaults.objective,
            defaults.p99_slo_ms,
            defaults.budget_s,
        )
        assert (args.trial_mode, args.sweep_onednn) == (defaults.trial_mode, defaults.sweep_onednn)
        choices = {a.dest: a.choices for a in commands.choices[command]._actions}
        assert tuple(choices["objective"]) == tuple(OBJECTIVES)
        assert tuple(choices["trial_mode"]) == get_args(TrialMode)
    assert parser.parse_args(["run"]).cluster_timeout == RunRequest().cluster_timeout_s


# --------------------------------------------------------------------------------------------------
# the layers below name options, not flags


def test_the_pipeline_names_options_and_the_cli_their_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(errors.UsageError) as caught:
        check_run_request(RunRequest(namespace=NS))
    message = str(caught.value)
    assert message.startswith("namespace needs configmap: it is the ConfigMap's namespace")
    assert "--" not in message
    code, line = cli_error(capsys, "run", "--namespace", NS)
    assert code == errors.UsageError.exit_code
    assert line == f"tf-thread-advisor: error: {caught.value.spelled(flag)}"
    assert "--namespace needs --configmap" in line


def test_a_trial_program_of_the_callers_is_spawned_never_forked() -> None:
    fake = TrialPrograms.spawned(["/bin/false"])
    assert fake.server is None and TrialPrograms().server is not None
    forced = Launcher(SubjectSpec(None), "fork", programs=fake)
    with pytest.raises(errors.CalibrationError) as caught:
        forced.launch(1.0)  # refused before any process starts
    assert str(caught.value) == "trial_mode fork: the trial program cannot be forked"
    auto = Launcher(SubjectSpec(None), "auto", programs=fake)
    auto.launch(1.0)
    assert auto.used == "spawn" and auto.state() is None


# --------------------------------------------------------------------------------------------------
# calibrate and cleanup through the pipeline


def test_calibrate_only_measures_reports_and_races_the_named_incumbent(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    incumbent = tmp_path / "in-force.yaml"
    incumbent.write_text(yaml.safe_dump(render_configmap(recommendation(2, 1), "tf-advice", NS)))
    report = tmp_path / "report.html"
    request = CalibrateRequest(
        options=CalibrationOptions(budget_s=60.0), incumbent=str(incumbent), report=report
    )
    result = calibrate_only(request, instruments=cost_model(seen))
    assert result.node == NODE and result.budget_s == 60.0
    assert len(seen) == 1 and "incumbent" in seen[0]  # the stored advice was read and judged
    assert report.read_text().startswith("<!DOCTYPE html>")
    chosen = f"intra {result.setting.intra} inter {result.setting.inter}"
    assert chosen in report.read_text()


def test_calibrate_only_refuses_what_it_cannot_finish_before_probing(tmp_path: Path) -> None:
    nothing = Instruments(probe=tripwire("probed"), sweep=tripwire("measured"))
    with pytest.raises(errors.UsageError, match=r"^report .*: is a directory"):
        calibrate_only(CalibrateRequest(report=tmp_path), instruments=nothing)
    missing = CalibrateRequest(incumbent=str(tmp_path / "gone.yaml"))
    with pytest.raises(errors.UsageError, match=r"^incumbent .*gone\.yaml: cannot read it"):
        calibrate_only(missing, instruments=Instruments(probe=lambda _r: NODE, sweep=nothing.sweep))


def test_cleanup_through_the_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    names = ("tf-advice", "someone-elses", "never-written")
    rules = [Rule(("",), ("configmaps",), ("get", "delete"), names)]
    with FakeApiServer(tmp_path, rules=rules) as api:
        api.put(render_configmap(recommendation(2, 1), "tf-advice", NS))
        foreign = {"apiVersion": "v1", "kind": "ConfigMap", "data": {}}
        api.put({**foreign, "metadata": {"name": "someone-elses", "namespace": NS}})
        outcomes = cleanup(names, NS, kubeconfig=api.kubeconfig)
        assert [o.action for o in outcomes] == ["deleted", "kept", "absent"]
        assert api.get(NS, "tf-advice") is None and api.get(NS, "someone-elses") is not None
        api.requests.clear()
        with pytest.raises(errors.UsageError, match=r"^configmap 'Bad_Name'"):
            cleanup(["Bad_Name"], NS, kubeconfig=api.kubeconfig)
        assert api.requests == []  # refused before any call


# --------------------------------------------------------------------------------------------------
# progress: events with numbers, drawn by the CLI; the lines stay what they were

#: the progress line's own format (``[ 12/45 s] text``): the bar drawn from an event's numbers
#: must read the same
_OLD_PREFIX = re.compile(r"^\[\s*(\d+)/(\d+) s\]\s*")


def old_bar_line(line: str) -> str:
    match = _OLD_PREFIX.match(line)
    if match is None:
        return line
    elapsed, budget = int(match.group(1)), int(match.group(2))
    filled = min(20, round(20 * elapsed / budget)) if budget > 0 else 20
    return f"[{'#' * filled}{'.' * (20 - filled)}] {elapsed:>3}/{budget} s  {line[match.end() :]}"


def sweep_events(budget_s: float = 60.0) -> list[Progress]:
    events: list[Progress] = []
    cost_model().sweep(CalibrationOptions(budget_s=budget_s), NODE, progress=events.append)
    return events


def test_progress_reaches_the_callback_with_elapsed_budget_and_text() -> None:
    events = sweep_events()
    timed = [e for e in events if e.elapsed_s is not None]
    assert timed and all(e.budget_s == 60.0 for e in timed)
    elapsed = [e.elapsed_s for e in timed]
    assert elapsed == sorted(elapsed) and elapsed[0] >= 0 and elapsed[-1] <= 60.0
    assert any(e.text.startswith("round 0 trial 1/") for e in timed)
    untimed = [e for e in events if e.elapsed_s is None]  # the plan and the advice
    assert untimed[-1].text.startswith("advice: intra=")
    assert all(e.line == e.text for e in untimed)


def test_the_bar_is_the_one_the_old_parser_drew_from_the_line() -> None:
    for event in sweep_events():
        assert bar_line(event) == old_bar_line(event.line)


def test_the_cli_logs_each_event_as_the_line_it_always_was(
    capsys: pytest.CaptureFixture[str],
) -> None:
    expected = [e.line for e in sweep_events()]
    assert main(["calibrate", "--budget", "60", "--format", "json"], instruments=cost_model()) == 0
    logged = [
        line.split(" INFO ", 1)[1]
        for line in capsys.readouterr().err.splitlines()
        if " INFO " in line
    ]
    assert logged[: len(expected)] == expected


def test_a_run_logs_options_the_cli_spells_as_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    output = tmp_path / "advice.yaml"
    assert main(["run", "--output", str(output)], instruments=cost_model()) == 0
    assert f"INFO --output written to {output}" in capsys.readouterr().err
    # the CLI's handler stays on the "advisor" logger; a Python caller's own handler beside it
    # still reads the option's own name
    advisor_log = logging.getLogger("advisor")
    advisor_log.addHandler(caplog.handler)
    try:
        run_advisor(RunRequest(output=str(output)), instruments=cost_model())
    finally:
        advisor_log.removeHandler(caplog.handler)
    assert f"output written to {output}" in caplog.messages
