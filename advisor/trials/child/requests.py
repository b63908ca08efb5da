"""Reading recorded requests to replay: TF Serving's REST bodies and TFRecords of PredictionLog.

Imports TensorFlow's protos (and, for PredictionLog, TF Serving's as ``serving_protos`` defines
them over those), so only the trial child and the trial server may import it. Two steps, because
the trial server reads the file once before it forks and must not start TF's runtime:

1. ``read_requests(path)``: the file into records, with protobuf, JSON and numpy only (no op, no
   ``tf.constant``): a ``records.RawRequest`` per record, its calls (signature name or None for
   the default, inputs by name, or None for the signature's only input) and its rows when the
   format says (REST ``instances``, serialized Examples);
2. ``bind(raw, signatures, ...)``: each record checked against the signatures it calls and turned
   into numpy arrays of their dtypes (a REST value is typed by the signature, as TF Serving does).

The formats, as TF Serving defines them:

- a REST body (``advisor.trials.child.rest``, which reads them with no TensorFlow): one, or JSON
  lines of them, ``{"instances": ...}`` rows or ``{"inputs": ...}`` columns;
- a TFRecord of ``PredictionLog`` (TF Serving's warmup format): ``predict_log`` (its request's
  input tensors), ``classify_log`` and ``regress_log`` (serialized ``tf.Example``s, from
  ``example_list`` or ``example_list_with_context`` with the context merged into each, fed to
  the named signature's one string input), ``multi_inference_log`` (each task's signature on the
  same examples, one request).

Every problem is one line naming the file and the record (1-based): ``requests.json: record 3:
input 'x' is int64, the signature takes float32``.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from advisor.errors import RequestsError, one_line
from advisor.trials.child.decl import MAX_INPUT_BYTES, TensorDecl
from advisor.trials.child.records import JsonValue, RawCall, RawRequest
from advisor.trials.child.rest import json_kind, rest_bodies
from advisor.trials.child.serving_protos import PredictionLog


@dataclass(frozen=True)
class Request:
    """One request, checked: its calls (signature, input -> array) and its examples (rows)."""

    record: int
    calls: tuple[tuple[str, dict[str, np.ndarray]], ...]
    rows: int


# --------------------------------------------------------------------------------------------------
# Step 1: the file into records (no TensorFlow runtime)
# --------------------------------------------------------------------------------------------------


#: request files larger than these are refused before they are parsed, as their requests could
#: not fit the cap on what they hold (``MAX_INPUT_BYTES``, ``bind``'s ``max_bytes``), and parsing
#: them first would cost far more memory than the cap: a TFRecord holds its tensors about as
#: they are (an eighth more for framing); JSON spends 2-3 characters per byte of a value it holds
#: and parses into Python objects of ~10x its size, so it gets a small multiple
MAX_TFRECORD_BYTES = MAX_INPUT_BYTES + MAX_INPUT_BYTES // 8
MAX_JSON_BYTES = 3 * MAX_INPUT_BYTES

#: how much of the file is read to tell a TFRecord from JSON (JSON may begin with whitespace)
_SNIFF_BYTES = 4096


def read_requests(
    path: str, *, max_tfrecord_bytes: int = MAX_TFRECORD_BYTES, max_json_bytes: int = MAX_JSON_BYTES
) -> list[RawRequest]:
    """Every record of the file; RequestsError (one line) for anything unreadable."""
    where = path
    try:
        with Path(path).open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
        size = Path(path).stat().st_size
    except OSError as exc:
        raise RequestsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if size == 0:
        raise RequestsError(f"{path}: the request file is empty")
    if _is_tfrecord(head[:12]):
        _check_size(path, size, max_tfrecord_bytes, "a TFRecord")
        found = list(_prediction_logs(path, where))
    elif head.lstrip()[:1] == b"{":
        _check_size(path, size, max_json_bytes, "JSON")
        found = list(rest_bodies(path, where))
    else:
        raise RequestsError(
            f"{path}: neither a TF Serving REST body (JSON) nor a TFRecord of PredictionLog"
        )
    if not found:
        raise RequestsError(f"{path}: no requests in it")
    return found


def _check_size(path: str, size: int, limit: int, kind: str) -> None:
    if size > limit:
        raise RequestsError(
            f"{path}: the request file is {size / 2**30:.2f} GiB; {kind} of requests is read up "
            f"to {limit / 2**30:.2f} GiB (the requests may hold {MAX_INPUT_BYTES / 2**30:g} GiB)"
        )


def _is_tfrecord(head: bytes) -> bool:
    """A TFRecord begins with its first record's length and that length's masked CRC32C."""
    if len(head) < 12:
        return False
    (crc,) = struct.unpack("<I", head[8:12])
    return bool(_masked_crc32c(head[:8]) == crc)


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _masked_crc32c(data: bytes) -> int:
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# REST bodies --------------------------------------------------------------------------------------


# PredictionLog ------------------------------------------------------------------------------------


def _prediction_logs(path: str, where: str) -> Iterator[RawRequest]:
    from google.protobuf.message import DecodeError

    number = 0
    records = tf.compat.v1.io.tf_record_iterator(path)
    while True:
        try:
            record = next(records)
        except StopIteration:
            return
        except tf.errors.OpError as exc:
            raise RequestsError(
                f"{where}: record {number + 1}: corrupt or truncated ({_first_line(exc)})"
            ) from None
        number += 1
        place = f"{where}: record {number}"
        try:
            log = PredictionLog.FromString(record)
        except DecodeError:
            raise RequestsError(f"{place}: not a PredictionLog") from None
        yield _prediction_log(log, place, number)


def _prediction_log(log: Any, place: str, number: int) -> RawRequest:
    kind = log.WhichOneof("log_type")
    if kind == "predict_log":
        request = log.predict_log.request
        if not request.inputs:
            raise RequestsError(f"{place}: the predict request has no inputs")
        inputs: dict[str | None, np.ndarray | JsonValue] = {
            name: _tensor(proto, f"{place}: input {name!r}")
            for name, proto in sorted(request.inputs.items())
        }
        return RawRequest(number, (RawCall(request.model_spec.signature_name or None, inputs),))
    if kind in ("classify_log", "regress_log"):
        request = getattr(log, kind).request
        examples = _examples(request.input, place)
        call = RawCall(request.model_spec.signature_name or None, {None: examples})
        return RawRequest(number, (call,), len(examples))
    if kind == "multi_inference_log":
        request = log.multi_inference_log.request
        if not request.tasks:
            raise RequestsError(f"{place}: the multi-inference request has no tasks")
        examples = _examples(request.input, place)
        calls = tuple(
            RawCall(task.model_spec.signature_name or None, {None: examples})
            for task in request.tasks
        )
        return RawRequest(number, calls, len(examples))
    if kind is None:
        raise RequestsError(f"{place}: an empty PredictionLog (no request in it)")
    raise RequestsError(
        f"{place}: a {kind} is not replayed (predict, classify, regress and multi-inference are)"
    )


def _tensor(proto: Any, place: str) -> np.ndarray:
    try:
        array = tf.make_ndarray(proto)
    except Exception as exc:
        raise RequestsError(f"{place}: not a valid tensor ({one_line(str(exc), 120)})") from None
    return np.asarray(array)


def _examples(request_input: Any, place: str) -> np.ndarray:
    """The serialized Examples of a classify/regress/multi-inference ``Input``; with a context,
    merged into each as TF Serving does (the context first, so the example's features win)."""
    kind = request_input.WhichOneof("kind")
    if kind == "example_list":
        serialized = [e.SerializeToString() for e in request_input.example_list.examples]
    elif kind == "example_list_with_context":
        listed = request_input.example_list_with_context
        context = listed.context.SerializeToString()
        serialized = [context + e.SerializeToString() for e in listed.examples]
    else:
        serialized = []
    if not serialized:
        raise RequestsError(f"{place}: the request has no examples")
    return np.array(serialized, dtype=object)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc).strip().splitlines()
    return one_line(text[0] if text else type(exc).__name__, 160)


