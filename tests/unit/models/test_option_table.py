"""The option table is the one place a calibration option is written: the model, both commands'
flags, fleet mode's annotations and defaults, the calibration Job's ``run`` arguments and the
calibration spec all read their row. A new row fails here until it has a model field and sample
values to carry through a derived Job."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, get_args

import pytest

from advisor import keys
from advisor.cli import build_parser
from advisor.cli._sweep_flags import options_from_args
from advisor.fleet.derive import derive_job
from advisor.fleet.optin import FIELD_ANNOTATION, Defaults, read_ask
from advisor.fleet.spec import calibration_spec, label_of
from advisor.models import (
    OPTION,
    OPTIONS,
    RESTART,
    CalibrationOptions,
    job_options,
    plan_defaults,
    plan_options,
)
from advisor.models.kube import Container, PodSpec
from advisor.models.option_table import PLAN_BUDGET_S
from advisor.pipeline.plan import PlanRequest, run_args
from tests.support.fleet_workloads import SETTINGS, deployment, view

#: what a workload's annotations ask for, none of it a default: every annotated option's
#: annotation (the model's path aside, read on its own)
ASKED = {
    "objective": "slo",
    "concurrency": "4",
    "batch_size": "8",
    "p99_slo_ms": "12.5",
    "budget_s": "120.5",
    "requests": "none",
    "input_shape": "input_ids=128;attention_mask=128",
}
#: what plan passes to every Job, none of it run's default
JOB_WIDE: dict[str, Any] = {"trial_mode": "spawn", "sweep_onednn": True}
#: CalibrationOptions' fields that are no option of a command: plan's revert fills it
NOT_OPTIONS = {"rejected"}


def _subcommand(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    (subparsers,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub: argparse.ArgumentParser = subparsers.choices[name]
    return sub


def _action(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    (found,) = (a for a in parser._actions if flag in a.option_strings)
    return found


def test_every_option_is_a_model_field_with_its_rows_default_and_limits() -> None:
    fields = CalibrationOptions.model_fields
    assert set(fields) - NOT_OPTIONS == set(OPTION)
    for option in OPTIONS:
        info = fields[option.field]
        assert info.default == option.default, option.field
        assert info.description == option.description, option.field
        limits = {type(m).__name__.lower(): m for m in info.metadata}
        for name, value in option.limits:
            if name == "min_length":
                assert limits["minlen"].min_length == value
            else:
                assert getattr(limits[name], name) == value, option.field


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.field)
def test_a_flag_parses_what_the_model_holds(option: Any) -> None:
    annotation = CalibrationOptions.model_fields[option.field].annotation
    kinds = set(get_args(annotation)) or {annotation}
    expected = {
        "int": {int},
        "float": {float, type(None)},
        "switch": {bool},
        "text": {str, type(None)},
        "choice": {str},
    }[option.parse]
    assert kinds <= expected | set(get_args(annotation)), option.field
    if option.parse == "choice" and get_args(annotation):
        assert option.allowed == get_args(annotation)


@pytest.mark.parametrize("command", ["calibrate", "run"])
def test_calibrate_and_run_take_every_option_at_the_models_default(command: str) -> None:
    parser = _subcommand(command)
    for option in OPTIONS:
        action = _action(parser, option.flag)
        assert action.dest == option.dest
        assert action.default == option.default
        assert action.help == option.help_text
    assert options_from_args(parser.parse_args([])) == CalibrationOptions()


def test_plan_takes_its_options_at_its_defaults_with_plain_numbers() -> None:
    parser = _subcommand("plan")
    for option in (*plan_options("workload"), *plan_options("job")):
        action = _action(parser, option.flag)
        assert action.default == option.plan_default
        if option.parse in ("int", "float"):
            assert action.type in (int, float)  # the model's rules are check_request's
    assert plan_defaults()["budget_s"] == PLAN_BUDGET_S != OPTION["budget_s"].default
    args = parser.parse_args([])
    assert {o.field: getattr(args, o.dest) for o in plan_options("workload")} == plan_defaults()
    # the restart switches are plan's, beside the options; run's --restart names a workload
    assert _action(parser, RESTART.plan_flag).nargs == 0
    assert _action(parser, RESTART.plan_forbidden_flag).nargs == 0
    assert _action(_subcommand("run"), RESTART.run_flag).metavar == "KIND/NAME"


def test_the_defaults_hold_every_workload_option_and_refuse_others() -> None:
    assert Defaults().options == plan_defaults()
    assert Defaults(concurrency=4).options == {**plan_defaults(), "concurrency": 4}
    with pytest.raises(TypeError, match="p99_ms"):
        Defaults(p99_ms=3)
    fields = {f.name for f in dataclasses.fields(PlanRequest)}
    assert {o.field for o in plan_options("job")} <= fields


def test_every_workload_option_has_an_annotation_named_by_the_table() -> None:
    assert {o.field for o in plan_options("workload")} <= set(FIELD_ANNOTATION)
    for option in OPTIONS:
        if option.annotation is not None:
            assert FIELD_ANNOTATION[option.field] == option.annotation
            assert option.annotation.startswith(keys.PREFIX)
    # the table names the keys of their one home, which fleet's callers import
    assert FIELD_ANNOTATION["model_path"] == keys.ANN_MODEL
    assert FIELD_ANNOTATION["budget_s"] == keys.ANN_BUDGET
    assert FIELD_ANNOTATION["p99_slo_ms"] == keys.ANN_P99_MS
    assert RESTART.annotation == keys.ANN_RESTART


def test_the_samples_cover_the_table() -> None:
    annotated = {o.field for o in OPTIONS if o.annotation is not None} - {"model_path"}
    assert set(ASKED) == annotated
    assert set(JOB_WIDE) == {o.field for o in plan_options("job")}
    assert {o.field for o in job_options()} == {o.field for o in plan_options("workload")}


def test_a_workloads_options_reach_its_jobs_run_and_its_spec() -> None:
    """Annotations and plan's Job-wide flags, through a derived Job's arguments, parsed by the
    real ``run``: the options it measures with are the ones asked for."""
    annotations = {FIELD_ANNOTATION[field]: value for field, value in ASKED.items()}
    workload = deployment(annotations=annotations)
    ask = read_ask(workload["metadata"]["annotations"])
    extra = run_args(PlanRequest(**JOB_WIDE))
    settings = dataclasses.replace(SETTINGS, extra_args=extra)
    job = derive_job(
        view(workload, "Deployment"), ask, configmap="resnet-advice", settings=settings
    )
    (advisor,) = job.manifest["spec"]["template"]["spec"]["containers"]
    parsed = options_from_args(build_parser().parse_args(advisor["args"]))
    expected = ask.options.model_copy(update={**JOB_WIDE, "model_path": parsed.model_path})
    assert parsed == expected
    # every option plan takes is a field of the calibration spec, under its key, named by its
    # label when it changes
    spec = calibration_spec(
        pod=PodSpec(),
        container=Container(),
        ask=ask,
        model_path="/m",
        model_volume=None,
        extra_args=extra,
    )
    for option in (*plan_options("workload"), *plan_options("job")):
        assert spec[option.key] == getattr(expected, option.field)
        assert option.spec_label and label_of(option.key) == option.spec_label


def test_a_request_file_inside_the_model_reaches_the_job_where_its_copy_has_it() -> None:
    """The requests annotation names a file relative to the model directory: the Job's run reads
    it inside the model's copy, and the spec keeps it as annotated (the model path is there)."""
    rel = "assets.extra/requests.jsonl"
    workload = deployment(annotations={FIELD_ANNOTATION["requests"]: rel})
    ask = read_ask(workload["metadata"]["annotations"])
    assert ask.options.requests == rel
    job = derive_job(
        view(workload, "Deployment"), ask, configmap="resnet-advice", settings=SETTINGS
    )
    (advisor,) = job.manifest["spec"]["template"]["spec"]["containers"]
    parsed = options_from_args(build_parser().parse_args(advisor["args"]))
    assert parsed.model_path is not None
    assert parsed.requests == f"{parsed.model_path}/{rel}"
    spec = calibration_spec(
        pod=PodSpec(),
        container=Container(),
        ask=ask,
        model_path="/m",
        model_volume=None,
        extra_args=(),
    )
    assert spec["requests"] == rel


