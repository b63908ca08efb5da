"""advisor/models/runtime.py and its TensorFlow instance (tf_env.py): a thread setting to a
runtime's environment variables and back, the keys an advice holds and their validation, the one
mapping the advice, the env file, the trial child, ``check`` and the benchmark's consumers share."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.models import ONEDNN, TENSORFLOW, Knob, Runtime, ThreadSetting


def test_a_setting_gives_the_three_variables_in_the_advice_order() -> None:
    env = TENSORFLOW.setting_env(ThreadSetting(3, 2))
    assert env == {
        "TF_NUM_INTRAOP_THREADS": "3",
        "TF_NUM_INTEROP_THREADS": "2",
        "OMP_NUM_THREADS": "3",
    }
    assert tuple(env) == TENSORFLOW.thread_names


def test_tf_default_sets_no_variable() -> None:
    assert TENSORFLOW.setting_env(ThreadSetting.TF_DEFAULT) == {}


@pytest.mark.parametrize("setting", [ThreadSetting(1, 1), ThreadSetting(16, 4)])
def test_the_variables_read_back_to_the_setting(setting: ThreadSetting) -> None:
    assert TENSORFLOW.env_setting(TENSORFLOW.setting_env(setting)) == setting


@pytest.mark.parametrize(
    ("env", "error"),
    [
        ({"TF_NUM_INTRAOP_THREADS": "2"}, KeyError),
        ({"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "x"}, ValueError),
        ({"TF_NUM_INTRAOP_THREADS": "0", "TF_NUM_INTEROP_THREADS": "1"}, ValueError),
        ({"TF_NUM_INTRAOP_THREADS": None, "TF_NUM_INTEROP_THREADS": "1"}, TypeError),
    ],
)
def test_variables_that_hold_no_setting_are_refused(env: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        TENSORFLOW.env_setting(env)


def test_the_advice_keys_are_the_thread_variables_and_the_onednn_switch() -> None:
    assert TENSORFLOW.advice_keys == {
        "TF_NUM_INTRAOP_THREADS",
        "TF_NUM_INTEROP_THREADS",
        "OMP_NUM_THREADS",
        "TF_ENABLE_ONEDNN_OPTS",
    }
    assert ONEDNN.name == "TF_ENABLE_ONEDNN_OPTS"


def test_without_advice_removes_every_advice_key_and_keeps_the_rest() -> None:
    env = {
        "TF_NUM_INTRAOP_THREADS": "2",
        "OMP_NUM_THREADS": "2",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PATH": "/bin",
    }
    assert TENSORFLOW.without_advice(env) == {"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/bin"}


def test_env_names_lists_a_knob_only_where_the_advice_sets_it() -> None:
    env = TENSORFLOW.setting_env(ThreadSetting(2, 1))
    assert TENSORFLOW.env_names(env) == TENSORFLOW.thread_names
    assert TENSORFLOW.env_names({**env, "TF_ENABLE_ONEDNN_OPTS": "1"})[-1] == (
        "TF_ENABLE_ONEDNN_OPTS"
    )


@pytest.mark.parametrize(
    ("env", "affinity", "problem"),
    [
        (
            {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "2"},
            2,
            None,
        ),
        (
            {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "1"},
            2,
            "env must hold exactly TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS, "
            "OMP_NUM_THREADS; missing OMP_NUM_THREADS",
        ),
        (
            {
                "TF_NUM_INTRAOP_THREADS": "2",
                "TF_NUM_INTEROP_THREADS": "1",
                "OMP_NUM_THREADS": "2",
                "MKL_NUM_THREADS": "2",
            },
            2,
            "env must hold exactly TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS, "
            "OMP_NUM_THREADS; unexpected MKL_NUM_THREADS",
        ),
        (
            {
                "TF_NUM_INTRAOP_THREADS": "2",
                "TF_NUM_INTEROP_THREADS": "1",
                "OMP_NUM_THREADS": "2",
                "TF_ENABLE_ONEDNN_OPTS": "yes",
            },
            2,
            "TF_ENABLE_ONEDNN_OPTS='yes' must be 0 or 1",
        ),
        (
            {"TF_NUM_INTRAOP_THREADS": "9", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "9"},
            4,
            "TF_NUM_INTRAOP_THREADS=9 exceeds 8, the cap for 4 affinity CPUs (max(2 x CPUs, 4))",
        ),
        (
            {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "01", "OMP_NUM_THREADS": "2"},
            4,
            "TF_NUM_INTEROP_THREADS='01' is not a positive integer",
        ),
    ],
)
def test_an_advice_env_is_checked_against_its_names_knobs_and_the_cpu_cap(
    env: dict[str, str], affinity: int, problem: str | None
) -> None:
    assert TENSORFLOW.advice_problem(env, affinity) == problem


def test_a_second_runtime_is_one_more_instance_with_its_own_names() -> None:
    # The seam: nothing TensorFlow's in the mapping itself. A made-up runtime sized by two
    # variables of its own, OpenMP following, and a switch of three values.
    other = Runtime(
        name="Other",
        intra_op="OTHER_INTRA",
        inter_op="OTHER_INTER",
        follow_intra=("OMP_NUM_THREADS", "MKL_NUM_THREADS"),
        knobs=(Knob("OTHER_FAST_MATH", ("off", "on", "auto")),),
    )
    env = other.setting_env(ThreadSetting(4, 2))
    assert env == {
        "OTHER_INTRA": "4",
        "OTHER_INTER": "2",
        "OMP_NUM_THREADS": "4",
        "MKL_NUM_THREADS": "4",
    }
    assert other.env_setting(env) == ThreadSetting(4, 2)
    assert other.advice_problem({**env, "OTHER_FAST_MATH": "auto"}, 2) is None
    assert other.advice_problem({**env, "OTHER_FAST_MATH": "2"}, 2) == (
        "OTHER_FAST_MATH='2' must be off or on or auto"
    )
    assert TENSORFLOW.advice_problem(env, 2) is not None