# --------------------------------------------------------------------------------------------------
# Step 2: each record against the signatures it calls
# --------------------------------------------------------------------------------------------------


def bind(
    raw: Sequence[RawRequest],
    signatures: Mapping[str, Sequence[TensorDecl]],
    *,
    path: str,
    default_signature: str,
    max_bytes: int,
) -> list[Request]:
    """Every record checked and typed; RequestsError naming the file and record otherwise."""
    where = path
    bound: list[Request] = []
    total = 0
    for request in raw:
        place = f"{where}: record {request.record}"
        calls = []
        for call in request.calls:
            name = call.signature or default_signature
            if name not in signatures:
                known = ", ".join(sorted(signatures))
                raise RequestsError(
                    f"{place}: the model has no signature {name!r}; it has: {known}"
                )
            arrays = _bind_call(call, signatures[name], place, name)
            total += sum(_nbytes(a) for a in arrays.values())
            if total > max_bytes:
                raise RequestsError(
                    f"{place}: the requests so far hold {total / 2**30:.1f} GiB; limit "
                    f"{max_bytes / 2**30:g} GiB"
                )
            calls.append((name, arrays))
        rows = request.rows if request.rows is not None else _leading(calls[0][1])
        bound.append(Request(request.record, tuple(calls), rows))
    return bound


