"""TF Serving's REST request bodies read into records (advisor.trials.child.rest), with no
TensorFlow: rows and columns, signature names, b64 bytes, JSON lines, and one RequestsError line
naming the file and the record for each malformed body. Binding the records to a real model's
signatures (dtypes, shapes, signature names the model has) is
tests/system/test_requests_replay.py's, as it needs TensorFlow's dtypes."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import RequestsError
from advisor.trials.child.records import JsonValue, RawRequest
from advisor.trials.child.rest import rest_bodies

ROW = [0.5, 0.25]
BYTES = b"\x00\xffbytes"
B64 = base64.b64encode(BYTES).decode()


def _read(tmp_path: Path, text: str) -> list[RawRequest]:
    path = tmp_path / "requests.json"
    path.write_text(text, encoding="utf-8")
    return list(rest_bodies(str(path), "FILE"))


def _plain(requests: list[RawRequest]) -> list[Any]:
    """Each record as (record, rows, [(signature, {input: value as JSON gave it})])."""
    out = []
    for request in requests:
        calls = []
        for call in request.calls:
            inputs = {}
            for name, value in call.inputs.items():
                assert isinstance(value, JsonValue)
                inputs[name] = value.value
            calls.append((call.signature, inputs))
        out.append((request.record, request.rows, calls))
    return out


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # rows: the only input's values, stacked; the body says how many examples
        ({"instances": [ROW, ROW, ROW]}, [(1, 3, [(None, {None: [ROW, ROW, ROW]})])]),
        (
            {"instances": [{"a": [1, 2], "b": "x"}, {"a": [3, 4], "b": "yz"}]},
            [(1, 2, [(None, {"a": [[1, 2], [3, 4]], "b": ["x", "yz"]})])],
        ),
        ({"instances": [{"b64": B64}, "plain"]}, [(1, 2, [(None, {None: [BYTES, "plain"]})])]),
        (
            {"signature_name": "by_ids", "instances": [[0, 1, 2, 3]]},
            [(1, 1, [("by_ids", {None: [[0, 1, 2, 3]]})])],
        ),
        # columns: taken as they are; the rows are the bound arrays' to say
        ({"inputs": [ROW, ROW]}, [(1, None, [(None, {None: [ROW, ROW]})])]),
        (
            {"inputs": {"a": [[1, 2]], "b": [{"b64": B64}]}},
            [(1, None, [(None, {"a": [[1, 2]], "b": [BYTES]})])],
        ),
        ({"inputs": {"b64": B64}}, [(1, None, [(None, {None: BYTES})])]),
    ],
)
def test_a_body_is_read_as_tf_serving_reads_it(
    tmp_path: Path, body: dict[str, Any], expected: list[Any]
) -> None:
    assert _plain(_read(tmp_path, json.dumps(body))) == expected


def test_json_lines_are_numbered_as_they_come_blank_lines_left_out(tmp_path: Path) -> None:
    lines = [
        json.dumps({"instances": [ROW]}),
        "",
        "   ",
        json.dumps({"signature_name": "by_ids", "inputs": {"ids": [[1, 1, 1, 1]] * 4}}),
    ]
    assert _plain(_read(tmp_path, "\n".join(lines) + "\n")) == [
        (1, 1, [(None, {None: [ROW]})]),
        (2, None, [("by_ids", {"ids": [[1, 1, 1, 1]] * 4})]),
    ]


def test_one_body_over_several_lines_is_one_record(tmp_path: Path) -> None:
    text = json.dumps({"instances": [ROW, ROW]}, indent=2)
    assert len(text.splitlines()) > 2
    assert _plain(_read(tmp_path, text)) == [(1, 2, [(None, {None: [ROW, ROW]})])]


DEEP = '{"inputs": ' + "[" * 5000 + "]" * 5000 + "}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "FILE: record 1: not JSON (Expecting property name enclosed in double"),
        (json.dumps({"inputs": [ROW]}) + "\n[", "FILE: record 2: not JSON (Expecting value"),
        ('{"inputs": [[1]]}\n[1]', "FILE: record 2: a request body is a JSON object, not an array"),
        ('"text"', "FILE: record 1: a request body is a JSON object, not a string"),
        (
            json.dumps({"instances": [ROW], "inputs": [ROW]}),
            "FILE: record 1: a request body has either instances or inputs, not both",
        ),
        (
            json.dumps({"signature_name": "x"}),
            "FILE: record 1: a request body needs instances or inputs; it has neither",
        ),
        (DEEP, "FILE: record 1: a value is nested too deeply"),
        (
            json.dumps({"inputs": [ROW]}) + "\n" + DEEP,
            "FILE: record 2: a value is nested too deeply",
        ),
        (
            json.dumps({"inputs": [ROW]}) + "\n\n" + json.dumps({"x": 1}),
            "FILE: record 2 (line 3): unknown key 'x' (a body has instances or inputs, and "
            "optionally signature_name)",
        ),
        (
            json.dumps({"instances": [ROW], "model": 1}),
            "FILE: record 1: unknown key 'model'",
        ),
        (json.dumps({"instances": []}), "FILE: record 1: instances must be a non-empty list"),
        (json.dumps({"instances": {"a": 1}}), "FILE: record 1: instances must be a non-empty list"),
        (
            json.dumps({"instances": [{"a": 1}, [1]]}),
            "FILE: record 1: instances mixes objects (named inputs) with plain values",
        ),
        (json.dumps({"instances": [{}]}), "FILE: record 1: instance 1 is an empty object"),
        (
            json.dumps({"instances": [{"a": [1, 2], "b": "x"}, {"a": [1, 2]}]}),
            "FILE: record 1: instance 2 lacks input 'b'; every instance names the same inputs",
        ),
        (
            json.dumps({"instances": [{"a": 1}, {"a": 2, "c": 3}]}),
            "FILE: record 1: instance 2 adds input 'c'",
        ),
        (json.dumps({"inputs": {}}), "FILE: record 1: inputs is an empty object"),
        (
            json.dumps({"signature_name": "", "inputs": [ROW]}),
            "FILE: record 1: signature_name must be a non-empty string",
        ),
        (
            json.dumps({"signature_name": 3, "inputs": [ROW]}),
            "FILE: record 1: signature_name must be a non-empty string",
        ),
        (
            json.dumps({"instances": [{"b64": "!!!"}]}),
            "FILE: record 1: instance 1: a b64 value does not decode (not base64)",
        ),
        (
            json.dumps({"instances": [{"b64": 3}]}),
            "FILE: record 1: instance 1: a b64 value must be a string",
        ),
        (
            json.dumps({"inputs": [{"x": 1}]}),
            'FILE: record 1: an object inside a value must be {"b64": ...} (bytes), not one with '
            "keys x",
        ),
        (
            json.dumps({"inputs": {"a": [{"y": 1, "x": 2}]}}),
            "FILE: record 1: input 'a': an object inside a value must be",
        ),
    ],
)
def test_a_malformed_body_is_one_line_naming_the_file_and_record(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(RequestsError) as raised:
        _read(tmp_path, text)
    assert str(raised.value).startswith(message), str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_file_that_is_not_utf8_says_so(tmp_path: Path) -> None:
    path = tmp_path / "requests.json"
    path.write_bytes(b'{"inputs": ["\xff"]}')
    with pytest.raises(RequestsError, match=r"requests.json: not UTF-8 text: invalid start byte"):
        list(rest_bodies(str(path), "FILE"))


#: a KServe v2 (Open Inference Protocol) REST body: it begins with ``{`` and has ``inputs``, as
#: a TF Serving body does, but its inputs are a list of tensors described by name, shape,
#: datatype and flat data
KSERVE = {
    "id": "42",
    "inputs": [
        {"name": "input_ids", "shape": [1, 4], "datatype": "INT64", "data": [101, 7, 8, 102]},
        {"name": "attention_mask", "shape": [1, 4], "datatype": "INT64", "data": [1, 1, 1, 1]},
    ],
}


@pytest.mark.parametrize(
    "body",
    [
        KSERVE,
        {"inputs": KSERVE["inputs"][:1]},
        {
            "inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1.0, 2.0]}],
            "outputs": [{"name": "y"}],
        },
    ],
)
def test_a_kserve_v2_body_is_refused_in_one_line_that_names_it(
    tmp_path: Path, body: dict[str, Any]
) -> None:
    lines = json.dumps({"instances": [ROW]}) + "\n" + json.dumps(body)
    with pytest.raises(RequestsError) as raised:
        _read(tmp_path, lines)
    assert str(raised.value) == (
        "FILE: record 2: a KServe v2 (Open Inference Protocol) request, which is not replayed: "
        'give TF Serving REST bodies ({"instances": ...} or {"inputs": ...}) or a TFRecord of '
        "PredictionLog"
    )
