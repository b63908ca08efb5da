"""Recorded requests replayed: a model's warmup file or ``--requests FILE``, each request as
recorded, in a fixed cycle.

Imports tensorflow: only the trial child (through ``advisor.trials.child.subjects``) imports it.
Reading and checking the file is ``advisor.trials.child.requests``'; here the checked requests
become the subject's one inference each.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from advisor.errors import ModelError
from advisor.models import InputsSource, ModelFormat
from advisor.trials.child import requests as recorded
from advisor.trials.child.decl import MAX_INPUT_BYTES, TensorDecl
from advisor.trials.child.loaded import LoadedSubject, wait, why
from advisor.trials.requestfile import RequestsSource

#: a signature's declared inputs and how to call it with tensors by input name
Callables = dict[str, tuple[list[TensorDecl], Callable[..., Any]]]


class KeywordCall:
    """A signature function called by input name, holding the loaded model alive (signature
    functions only hold weak references to it)."""

    def __init__(self, function: Any, keep: object) -> None:
        self.function = function
        self.keep = keep

    def __call__(self, **tensors: Any) -> Any:
        return self.function(**tensors)


def replayed(
    source: RequestsSource,
    model_format: ModelFormat,
    default_signature: str,
    digest: str,
    callables: Callables,
) -> LoadedSubject:
    """The subject that replays ``source``'s requests in a fixed cycle, each as recorded.

    Every distinct request runs once here, at every load: a model that rejects one fails before
    any trial, and no trial meets a request's shapes first in its measured window.
    """
    raw = recorded.read_once(source.path)
    bound = recorded.bind(
        raw,
        {name: inputs for name, (inputs, _) in callables.items()},
        path=source.path,
        default_signature=default_signature,
        max_bytes=MAX_INPUT_BYTES,
    )
    prepared: list[tuple[int, list[tuple[Callable[..., Any], dict[str, Any]]]]] = []
    for request in bound:
        calls = [
            (callables[name][1], {k: tf.constant(v) for k, v in arrays.items()})
            for name, arrays in request.calls
        ]
        prepared.append((request.rows, calls))
    # Inspection and every trial alike: a trial's warm-up window (a fraction of a second) may
    # not reach every distinct request, and a shape seen first in the measured window would be
    # measured with its one-time cost (tracing, kernel selection) in it.
    for request, (_, calls) in zip(bound, prepared, strict=True):
        try:
            for call, tensors in calls:
                wait(call(**tensors))
        except Exception as exc:
            raise ModelError(
                f"{source.path}: record {request.record}: the model failed on it: {why(exc)}"
            ) from None
    lock = threading.Lock()
    position = [0]

    def replay_one() -> int:
        with lock:  # loops in several threads share one fixed order
            index = position[0]
            position[0] = (index + 1) % len(prepared)
        rows, calls = prepared[index]
        for call, tensors in calls:
            wait(call(**tensors))
        return rows

    batches = [rows for rows, _ in prepared]
    return LoadedSubject(
        model_format=model_format,
        signature=default_signature if model_format == "savedmodel" else None,
        signature_digest=digest,
        inputs=describe_replayed(bound),
        request=replay_one,
        inputs_source=InputsSource(
            kind=source.origin,
            file=source.path,
            requests=len(prepared),
            batch_sizes=(min(batches), max(batches)),
        ),
    )


def describe_replayed(bound: Sequence[recorded.Request]) -> dict[str, str]:
    """input -> "float32[1-8,4]": each dimension's range over the requests that feed it."""
    shapes: dict[str, tuple[str, list[tuple[int, ...]]]] = {}
    for request in bound:
        for _, arrays in request.calls:
            for name, array in arrays.items():
                dtype = "string" if array.dtype.kind in "OSU" else tf.as_dtype(array.dtype).name
                shapes.setdefault(name, (dtype, []))[1].append(tuple(array.shape))
    described = {}
    for name, (dtype, seen) in sorted(shapes.items()):
        ranks = {len(s) for s in seen}
        if len(ranks) != 1:
            described[name] = f"{dtype}[rank {min(ranks)}-{max(ranks)}]"
            continue
        dims = []
        for column in zip(*seen, strict=True):
            low, high = min(column), max(column)
            dims.append(str(low) if low == high else f"{low}-{high}")
        described[name] = f"{dtype}[{','.join(dims)}]"
    return described
