"""``--input-shape``: its syntax, its canonical spelling and how its errors read, for the flag,
``plan``'s default and a workload's annotation alike (the model's names and ranks are the trial
child's: tests/system/test_trials_synthesis.py)."""

from __future__ import annotations

import pytest

from advisor.cli import build_parser
from advisor.cli._sweep_flags import options_from_args
from advisor.errors import UsageError
from advisor.fleet.optin import OptInError, read_ask
from advisor.keys import ANN_INPUT_SHAPE, ANN_MODEL
from advisor.models import CalibrationOptions
from advisor.models.input_shape import (
    MAX_DIM,
    canonical_input_shapes,
    format_input_shapes,
    parse_input_shapes,
)


@pytest.mark.parametrize(
    ("text", "shapes"),
    [
        ("input_ids=128", {"input_ids": (128,)}),
        ("image=224,224,3", {"image": (224, 224, 3)}),
        ("input_ids=128;attention_mask=128", {"input_ids": (128,), "attention_mask": (128,)}),
        (" a = 1 , 2 ; b=3 ;", {"a": (1, 2), "b": (3,)}),
        ("serving_default_x:0=5", {"serving_default_x:0": (5,)}),
        (f"x={MAX_DIM}", {"x": (MAX_DIM,)}),
    ],
)
def test_shapes_parse(text: str, shapes: dict[str, tuple[int, ...]]) -> None:
    assert parse_input_shapes(text) == shapes
    # the canonical spelling reads back as the same shapes
    assert parse_input_shapes(format_input_shapes(shapes)) == shapes


def test_the_canonical_spelling_sorts_the_names_and_drops_spaces() -> None:
    assert canonical_input_shapes(" b=3 ; a = 1, 2") == "a=1,2;b=3"
    assert canonical_input_shapes("a=1,2;b=3") == "a=1,2;b=3"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "names no input"),
        (" ; ;", "names no input"),
        ("128", "'128' is not NAME=D1[,D2...]"),
        ("=128", "'=128' is not NAME=D1[,D2...]"),
        ("ids=", "input 'ids': '' is not a list of dimensions"),
        ("ids=1,,2", "input 'ids': '1,,2' is not a list of dimensions"),
        ("ids=1,", "is not a list of dimensions"),
        ("ids=0", "input 'ids': dimension '0' must be a whole number from 1"),
        ("ids=-3", "dimension '-3'"),
        ("ids=1.5", "dimension '1.5'"),
        ("ids=abc", "dimension 'abc'"),
        (f"ids={MAX_DIM + 1}", f"dimension '{MAX_DIM + 1}'"),
        ("ids=8;ids=9", "input 'ids' is given twice"),
        ("ids=8,mask=8", "dimension 'mask=8'"),
    ],
)
def test_a_malformed_shape_is_one_line_naming_the_part_at_fault(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=r"^[^\n]*$") as caught:
        parse_input_shapes(text)
    assert says in str(caught.value)


def test_the_options_hold_the_canonical_spelling() -> None:
    assert CalibrationOptions().input_shape is None
    options = CalibrationOptions(input_shape="mask=16; ids=16")
    assert options.input_shape == "ids=16;mask=16"
    # two spellings of one shape are one calibration
    assert options == CalibrationOptions(input_shape="ids=16;mask=16")


def test_the_flag_refuses_a_malformed_shape_naming_itself() -> None:
    args = build_parser().parse_args(["calibrate", "--input-shape", "ids=0"])
    with pytest.raises(UsageError) as caught:
        options_from_args(args)
    line = caught.value.spelled(lambda option: "--input-shape")
    assert line.startswith("--input-shape 'ids=0': input 'ids': dimension '0'")
    args = build_parser().parse_args(["calibrate", "--input-shape", "b=2;a=1"])
    assert options_from_args(args).input_shape == "a=1;b=2"


@pytest.mark.parametrize("command", ["calibrate", "run"])
def test_the_flag_given_once_per_input_keeps_every_input(command: str) -> None:
    # as perf_analyzer users give --shape: one flag per input, not the last one alone
    argv = [command, "--input-shape", "input_ids=128", "--input-shape", "attention_mask=128"]
    options = options_from_args(build_parser().parse_args(argv))
    assert options.input_shape == "attention_mask=128;input_ids=128"
    # ';' inside one flag still separates inputs, beside more flags
    argv = [command, "--input-shape", "a=1;b=2", "--input-shape", "c=3,4"]
    assert options_from_args(build_parser().parse_args(argv)).input_shape == "a=1;b=2;c=3,4"


def test_one_input_given_by_two_flags_is_refused_naming_the_flag() -> None:
    args = build_parser().parse_args(["calibrate", "--input-shape", "ids=8", "--input-shape=ids=9"])
    with pytest.raises(UsageError) as caught:
        options_from_args(args)
    line = caught.value.spelled(lambda option: "--input-shape")
    assert line.startswith("--input-shape 'ids=8;ids=9': input 'ids' is given twice")


def test_the_annotation_sets_it_and_a_malformed_one_names_the_annotation() -> None:
    ask = read_ask({ANN_MODEL: "/models/bert/1", ANN_INPUT_SHAPE: "input_ids=128"})
    assert ask.options.input_shape == "input_ids=128"
    assert read_ask({ANN_MODEL: "/models/bert/1"}).options.input_shape is None
    with pytest.raises(OptInError) as caught:
        read_ask({ANN_MODEL: "/models/bert/1", ANN_INPUT_SHAPE: "input_ids"})
    assert str(caught.value).startswith(f"annotation {ANN_INPUT_SHAPE} 'input_ids': ")