def _bind_call(
    call: RawCall, declared: Sequence[TensorDecl], place: str, signature: str
) -> dict[str, np.ndarray]:
    by_name = {d.name: d for d in declared}
    takes = ", ".join(sorted(by_name)) or "nothing"
    inputs = dict(call.inputs)
    if None in inputs:
        if len(declared) != 1:
            raise RequestsError(
                f"{place}: gives one unnamed input, but signature {signature!r} takes {takes}: "
                "name each input"
            )
        inputs = {declared[0].name: inputs[None]}
    for name in inputs:
        if name not in by_name:
            raise RequestsError(
                f"{place}: signature {signature!r} has no input {name!r} (it takes {takes})"
            )
    for name in by_name:
        if name not in inputs:
            raise RequestsError(
                f"{place}: input {name!r} is missing (signature {signature!r} takes {takes})"
            )
    return {
        name: _typed(value, by_name[str(name)], f"{place}: input {name!r}")
        for name, value in inputs.items()
        if name is not None
    }


def _typed(value: np.ndarray | JsonValue, decl: TensorDecl, place: str) -> np.ndarray:
    wanted = tf.as_dtype(decl.dtype)
    array = _from_json(value.value, wanted, place) if isinstance(value, JsonValue) else value
    got = _dtype_name(array)
    if got != wanted.name:
        raise RequestsError(f"{place} is {got}, the signature takes {wanted.name}")
    if not _shape_fits(array.shape, decl.shape):
        shape = ",".join(str(d) for d in array.shape)
        raise RequestsError(f"{place} has shape [{shape}], the signature takes {decl.describe()}")
    return array


def _from_json(value: Any, wanted: tf.DType, place: str) -> np.ndarray:
    """A JSON value as an array of the signature's dtype, as TF Serving types it."""
    if wanted == tf.string:
        array = np.array(value, dtype=object)
        for item in array.flat:
            if isinstance(item, list):
                raise RequestsError(f"{place} is not a rectangular array (rows differ in length)")
            if not isinstance(item, (str, bytes)):
                what = json_kind(item).split(" ", 1)[-1]
                raise RequestsError(f"{place} holds {what}s, the signature takes string")
        encoded = [i.encode("utf-8") if isinstance(i, str) else i for i in array.flat]
        return np.array(encoded, dtype=object).reshape(array.shape)
    try:
        array = np.array(value)
    except ValueError:
        raise RequestsError(f"{place} is not a rectangular array (rows differ in length)") from None
    kind = array.dtype.kind
    if kind in "USO":
        what = "bytes (b64)" if kind == "S" else "strings" if kind == "U" else "mixed values"
        raise RequestsError(f"{place} holds {what}, the signature takes {wanted.name}")
    if kind == "b" and not wanted.is_bool:
        raise RequestsError(f"{place} holds booleans, the signature takes {wanted.name}")
    if wanted.is_bool and kind != "b":
        raise RequestsError(f"{place} holds numbers, the signature takes bool")
    if wanted.is_integer:
        if kind == "f":
            raise RequestsError(f"{place} holds fractions, the signature takes {wanted.name}")
        info = np.iinfo(wanted.as_numpy_dtype)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise RequestsError(f"{place} holds values outside {wanted.name}'s range")
    elif not wanted.is_floating and not wanted.is_bool:
        raise RequestsError(
            f"{place}: the signature's dtype {wanted.name} is not replayed from JSON"
        )
    return array.astype(wanted.as_numpy_dtype)


def _dtype_name(array: np.ndarray) -> str:
    if array.dtype.kind in "OSU":
        return "string"
    try:
        return str(tf.as_dtype(array.dtype).name)
    except TypeError:
        return str(array.dtype)


def _shape_fits(shape: tuple[int, ...], declared: tuple[int | None, ...] | None) -> bool:
    if declared is None:
        return True
    if len(shape) != len(declared):
        return False
    return all(d is None or d == s for s, d in zip(shape, declared, strict=True))


def _leading(arrays: Mapping[str, np.ndarray]) -> int:
    """A request's examples: its inputs' largest first dimension (1 for scalars)."""
    return max((int(a.shape[0]) if a.ndim else 1 for a in arrays.values()), default=1)


def _nbytes(array: np.ndarray) -> int:
    if array.dtype.kind == "O":
        return sum(len(item) for item in array.flat) + 8 * array.size
    return int(array.nbytes)


# --------------------------------------------------------------------------------------------------
# Read once per trial server
# --------------------------------------------------------------------------------------------------

#: records read before the fork, by path: each forked child finds them here, already parsed
_READ: dict[str, list[RawRequest]] = {}


def preload(path: str) -> None:
    """Read ``path`` now, in the trial server (protobuf, JSON and numpy only: TF's runtime stays
    uninitialised, as forking needs); a file that cannot be read is left for the child to read
    again and report. Whatever goes wrong is suppressed, not only RequestsError: the server must
    outlive any file, and the child reports it."""
    if path in _READ:
        return
    with contextlib.suppress(Exception):
        _READ[path] = read_requests(path)


def read_once(path: str) -> list[RawRequest]:
    """The records of ``path``: as the trial server read them before the fork, else read now."""
    found = _READ.get(path)
    return found if found is not None else read_requests(path)
