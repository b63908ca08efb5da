"""advisor/models/tf_env.py: a thread setting to TensorFlow's environment variables and back, the
one mapping the advice, the env file, the trial child and the benchmark's consumers share."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.models import ADVICE_ENV_NAMES, ThreadSetting, env_setting, setting_env


def test_a_setting_gives_the_three_variables_in_the_advice_order() -> None:
    env = setting_env(ThreadSetting(3, 2))
    assert env == {
        "TF_NUM_INTRAOP_THREADS": "3",
        "TF_NUM_INTEROP_THREADS": "2",
        "OMP_NUM_THREADS": "3",
    }
    assert tuple(env) == ADVICE_ENV_NAMES


def test_tf_default_sets_no_variable() -> None:
    assert setting_env(ThreadSetting.TF_DEFAULT) == {}


@pytest.mark.parametrize("setting", [ThreadSetting(1, 1), ThreadSetting(16, 4)])
def test_the_variables_read_back_to_the_setting(setting: ThreadSetting) -> None:
    assert env_setting(setting_env(setting)) == setting


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
        env_setting(env)
