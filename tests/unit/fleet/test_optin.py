"""The opt-in: a workload's label and annotations read into a CalibrationAsk, over plan's defaults,
and every annotation that cannot be calibrated refused with its name."""

from __future__ import annotations

import pytest

from advisor.fleet.optin import Defaults, OptInError, opted_in, read_ask
from advisor.keys import (
    ANN_BATCH_SIZE,
    ANN_BUDGET,
    ANN_CONCURRENCY,
    ANN_CONFIGMAP,
    ANN_CONTAINER,
    ANN_MODEL,
    ANN_OBJECTIVE,
    ANN_P99_MS,
    ANN_RESTART,
    LABEL_CALIBRATE,
    OPT_IN_SELECTOR,
)

MODEL = "/models/resnet/1"


def _ask_of(**annotations: str) -> dict[str, str]:
    return {ANN_MODEL: MODEL, **annotations}


def test_the_selector_lists_every_value_and_only_true_or_false_is_read() -> None:
    # the list selects the key: a mistyped value is listed, so it can be named
    assert OPT_IN_SELECTOR == LABEL_CALIBRATE
    assert opted_in({LABEL_CALIBRATE: "true"})
    assert not opted_in({LABEL_CALIBRATE: "false"})
    for value in ("True", "TRUE", "yes", "1", ""):
        with pytest.raises(OptInError, match=rf'label {LABEL_CALIBRATE}=.* must be "true" or'):
            opted_in({LABEL_CALIBRATE: value})
    assert not opted_in({"app": "x"})
    assert not opted_in({})


def test_the_model_alone_takes_every_default() -> None:
    ask = read_ask({ANN_MODEL: MODEL})
    assert ask.model_path == MODEL
    assert ask.options.model_path == MODEL
    assert ask.options.objective == "latency"
    assert ask.options.concurrency == 1
    assert ask.options.batch_size == 1
    assert ask.options.budget_s == 300.0
    assert ask.options.p99_slo_ms is None
    assert ask.container is None
    assert ask.configmap is None
    assert ask.restart is False


def test_plans_flags_are_the_defaults() -> None:
    defaults = Defaults(
        objective="throughput", concurrency=8, batch_size=4, budget_s=120, restart=True
    )
    ask = read_ask({ANN_MODEL: MODEL}, defaults)
    assert ask.options.objective == "throughput"
    assert (ask.options.concurrency, ask.options.batch_size) == (8, 4)
    assert ask.options.budget_s == 120.0
    assert ask.restart is True


def test_every_annotation_overrides_its_default() -> None:
    defaults = Defaults(objective="throughput", concurrency=8, batch_size=4, budget_s=120)
    ask = read_ask(
        _ask_of(
            **{
                ANN_OBJECTIVE: "slo",
                ANN_P99_MS: "25.5",
                ANN_CONCURRENCY: "3",
                ANN_BATCH_SIZE: "16",
                ANN_BUDGET: "900",
                ANN_CONTAINER: "server",
                ANN_CONFIGMAP: "resnet-advice",
                ANN_RESTART: "true",
            }
        ),
        defaults,
    )
    assert ask.options.objective == "slo"
    assert ask.options.p99_slo_ms == 25.5
    assert ask.options.concurrency == 3
    assert ask.options.batch_size == 16
    assert ask.options.budget_s == 900.0
    assert ask.container == "server"
    assert ask.configmap == "resnet-advice"
    assert ask.restart is True


def test_blank_annotations_are_absent() -> None:
    ask = read_ask(_ask_of(**{ANN_CONCURRENCY: "  ", ANN_CONTAINER: ""}), Defaults(concurrency=5))
    assert ask.options.concurrency == 5
    assert ask.container is None


@pytest.mark.parametrize("text", ["true", "True", "TRUE"])
def test_restart_true_in_any_case(text: str) -> None:
    assert read_ask(_ask_of(**{ANN_RESTART: text})).restart is True


def test_restart_false_overrides_a_default_true() -> None:
    assert read_ask(_ask_of(**{ANN_RESTART: "false"}), Defaults(restart=True)).restart is False


def test_slo_takes_its_bound_from_the_annotation() -> None:
    ask = read_ask(_ask_of(**{ANN_OBJECTIVE: "slo", ANN_P99_MS: "40"}))
    assert ask.options.p99_slo_ms == 40.0


def test_slo_takes_plans_default_bound() -> None:
    ask = read_ask(_ask_of(**{ANN_OBJECTIVE: "slo"}), Defaults(objective="slo", p99_slo_ms=30))
    assert ask.options.p99_slo_ms == 30.0


