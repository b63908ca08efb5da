"""An input as fed, as the provenance records it: read from its stored text into dimensions, and
written back as exactly that text (advice written by any advisor reads, and reads the same)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from advisor.models import SubjectInfo
from advisor.models.fed_input import FedInput, dim_text


@pytest.mark.parametrize(
    ("text", "dtype", "dims"),
    [
        ("int32[1,128]", "int32", (1, 128)),
        ("float32[3,112,112,3]", "float32", (3, 112, 112, 3)),
        ("float32[1-8,4]", "float32", ((1, 8), 4)),  # replayed: the batch varied
        ("float32[?,4]", "float32", (None, 4)),
        ("string[]", "string", ()),  # a scalar
        ("float32[rank 1-2]", "float32", None),  # replayed: the rank varied
        ("float32[unknown rank]", "float32", None),
        ("not a description", "not a description", None),
    ],
)
def test_the_stored_text_reads_as_dimensions(
    text: str, dtype: str, dims: tuple[object, ...] | None
) -> None:
    fed = FedInput.read(text)
    assert (fed.dtype, fed.dims, str(fed)) == (dtype, dims, text)


def test_an_examples_dimensions_leave_the_batch_out_and_are_written_as_read() -> None:
    assert FedInput.read("int32[1-8,128]").example_dims == (128,)
    assert FedInput.read("int32[1,1-4,?]").example_dims == ((1, 4), None)
    assert FedInput.read("float32[rank 1-2]").example_dims is None
    assert [dim_text(d) for d in FedInput.read("int32[1-8,128,?]").dims or ()] == [
        "1-8",
        "128",
        "?",
    ]


def test_a_provenance_writes_back_the_text_it_read() -> None:
    stored = {"kind": "builtin", "inputs": {"b": "int32[1-8, 7]", "a": "float32[1,4]"}}
    subject = SubjectInfo.model_validate(stored)
    assert subject.inputs["a"].dims == (1, 4)
    assert subject.inputs["b"].dims is None  # a space: no description this advisor writes
    assert json.loads(subject.model_dump_json(by_alias=True))["inputs"] == stored["inputs"]
    assert subject.model_dump()["inputs"] == stored["inputs"]
    assert SubjectInfo.model_validate(subject.model_dump()) == subject


def test_anything_but_text_is_refused_in_pydantics_words() -> None:
    with pytest.raises(ValidationError, match="Input should be a valid string"):
        SubjectInfo.model_validate({"kind": "builtin", "inputs": {"a": 5}})
