"""What every loader of the trial child returns, a ``LoadedSubject``, and what they share: the
declared interface read from TensorFlow's specs, its digest, waiting for a request's outputs,
and an exception's words.

Imports tensorflow: only the trial child (through ``advisor.trials.child.subjects``) imports it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf

from advisor.errors import one_line
from advisor.models import InputsSource, ModelFormat
from advisor.trials.child.decl import TensorDecl


@dataclass(frozen=True)
class LoadedSubject:
    """A model ready to serve requests on fixed inputs (synthesised, or recorded requests)."""

    model_format: ModelFormat
    signature: str | None
    signature_digest: str
    #: input name -> "dtype[shape]" of the tensor fed (a dimension that varies: its range)
    inputs: dict[str, str]
    #: runs one request, waits for its outputs and returns what it counts for throughput: a
    #: replayed request its examples (rows, which differ from request to request), a synthesised
    #: one 1 (every request has the batch size: throughput stays requests per second, as
    #: ever); safe to call from several threads at once
    request: Callable[[], int]
    #: where the inputs came from (a model's synthesised inputs: ``detail`` says what synthesis
    #: read, ``synthesis.Synthesis.detail``); only the fields it was given are on the wire
    inputs_source: InputsSource = field(default_factory=lambda: InputsSource(kind="synthesised"))


def spec_digest(
    inputs: Sequence[TensorDecl], outputs: Sequence[TensorDecl], *, extra: str = ""
) -> str:
    """sha256 of the declared interface: changes when the model's inputs or outputs change."""
    document = {
        "inputs": [[d.name, d.dtype, None if d.shape is None else list(d.shape)] for d in inputs],
        "outputs": [[d.name, d.dtype, None if d.shape is None else list(d.shape)] for d in outputs],
        "extra": extra,
    }
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def tensor_decl(name: str, dtype: Any, shape: Any) -> TensorDecl:
    """A declared input or output from TensorFlow's dtype and (possibly unknown) shape."""
    dtype_name = tf.as_dtype(dtype).name
    if shape is None:
        return TensorDecl(name, dtype_name, None)
    dims = tf.TensorShape(shape)
    if dims.rank is None:
        return TensorDecl(name, dtype_name, None)
    return TensorDecl(name, dtype_name, tuple(dims.as_list()))


def signature_inputs(function: Any) -> list[TensorDecl]:
    """A signature function's declared inputs, in the order it takes them (its keywords, sorted)."""
    _, kw_specs = function.structured_input_signature
    return [tensor_decl(name, spec.dtype, spec.shape) for name, spec in sorted(kw_specs.items())]


def wait(outputs: Any, keep: object = None, rows: int = 0) -> int:
    """Bring every output to the host, as a server does before it answers; ``rows``, the
    request's examples, is handed back for the caller's count."""
    del keep
    for tensor in tf.nest.flatten(outputs):
        tensor.numpy()
    return rows


#: lines of a TF OpError message that locate the failing node but say nothing to a user
_TF_NOISE = ("Graph execution error", "Detected at node", "<stack traces", "[[")
_TF_OP_SUFFIX = re.compile(r"\s*\[Op:[^\]]*\]$")


def why(exc: BaseException) -> str:
    """The part of an exception a user can act on, on one line."""
    lines = [line.strip() for line in str(exc).splitlines()]
    kept = [line for line in lines if line and not line.startswith(_TF_NOISE)]
    text = _TF_OP_SUFFIX.sub("", " ".join(kept))
    return one_line(text or type(exc).__name__)
