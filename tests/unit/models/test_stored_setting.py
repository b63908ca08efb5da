"""A ThreadSetting in every stored shape: the models hold the setting, the JSON keeps its keys."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from advisor.models import (
    Incumbent,
    IncumbentOutcome,
    NearBest,
    SettingStats,
    ThreadSetting,
    TrialResult,
)
from advisor.models.recommendation import TrialSummary
from advisor.models.stored_setting import FlatSetting, MeasuredSetting

DEFAULT = ThreadSetting.TF_DEFAULT

#: (model, what older results and advice hold, the setting read from it)
STORED: list[tuple[type[FlatSetting | MeasuredSetting], dict[str, Any], ThreadSetting]] = [
    (
        TrialResult,
        {"intra_op_threads": 2, "inter_op_threads": 1, "status": "ok"},
        ThreadSetting(2, 1),
    ),
    (TrialResult, {"intra_op_threads": None, "inter_op_threads": None, "status": "ok"}, DEFAULT),
    (TrialResult, {"status": "failed", "reason": "x"}, DEFAULT),
    (SettingStats, {"intra": 3, "inter": 2, "verdict": "raced"}, ThreadSetting(3, 2)),
    (SettingStats, {"intra": None, "inter": None, "verdict": "baseline"}, DEFAULT),
    (TrialSummary, {"intra": None, "inter": None, "round": 0, "status": "ok"}, DEFAULT),
    (NearBest, {"intra": 4, "inter": 4, "default": True, "windows": 3}, DEFAULT),
    (NearBest, {"intra": 2, "inter": 1, "default": False, "windows": 3}, ThreadSetting(2, 1)),
    (
        IncumbentOutcome,
        {"intra": 2, "inter": 2, "default": True, "source": "s", "kept": True, "reason": "r"},
        DEFAULT,
    ),
]


@pytest.mark.parametrize(("model", "stored", "setting"), STORED)
def test_the_stored_keys_read_back_as_a_setting_and_are_written_as_they_were(
    model: type[FlatSetting | MeasuredSetting], stored: dict[str, Any], setting: ThreadSetting
) -> None:
    read = model.model_validate_json(json.dumps(stored))
    assert read.setting == setting
    written = read.model_dump(mode="json")
    assert {k: written[k] for k in stored} == stored
    assert model.model_validate_json(read.model_dump_json()) == read


def test_the_stored_keys_come_first_in_the_order_they_always_had() -> None:
    trial = TrialResult(setting=ThreadSetting(2, 1), status="ok", p99_ms=1.0)
    assert list(trial.model_dump())[:4] == [
        "intra_op_threads",
        "inter_op_threads",
        "round",
        "status",
    ]
    assert TrialResult.stored_keys()[:3] == ("intra_op_threads", "inter_op_threads", "round")
    near = NearBest(**NearBest.measured_as(DEFAULT, 4), windows=2)
    assert list(near.model_dump())[:4] == ["intra", "inter", "default", "p99_ms"]
    assert (near.counts, near.setting) == ((4, 4), DEFAULT)


def test_none_left_out_leaves_out_the_keys_of_tf_default() -> None:
    summary = TrialSummary(setting=DEFAULT, status="ok")
    assert "intra" not in summary.model_dump(mode="json", exclude_none=True)


@pytest.mark.parametrize(
    ("model", "stored"),
    [
        (TrialResult, {"intra_op_threads": 2, "status": "ok"}),  # one pool set
        (TrialResult, {"intra_op_threads": 0, "inter_op_threads": 1, "status": "ok"}),
        (
            TrialResult,
            {"intra_op_threads": 2, "inter_op_threads": 1, "setting": {}, "status": "ok"},
        ),
        (SettingStats, {"intra": 5000, "inter": 1, "verdict": "raced"}),
        (NearBest, {"intra": 2, "default": True}),  # the counts must be spelled out
        (NearBest, {"intra": 2, "inter": 1, "default": "yes"}),
        (IncumbentOutcome, {"intra": 2, "inter": 2, "source": "s", "kept": True, "reason": "r"}),
    ],
)
def test_what_the_stored_keys_never_held_is_refused(
    model: type[BaseModel], stored: dict[str, Any]
) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(stored)


def test_a_measured_setting_runs_as_itself_or_as_tf_picks() -> None:
    with pytest.raises(ValidationError, match="cannot have run as"):
        NearBest(setting=ThreadSetting(2, 1), runs=ThreadSetting(4, 4))
    with pytest.raises(ValidationError, match="spelled out"):
        NearBest(setting=DEFAULT, runs=DEFAULT)


def test_a_label_names_its_setting() -> None:
    for setting in (DEFAULT, ThreadSetting(2, 1), ThreadSetting(12, 3)):
        assert ThreadSetting.from_label(setting.label) == setting
    for label in ("2", "2/", "a/b", "default", "0/1"):
        with pytest.raises(ValueError):
            ThreadSetting.from_label(label)


def test_an_advice_is_spelled_out_under_its_stored_keys() -> None:
    held = Incumbent.model_validate({"intra_op_threads": 3, "inter_op_threads": 2, "source": "s"})
    assert (held.setting, held.counts) == (ThreadSetting(3, 2), (3, 2))
    assert list(held.model_dump())[:2] == ["intra_op_threads", "inter_op_threads"]
    with pytest.raises(ValidationError, match="spelled out"):
        Incumbent.model_validate({"source": "s"})
    with pytest.raises(ValidationError, match="spelled out"):
        Incumbent(setting=DEFAULT, source="s")