def test_a_default_bound_is_not_forced_on_another_objective() -> None:
    """plan --objective slo --p99-ms 30: a workload asking for latency gets no bound, not a
    refusal."""
    ask = read_ask(_ask_of(**{ANN_OBJECTIVE: "latency"}), Defaults(objective="slo", p99_slo_ms=30))
    assert ask.options.objective == "latency"
    assert ask.options.p99_slo_ms is None


def test_slo_without_a_bound_names_both_annotations() -> None:
    with pytest.raises(OptInError) as caught:
        read_ask(_ask_of(**{ANN_OBJECTIVE: "slo"}))
    message = str(caught.value)
    assert ANN_OBJECTIVE in message
    assert ANN_P99_MS in message
    assert "p99_slo_ms" not in message  # the Python name means nothing on a workload


def test_a_bound_for_another_objective_names_it() -> None:
    with pytest.raises(OptInError) as caught:
        read_ask(_ask_of(**{ANN_OBJECTIVE: "throughput", ANN_P99_MS: "50"}))
    assert str(caught.value).startswith(f"annotation {ANN_P99_MS} ")


@pytest.mark.parametrize(
    ("annotations", "named"),
    [
        ({ANN_OBJECTIVE: "fastest"}, ANN_OBJECTIVE),
        ({ANN_CONCURRENCY: "many"}, ANN_CONCURRENCY),
        ({ANN_CONCURRENCY: "1.5"}, ANN_CONCURRENCY),
        ({ANN_CONCURRENCY: "0"}, ANN_CONCURRENCY),
        ({ANN_CONCURRENCY: "1000"}, ANN_CONCURRENCY),
        ({ANN_BATCH_SIZE: "0"}, ANN_BATCH_SIZE),
        ({ANN_BATCH_SIZE: "-2"}, ANN_BATCH_SIZE),
        ({ANN_BUDGET: "0"}, ANN_BUDGET),
        ({ANN_BUDGET: "10"}, ANN_BUDGET),
        ({ANN_BUDGET: "5m"}, ANN_BUDGET),
        ({ANN_BUDGET: "100000"}, ANN_BUDGET),
        ({ANN_OBJECTIVE: "slo", ANN_P99_MS: "0"}, ANN_P99_MS),
        ({ANN_OBJECTIVE: "slo", ANN_P99_MS: "fast"}, ANN_P99_MS),
        ({ANN_CONTAINER: "Server_1"}, ANN_CONTAINER),
        ({ANN_CONFIGMAP: "a..b"}, ANN_CONFIGMAP),
        ({ANN_CONFIGMAP: "x" * 254}, ANN_CONFIGMAP),
        ({ANN_RESTART: "yes"}, ANN_RESTART),
        ({ANN_MODEL: "models/resnet"}, ANN_MODEL),
        ({ANN_MODEL: "/models/../etc"}, ANN_MODEL),
    ],
)
def test_each_bad_annotation_is_refused_by_name(annotations: dict[str, str], named: str) -> None:
    with pytest.raises(OptInError) as caught:
        read_ask(_ask_of(**annotations))
    message = str(caught.value)
    assert message.startswith(f"annotation {named}"), message
    assert "\n" not in message


def test_a_zero_is_refused_not_taken_for_absent() -> None:
    """0 is a value the options refuse, not a missing annotation the default fills in."""
    with pytest.raises(OptInError, match=ANN_CONCURRENCY):
        read_ask(_ask_of(**{ANN_CONCURRENCY: "0"}), Defaults(concurrency=4))


def test_without_the_model_annotation_the_container_names_it_later() -> None:
    """A TF Serving container names its model itself (fleet.tf_serving, read where the Job is
    derived); any other container is skipped there, for want of the annotation."""
    assert read_ask({ANN_OBJECTIVE: "latency"}).model_path is None


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "Infinity"])
@pytest.mark.parametrize("annotation", [ANN_BUDGET, ANN_P99_MS])
def test_a_number_that_is_not_finite_is_named_as_such(annotation: str, text: str) -> None:
    annotations = {annotation: text}
    if annotation == ANN_P99_MS:
        annotations[ANN_OBJECTIVE] = "slo"
    with pytest.raises(OptInError) as caught:
        read_ask(_ask_of(**annotations))
    assert str(caught.value) == f"annotation {annotation}={text!r} must be a finite number"


def test_a_restart_the_planner_may_not_make_is_refused_naming_the_annotation() -> None:
    forbidden = Defaults(restart_forbidden=True)
    with pytest.raises(OptInError, match=r'restart="true" asks for a restart.*--restart-forbidden'):
        read_ask(_ask_of(**{ANN_RESTART: "true"}), forbidden)
    # no restart asked, or one declined: nothing to refuse
    assert read_ask(_ask_of(), forbidden).restart is False
    assert read_ask(_ask_of(**{ANN_RESTART: "false"}), forbidden).restart is False
