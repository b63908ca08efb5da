"""Workloads ``plan`` lists but must not calibrate: the opt-in label's value, and a container
that would never use what is measured."""

from __future__ import annotations

import pytest

from advisor.keys import LABEL_CALIBRATE
from advisor.render.plan_reasons import plan_reason_text
from tests.unit.fleet.test_decide import deployment, measured_for, only, plan


def test_false_is_not_planned_and_true_is() -> None:
    out = deployment("out", limits={"cpu": "1"})
    out["metadata"]["labels"][LABEL_CALIBRATE] = "false"
    planned = plan([out, deployment("in", limits={"cpu": "1"})])
    assert [str(p.workload) for p in planned] == ["deployment/in"]


@pytest.mark.parametrize("value", ["True", "yes", ""])
def test_another_value_of_the_label_is_skipped_naming_it(value: str) -> None:
    web = deployment(limits={"cpu": "1"})
    web["metadata"]["labels"][LABEL_CALIBRATE] = value
    one = only(plan([web]))
    assert one.decision == "skipped"
    assert (
        plan_reason_text(one.reason)
        == f'label {LABEL_CALIBRATE}={value!r} must be "true" or "false"'
    )
    assert one.job is None


@pytest.mark.parametrize(
    ("words", "flag"),
    [
        (["--port=8500", "--tensorflow_intra_op_parallelism=2"], "intra"),
        (["--tensorflow_inter_op_parallelism=4"], "inter"),
    ],
)
def test_tf_servings_own_thread_flags_are_skipped_as_overridden(
    words: list[str], flag: str
) -> None:
    web = deployment(limits={"cpu": "1"})
    stored = measured_for(web)
    web["spec"]["template"]["spec"]["containers"][0]["args"] = words
    one = only(plan([web], [stored]))
    assert one.decision == "skipped"
    assert plan_reason_text(one.reason).startswith(
        "the advice would be overridden: its command line sets"
    )
    assert f"--tensorflow_{flag}_op_parallelism=" in plan_reason_text(one.reason)


def test_thread_flags_read_from_the_advice_or_left_at_0_are_used() -> None:
    web = deployment(limits={"cpu": "1"})
    stored = measured_for(web)
    web["spec"]["template"]["spec"]["containers"][0]["args"] = [
        "--tensorflow_intra_op_parallelism=$(TF_NUM_INTRAOP_THREADS)",
        "--tensorflow_inter_op_parallelism=0",
    ]
    assert only(plan([web], [stored])).decision == "fits"


def test_an_env_of_its_own_is_skipped_as_overridden_too() -> None:
    web = deployment(limits={"cpu": "1"})
    web["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "TF_NUM_INTRAOP_THREADS", "value": "8"}
    ]
    one = only(plan([web]))
    assert one.decision == "skipped"
    assert "its env sets TF_NUM_INTRAOP_THREADS itself" in plan_reason_text(one.reason)
