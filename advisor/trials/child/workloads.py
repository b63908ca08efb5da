"""What a trial runs: the built-in workload, a user's SavedModel or .keras file, and their inputs.

Imports tensorflow, so only the trial child (``advisor.trials.child.trial``) may import this module:
thread settings are read once when TF starts, and the parent must stay TF-free to run many
settings. Everything here ends in a ``LoadedWorkload`` whose ``request()`` is one inference on
inputs synthesised from the model's own signature, because the advisor never sees real traffic.

Input synthesis rules (documented for users in the error messages):
- the first dimension, when unknown, is the batch: it is filled from ``batch_size``; when it is
  fixed, ``batch_size`` must equal it (a model exported for batch 8 cannot be fed batch 1);
- any other unknown dimension, or an unknown rank, is refused: a guess (1? 224?) would measure
  a different model than the one served;
- floats are uniform in [0, 1), integers are small non-negative values (0..3, so embedding and
  gather indices stay in range), booleans are random; strings and exotic dtypes are refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from advisor.errors import ModelError, one_line
from advisor.models import ModelFormat

#: one seed for weights and inputs: every trial must run the very same computation.
SEED = 20240601

#: integers are drawn from [0, INT_HIGH): small enough to be valid ids/indices for most models.
INT_HIGH = 4

#: synthesised inputs larger than this (all inputs together) are refused as a batch-size problem.
MAX_INPUT_BYTES = 1 << 30

BUILTIN_NAME = "builtin-cnn-v1"
_BUILTIN_SIDE = 112
_BUILTIN_TOWERS = 3


@dataclass(frozen=True)
class TensorDecl:
    """A declared input or output: name, dtype name and shape (None = unknown dim/rank)."""

    name: str
    dtype: str
    shape: tuple[int | None, ...] | None

    def describe(self) -> str:
        if self.shape is None:
            return f"{self.dtype}[unknown rank]"
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype}[{dims}]"


@dataclass(frozen=True)
class LoadedWorkload:
    """A model ready to serve requests on fixed synthesised inputs."""

    kind: ModelFormat
    signature: str | None
    signature_digest: str
    #: input name -> "dtype[shape]" of the synthesised tensor
    inputs: dict[str, str]
    #: runs one request and waits for its outputs; safe to call from several threads at once
    request: Callable[[], None]


def load_workload(
    kind: ModelFormat, path: str | None, signature: str, batch_size: int
) -> LoadedWorkload:
    """Load what ``kind`` names; every problem with the model is a one-line ModelError."""
    if batch_size < 1:
        raise ModelError(f"batch size {batch_size}: must be at least 1")
    if kind == "builtin":
        return _builtin(batch_size)
    if path is None:
        raise ModelError(f"workload kind {kind!r} needs a model path")
    if kind == "savedmodel":
        return _savedmodel(path, signature, batch_size)
    if kind == "keras":
        return _keras(path, batch_size)
    raise ModelError(f"unknown workload kind {kind!r}")


# --------------------------------------------------------------------------------------------------
# Built-in workload
# --------------------------------------------------------------------------------------------------


class _BuiltinModel(tf.Module):  # type: ignore[misc]
    """A small CNN with three independent conv towers and a pooled shortcut into a dense head.

    The towers do not depend on each other, so TF's inter-op pool can run them at once; the
    convolutions and matmuls are what intra-op threads split. About 3 ms per request on one core
    of CI's machine, so a trial of a few seconds sees hundreds of requests.
    """

    def __init__(self) -> None:
        super().__init__(name="builtin")
        rng = np.random.default_rng(SEED)

        def weight(*shape: int) -> Any:
            fan_in = int(np.prod(shape[:-1]))
            values = rng.normal(0.0, (2.0 / fan_in) ** 0.5, size=shape).astype(np.float32)
            return tf.Variable(values, trainable=False)

        self.towers = [
            [weight(3, 3, 3, 32), weight(3, 3, 32, 64), weight(3, 3, 64, 64)]
            for _ in range(_BUILTIN_TOWERS)
        ]
        pooled = (_BUILTIN_SIDE // 4) ** 2 * 3
        self.dense = [
            weight(_BUILTIN_TOWERS * 64 + pooled, 256),
            weight(256, 128),
            weight(128, 10),
        ]

    @tf.function(  # type: ignore[untyped-decorator]
        input_signature=[
            tf.TensorSpec([None, _BUILTIN_SIDE, _BUILTIN_SIDE, 3], tf.float32, name="image")
        ]
    )
    def __call__(self, image: Any) -> Any:
        features = []
        for dilation, (first, second, third) in enumerate(self.towers, start=1):
            h = tf.nn.relu(tf.nn.conv2d(image, first, 1, "SAME", dilations=dilation))
            h = tf.nn.max_pool2d(h, 2, 2, "VALID")
            h = tf.nn.relu(tf.nn.conv2d(h, second, 1, "SAME"))
            h = tf.nn.max_pool2d(h, 2, 2, "VALID")
            h = tf.nn.relu(tf.nn.conv2d(h, third, 1, "SAME"))
            features.append(tf.reduce_mean(h, axis=[1, 2]))
        shortcut = tf.nn.avg_pool2d(image, 4, 4, "VALID")
        features.append(tf.reshape(shortcut, [tf.shape(image)[0], -1]))
        h = tf.concat(features, axis=1)
        h = tf.nn.relu(tf.matmul(h, self.dense[0]))
        h = tf.nn.relu(tf.matmul(h, self.dense[1]))
        return {"logits": tf.matmul(h, self.dense[2])}


def _builtin(batch_size: int) -> LoadedWorkload:
    model = _BuiltinModel()
    declared = [TensorDecl("image", "float32", (None, _BUILTIN_SIDE, _BUILTIN_SIDE, 3))]
    outputs = [TensorDecl("logits", "float32", (None, 10))]
    tensors = synthesise(declared, batch_size)
    image = tensors["image"]
    return LoadedWorkload(
        kind="builtin",
        signature=None,
        signature_digest=spec_digest(declared, outputs, extra=BUILTIN_NAME),
        inputs=describe_tensors(tensors),
        request=lambda: _wait(model(image)),
    )


# --------------------------------------------------------------------------------------------------
# SavedModel and .keras
# --------------------------------------------------------------------------------------------------


def _savedmodel(path: str, signature: str, batch_size: int) -> LoadedWorkload:
    try:
        loaded = tf.saved_model.load(path)
    except Exception as exc:
        raise ModelError(f"{path}: not a loadable SavedModel: {_why(exc)}") from None
    signatures = dict(getattr(loaded, "signatures", {}) or {})
    if not signatures:
        raise ModelError(f"{path}: the SavedModel has no signatures to serve")
    if signature not in signatures:
        known = ", ".join(sorted(signatures))
        raise ModelError(f"{path}: no signature {signature!r}; it has: {known}")
    function = signatures[signature]
    _, kw_specs = function.structured_input_signature
    declared = [_decl(name, spec.dtype, spec.shape) for name, spec in sorted(kw_specs.items())]
    outputs = [
        _decl(name, spec.dtype, spec.shape)
        for name, spec in sorted(dict(function.structured_outputs).items())
    ]
    tensors = synthesise(declared, batch_size, where=path)
    _check_first_call(path, lambda: _wait(function(**tensors)), tensors)
    # Keep the loaded object alive: signature functions only hold weak references to it.
    return LoadedWorkload(
        kind="savedmodel",
        signature=signature,
        signature_digest=spec_digest(declared, outputs),
        inputs=describe_tensors(tensors),
        request=lambda: _wait(function(**tensors), keep=loaded),
    )


def _keras(path: str, batch_size: int) -> LoadedWorkload:
    import keras

    try:
        model = keras.models.load_model(path, compile=False)
    except Exception as exc:
        raise ModelError(f"{path}: not a loadable Keras model: {_why(exc)}") from None
    try:
        model_inputs = list(model.inputs)
        model_outputs = list(model.outputs)
    except Exception:
        model_inputs, model_outputs = [], []
    if not model_inputs:
        raise ModelError(f"{path}: the Keras model declares no inputs (a subclassed model?)")
    names = _unique_names(
        [str(getattr(t, "name", "") or f"input_{i}") for i, t in enumerate(model_inputs)]
    )
    declared = [_decl(n, t.dtype, t.shape) for n, t in zip(names, model_inputs, strict=True)]
    out_names = _unique_names(
        [str(getattr(t, "name", "") or f"output_{i}") for i, t in enumerate(model_outputs)]
    )
    outputs = [_decl(n, t.dtype, t.shape) for n, t in zip(out_names, model_outputs, strict=True)]
    tensors = synthesise(declared, batch_size, where=path)
    arguments = [tensors[d.name] for d in declared]
    specs = [tf.TensorSpec(d.shape, d.dtype, name=d.name) for d in declared]
    single = len(arguments) == 1

    # A fixed input signature, as TF Serving runs it: no Python per call, no retracing.
    @tf.function(input_signature=specs)  # type: ignore[untyped-decorator]
    def serve(*xs: Any) -> Any:
        return model(xs[0] if single else list(xs), training=False)

    _check_first_call(path, lambda: _wait(serve(*arguments)), tensors)
    return LoadedWorkload(
        kind="keras",
        signature=None,
        signature_digest=spec_digest(declared, outputs),
        inputs=describe_tensors(tensors),
        request=lambda: _wait(serve(*arguments)),
    )


def _check_first_call(path: str, call: Callable[[], None], tensors: dict[str, Any]) -> None:
    """Run one request now, so a model that rejects its synthesised inputs fails as a ModelError."""
    try:
        call()
    except Exception as exc:
        fed = ", ".join(f"{k}={v}" for k, v in describe_tensors(tensors).items())
        raise ModelError(
            f"{path}: the model failed on synthesised inputs ({fed}): {_why(exc)}"
        ) from None


# --------------------------------------------------------------------------------------------------
# Input synthesis
# --------------------------------------------------------------------------------------------------


def synthesise(
    declared: Sequence[TensorDecl], batch_size: int, *, where: str = "built-in workload"
) -> dict[str, Any]:
    """Fixed-seed tensors for each declared input, by the rules in the module docstring."""
    rng = np.random.default_rng(SEED)
    shapes = {d.name: _concrete_shape(d, batch_size, where) for d in declared}
    total = 0
    for d in declared:
        itemsize = tf.as_dtype(d.dtype).size
        total += int(np.prod(shapes[d.name], dtype=np.int64)) * itemsize
    if total > MAX_INPUT_BYTES:
        raise ModelError(
            f"{where}: batch size {batch_size} makes the inputs {total / 2**30:.1f} GiB; "
            f"limit {MAX_INPUT_BYTES // 2**30} GiB"
        )
    return {d.name: tf.constant(_values(d, shapes[d.name], rng, where)) for d in declared}


def _concrete_shape(d: TensorDecl, batch_size: int, where: str) -> tuple[int, ...]:
    if d.shape is None:
        raise ModelError(f"{where}: input {d.name!r} has an unknown rank; cannot synthesise it")
    dims: list[int] = []
    for index, dim in enumerate(d.shape):
        if index == 0:
            if dim is None:
                dims.append(batch_size)
                continue
            if dim != batch_size:
                raise ModelError(
                    f"{where}: input {d.name!r} {d.describe()} has a fixed batch dimension {dim}; "
                    f"use batch size {dim} (asked for {batch_size})"
                )
        elif dim is None:
            raise ModelError(
                f"{where}: input {d.name!r} {d.describe()} has an unknown dimension {index}; "
                "only the first (batch) dimension can be filled in"
            )
        dims.append(dim)
    return tuple(dims)


def _values(d: TensorDecl, shape: tuple[int, ...], rng: np.random.Generator, where: str) -> Any:
    dtype = tf.as_dtype(d.dtype)
    if dtype == tf.string:
        raise ModelError(
            f"{where}: input {d.name!r} is a string tensor; the advisor cannot synthesise "
            "meaningful strings (serve a model whose signature takes numeric tensors)"
        )
    if dtype.is_bool:
        return rng.random(shape) < 0.5
    if dtype.is_floating:
        return rng.random(shape).astype(dtype.as_numpy_dtype)
    if dtype.is_integer:
        return rng.integers(0, INT_HIGH, size=shape).astype(dtype.as_numpy_dtype)
    raise ModelError(
        f"{where}: input {d.name!r} has dtype {dtype.name}, which cannot be synthesised"
    )


def describe_tensors(tensors: dict[str, Any]) -> dict[str, str]:
    """name -> "float32[1,224,224,3]", as the tensors were really fed."""
    return {
        name: f"{t.dtype.name}[{','.join(str(int(d)) for d in t.shape)}]"
        for name, t in tensors.items()
    }


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


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------


def _decl(name: str, dtype: Any, shape: Any) -> TensorDecl:
    dtype_name = tf.as_dtype(dtype).name
    if shape is None:
        return TensorDecl(name, dtype_name, None)
    dims = tf.TensorShape(shape)
    if dims.rank is None:
        return TensorDecl(name, dtype_name, None)
    return TensorDecl(name, dtype_name, tuple(dims.as_list()))


def _unique_names(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        count = seen.get(name, 0)
        seen[name] = count + 1
        unique.append(name if count == 0 else f"{name}_{count}")
    return unique


def _wait(outputs: Any, keep: object = None) -> None:
    """Bring every output to the host, as a server does before it answers."""
    del keep
    for tensor in tf.nest.flatten(outputs):
        tensor.numpy()


#: lines of a TF OpError message that locate the failing node but say nothing to a user
_TF_NOISE = ("Graph execution error", "Detected at node", "<stack traces", "[[")
_TF_OP_SUFFIX = re.compile(r"\s*\[Op:[^\]]*\]$")


def _why(exc: BaseException) -> str:
    """The part of an exception a user can act on, on one line."""
    lines = [line.strip() for line in str(exc).splitlines()]
    kept = [line for line in lines if line and not line.startswith(_TF_NOISE)]
    text = _TF_OP_SUFFIX.sub("", " ".join(kept))
    return one_line(text or type(exc).__name__)
