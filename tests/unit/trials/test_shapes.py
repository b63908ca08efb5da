"""The shapes synthesised inputs take (advisor.trials.child.shapes), with no TensorFlow: the batch
first, ``--input-shape`` for every other unknown dimension, and one ModelError line for each way
the two disagree. The same rules on real models, read by TensorFlow, are
tests/system/test_trials_synthesis.py's and test_trials_models.py's."""

from __future__ import annotations

import subprocess
import sys

import pytest

from advisor.errors import ModelError
from advisor.trials.child.decl import TensorDecl
from advisor.trials.child.shapes import check_input_shapes, concrete_shape
from tests.support import REPO

WHERE = "/models/m/1"
IMAGE = TensorDecl("image", "float32", (None, 224, 224, 3))
IDS = TensorDecl("input_ids", "int32", (None, None))
FIXED = TensorDecl("x", "float32", (4, 16))
RANKLESS = TensorDecl("blob", "float32", None)


@pytest.mark.parametrize(
    ("decl", "batch", "given", "shape"),
    [
        (IMAGE, 8, None, (8, 224, 224, 3)),  # the unknown first dimension is the batch
        (IDS, 2, (128,), (2, 128)),  # the others, where unknown, are --input-shape's
        (FIXED, 4, None, (4, 16)),  # a fixed batch equal to the one asked for
        (RANKLESS, 3, (5, 7), (3, 5, 7)),  # an unknown rank takes --input-shape's as its own
        (IMAGE, 1, (224, 224, 3), (1, 224, 224, 3)),  # given where known: it must agree
        (TensorDecl("scalar_batch", "int64", (None,)), 5, None, (5,)),
    ],
)
def test_the_shape_an_input_is_synthesised_with(
    decl: TensorDecl, batch: int, given: tuple[int, ...] | None, shape: tuple[int, ...]
) -> None:
    assert concrete_shape(decl, batch, WHERE, given) == shape


@pytest.mark.parametrize(
    ("decl", "batch", "given", "message"),
    [
        (
            FIXED,
            1,
            None,
            "input 'x' float32[4,16] has a fixed batch dimension 4; use batch size 4 (asked for 1)",
        ),
        (
            IDS,
            1,
            None,
            "input 'input_ids' int32[?,?] has an unknown dimension 1; give its size with "
            "--input-shape input_ids=D1[,D2...] (the dimensions after the batch)",
        ),
        (
            RANKLESS,
            1,
            None,
            "input 'blob' has an unknown rank; give its dimensions after the batch with "
            "--input-shape blob=D1[,D2...]",
        ),
        (
            IDS,
            1,
            (16, 2),
            "--input-shape input_ids=16,2 gives 2 dimension(s) after the batch; input "
            "'input_ids' int32[?,?] has 1",
        ),
        (
            IMAGE,
            1,
            (224, 225, 3),
            "--input-shape image=224,225,3: dimension 2 of input 'image' float32[?,224,224,3] "
            "is 224, not 225",
        ),
    ],
)
def test_each_disagreement_is_one_model_error_line_naming_the_model(
    decl: TensorDecl, batch: int, given: tuple[int, ...] | None, message: str
) -> None:
    with pytest.raises(ModelError) as raised:
        concrete_shape(decl, batch, WHERE, given)
    assert str(raised.value) == f"{WHERE}: {message}"


def test_input_shape_names_every_input_with_an_unknown_dimension_at_once() -> None:
    mask = TensorDecl("attention_mask", "int32", (None, None))
    with pytest.raises(ModelError) as raised:
        check_input_shapes([IMAGE, mask, IDS, RANKLESS], {}, WHERE)
    assert str(raised.value) == (
        f"{WHERE}: give the unknown dimensions after the batch with --input-shape "
        "'attention_mask=D1;input_ids=D1;blob=D1[,D2...]' (inputs 'attention_mask' int32[?,?], "
        "'input_ids' int32[?,?], 'blob' float32[unknown rank])"
    )
    # one input left: the remedy names it alone, in the singular
    with pytest.raises(ModelError, match=r"--input-shape 'input_ids=D1' \(input 'input_ids'"):
        check_input_shapes([mask, IDS], {"attention_mask": (16,)}, WHERE)
    check_input_shapes([IMAGE, mask, IDS], {"attention_mask": (16,), "input_ids": (16,)}, WHERE)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"token_type_ids": (16,)},
            "--input-shape names input 'token_type_ids', which the signature lacks (its inputs: "
            "image, input_ids)",
        ),
        (
            {"image": (224, 224, 3)},
            "--input-shape names input 'image', whose shape float32[?,224,224,3] has no unknown "
            "dimension after the batch: give only inputs with unknown dimensions",
        ),
    ],
)
def test_input_shape_names_only_inputs_the_signature_leaves_open(
    given: dict[str, tuple[int, ...]], message: str
) -> None:
    with pytest.raises(ModelError) as raised:
        check_input_shapes([IMAGE, IDS], {"input_ids": (16,), **given}, WHERE)
    assert str(raised.value) == f"{WHERE}: {message}"


def test_a_signature_without_inputs_names_none() -> None:
    with pytest.raises(ModelError, match=r"which the signature lacks \(its inputs: none\)"):
        check_input_shapes([], {"x": (1,)}, WHERE)


def test_the_shape_rules_and_the_rest_reader_load_no_tensorflow() -> None:
    """What the fast tier tests here must stay TensorFlow-free (the import contract says so of
    the code; this, of what importing it really loads)."""
    modules = ("shapes", "decl", "records", "rest")
    code = (
        "import sys\n"
        + "".join(f"import advisor.trials.child.{m}\n" for m in modules)
        + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
