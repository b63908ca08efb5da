"""TF Serving's REST request bodies read into records (``records.RawRequest``): the parser, with
JSON and numpy only, no TensorFlow (an import contract holds it to that; its tests are the fast
tier's, tests/unit/trials/test_rest.py).

A REST body is ``{"instances": [row, ...]}`` (a row is a value of the only input, or an object of
input -> value; the rows are stacked on a batch dimension) or ``{"inputs": value}`` (a value of
the only input, or an object of input -> value; taken as they are), with an optional
``signature_name``; a string value may be ``{"b64": "..."}`` (bytes). A file holds one body, or
JSON lines of bodies. Values stay as JSON gave them (``records.JsonValue``) until they are bound:
a REST value is typed by the signature, as TF Serving does.

Every problem is one line naming the file and the record (1-based).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from advisor.errors import RequestsError
from advisor.trials.child.records import JsonValue, RawCall, RawRequest


def rest_bodies(path: str, where: str) -> Iterator[RawRequest]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RequestsError(f"{path}: not UTF-8 text: {exc.reason}") from None
    # Records are numbered as they come, blank lines between JSON lines not counted; the
    # place names the line too when that differs, so the record can be found in the file.
    try:
        bodies: list[tuple[int, str, Any]] = [
            (1, f"{where}: record 1", _json(text, f"{where}: record 1"))
        ]
    except json.JSONDecodeError:
        bodies = []
        for line_number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            number = len(bodies) + 1
            place = f"{where}: record {number}"
            if line_number != number:
                place += f" (line {line_number})"
            try:
                bodies.append((number, place, _json(line, place)))
            except json.JSONDecodeError as exc:
                raise RequestsError(f"{place}: not JSON ({exc.msg}, column {exc.colno})") from None
    for number, place, body in bodies:
        try:
            yield _rest_body(body, place, number)
        except RecursionError:
            raise RequestsError(f"{place}: a value is nested too deeply") from None


def _json(text: str, place: str) -> Any:
    """``text`` parsed; a body nested too deeply for the parser is a RequestsError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise RequestsError(f"{place}: a value is nested too deeply") from None


def _rest_body(body: Any, place: str, number: int) -> RawRequest:
    if not isinstance(body, dict):
        raise RequestsError(f"{place}: a request body is a JSON object, not {json_kind(body)}")
    if _is_kserve_v2(body):
        raise RequestsError(
            f"{place}: a KServe v2 (Open Inference Protocol) request, which is not replayed: give "
            'TF Serving REST bodies ({"instances": ...} or {"inputs": ...}) or a TFRecord of '
            "PredictionLog"
        )
    unknown = sorted(set(body) - {"signature_name", "instances", "inputs"})
    if unknown:
        raise RequestsError(
            f"{place}: unknown key {unknown[0]!r} (a body has instances or inputs, and "
            "optionally signature_name)"
        )
    signature = body.get("signature_name")
    if signature is not None and (not isinstance(signature, str) or not signature):
        raise RequestsError(f"{place}: signature_name must be a non-empty string")
    if "instances" in body and "inputs" in body:
        raise RequestsError(f"{place}: a request body has either instances or inputs, not both")
    if "instances" not in body and "inputs" not in body:
        raise RequestsError(f"{place}: a request body needs instances or inputs; it has neither")
    if "instances" in body:
        inputs, rows = _instances(body["instances"], place)
        return RawRequest(number, (RawCall(signature, inputs),), rows)
    value = body["inputs"]
    if isinstance(value, dict) and not _is_b64(value):
        if not value:
            raise RequestsError(f"{place}: inputs is an empty object")
        named: dict[str | None, np.ndarray | JsonValue] = {
            str(k): JsonValue(_decoded(v, f"{place}: input {k!r}")) for k, v in value.items()
        }
        return RawRequest(number, (RawCall(signature, named),))
    return RawRequest(number, (RawCall(signature, {None: JsonValue(_decoded(value, place))}),))


#: what every tensor of a KServe v2 body's ``inputs`` names (``data`` may be in a binary part)
_KSERVE_TENSOR_KEYS = frozenset({"name", "shape", "datatype"})


def _is_kserve_v2(body: dict[str, Any]) -> bool:
    """A KServe v2 body: its ``inputs`` a list of tensor objects, each with a name, shape and
    datatype. No TF Serving body is one (an object inside its value can only be b64 bytes)."""
    inputs = body.get("inputs")
    return (
        isinstance(inputs, list)
        and bool(inputs)
        and all(isinstance(t, dict) and set(t) >= _KSERVE_TENSOR_KEYS for t in inputs)
    )


def _instances(instances: Any, place: str) -> tuple[dict[str | None, np.ndarray | JsonValue], int]:
    if not isinstance(instances, list) or not instances:
        raise RequestsError(f"{place}: instances must be a non-empty list of rows")
    named = [isinstance(row, dict) and not _is_b64(row) for row in instances]
    if any(named) and not all(named):
        raise RequestsError(
            f"{place}: instances mixes objects (named inputs) with plain values; use one form"
        )
    if not named[0]:
        rows = [_decoded(row, f"{place}: instance {i}") for i, row in enumerate(instances, 1)]
        return {None: JsonValue(rows)}, len(rows)
    names = list(instances[0])
    if not names:
        raise RequestsError(f"{place}: instance 1 is an empty object")
    for index, row in enumerate(instances, start=1):
        if set(row) != set(names):
            differ = sorted(set(row) ^ set(names))[0]
            has = "lacks" if differ in names else "adds"
            raise RequestsError(
                f"{place}: instance {index} {has} input {differ!r}; every instance names the "
                "same inputs"
            )
    inputs: dict[str | None, np.ndarray | JsonValue] = {
        name: JsonValue([_decoded(row[name], f"{place}: input {name!r}") for row in instances])
        for name in names
    }
    return inputs, len(instances)


def _is_b64(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"b64"}


def _decoded(value: Any, place: str) -> Any:
    """``value`` with every ``{"b64": ...}`` turned into its bytes."""
    if isinstance(value, list):
        return [_decoded(item, place) for item in value]
    if isinstance(value, dict):
        if not _is_b64(value):
            raise RequestsError(
                f'{place}: an object inside a value must be {{"b64": ...}} (bytes), '
                f"not one with keys {', '.join(sorted(map(str, value)))}"
            )
        encoded = value["b64"]
        if not isinstance(encoded, str):
            raise RequestsError(f"{place}: a b64 value must be a string")
        try:
            return base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise RequestsError(f"{place}: a b64 value does not decode (not base64)") from None
    return value


def json_kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