@pytest.mark.parametrize("value", ["/models/r.json", "../r.json", "a/../../r.json", "."])
def test_a_request_file_outside_the_model_is_refused_naming_the_annotation(value: str) -> None:
    annotations = deployment(annotations={FIELD_ANNOTATION["requests"]: value})["metadata"]
    with pytest.raises(ValueError, match=f"annotation {keys.ANN_REQUESTS}="):
        read_ask(annotations["annotations"])
    # plan's own default obeys the same rule, named as its flag
    with pytest.raises(ValueError, match="plan's --requests="):
        read_ask(deployment()["metadata"]["annotations"], Defaults(requests=value))


def test_job_wide_options_at_runs_default_add_no_argument() -> None:
    assert run_args(PlanRequest()) == ()
    assert run_args(PlanRequest(**JOB_WIDE)) == ("--trial-mode=spawn", "--sweep-onednn")


def test_requests_need_a_model_and_refuse_a_batch_size_beside_them() -> None:
    """Each request keeps its own batch; ``none`` (synthesise) takes a batch size as ever."""
    with pytest.raises(ValueError, match="requests replays a model's requests: it needs model"):
        CalibrationOptions(requests="r.json")
    with pytest.raises(ValueError, match="batch_size cannot be given with requests"):
        CalibrationOptions(model_path="/m", requests="r.json", batch_size=4)
    with pytest.raises(ValueError, match="input_shape cannot be given with requests"):
        CalibrationOptions(model_path="/m", requests="r.json", input_shape="x=3")
    assert CalibrationOptions(model_path="/m", requests="none", input_shape="x=3").input_shape
    assert CalibrationOptions(model_path="/m", requests="none", batch_size=4).requests_file is None
    assert CalibrationOptions(requests="none").requests_file is None
    assert CalibrationOptions(model_path="/m", requests="r.json").requests_file == "r.json"
