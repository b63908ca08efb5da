"""What a trial runs, the subject (the model under test): the built-in network, a user's
SavedModel or .keras file, and their inputs.

Imports tensorflow, so only the trial child (``advisor.trials.child.trial``) may import this module:
thread settings are read once when TF starts, and the parent must stay TF-free to run many
settings. Everything here ends in a ``LoadedSubject`` whose ``request()`` is one inference: on
recorded requests where there are some (``advisor.trials.child.requests``: the model's warmup
file or ``--requests FILE``, replayed as recorded, in a fixed cycle), else on inputs synthesised
from the model's own signature.

Input synthesis rules (documented for users in the error messages; what the graph says about
the values is read by ``advisor.trials.child.synthesis``):
- the first dimension, when unknown, is the batch: it is filled from ``batch_size``; when it is
  fixed, ``batch_size`` must equal it (a model exported for batch 8 cannot be fed batch 1);
- any other unknown dimension, or an unknown rank, takes its size from ``--input-shape``, and
  is refused without it: a guess (1? 224?) would measure a different model than the one served;
- floats are uniform in [0, 1), booleans are random; integers that index a table (an embedding,
  a gather) are spread over its rows, others are small non-negative values (0..3); strings are
  serialized tf.Examples built from the graph's parse spec, or categories from its vocabulary;
  raw text, image bytes and exotic dtypes are refused.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from advisor.errors import ModelError, one_line
from advisor.models import ModelFormat
from advisor.models.input_shape import parse_input_shapes
from advisor.trials.child import synthesis
from advisor.trials.child.decl import MAX_INPUT_BYTES, TensorDecl

#: one seed for weights and inputs: every trial must run the very same computation.
SEED = 20240601


BUILTIN_NAME = "builtin-cnn-v1"
_BUILTIN_SIDE = 112
_BUILTIN_TOWERS = 3


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
    #: where the inputs came from: ``InputsSource``'s fields (a model's synthesised inputs:
    #: ``detail`` says what synthesis read, ``synthesis.Synthesis.description``)
    inputs_source: dict[str, Any] = field(default_factory=lambda: {"kind": "synthesised"})


@dataclass(frozen=True)
class Replay:
    """Recorded requests to replay: the file and where it came from (``RequestsOrigin``)."""

    path: str
    origin: str


def load_subject(
    model_format: ModelFormat,
    path: str | None,
    signature: str,
    batch_size: int,
    replay: Replay | None = None,
    *,
    input_shape: str | None = None,
) -> LoadedSubject:
    """Load what ``model_format`` names; every problem with the model is a one-line ModelError,
    every problem with the requests to replay a one-line RequestsError.

    ``input_shape``: ``--input-shape`` as the options spell it (synthesis only)."""
    if batch_size < 1:
        raise ModelError(f"batch size {batch_size}: must be at least 1")
    try:
        shapes = {} if input_shape is None else parse_input_shapes(input_shape)
    except ValueError as exc:
        raise ModelError(f"--input-shape {input_shape!r}: {exc}") from None
    if model_format == "builtin":
        if shapes:
            raise ModelError("--input-shape names inputs, but the built-in model takes none")
        return _builtin(batch_size)
    if path is None:
        raise ModelError(f"model format {model_format!r} needs a model path")
    if model_format == "savedmodel":
        return _savedmodel(path, signature, batch_size, replay, shapes)
    if model_format == "keras":
        return _keras(path, batch_size, replay, shapes)
    raise ModelError(f"unknown model format {model_format!r}")


# --------------------------------------------------------------------------------------------------
# Built-in model
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


def _builtin(batch_size: int) -> LoadedSubject:
    model = _BuiltinModel()
    declared = [TensorDecl("image", "float32", (None, _BUILTIN_SIDE, _BUILTIN_SIDE, 3))]
    outputs = [TensorDecl("logits", "float32", (None, 10))]
    tensors, _ = synthesise(declared, batch_size)
    image = tensors["image"]
    return LoadedSubject(
        model_format="builtin",
        signature=None,
        signature_digest=spec_digest(declared, outputs, extra=BUILTIN_NAME),
        inputs=describe_tensors(tensors),
        request=lambda: _wait(model(image), rows=1),
    )


# --------------------------------------------------------------------------------------------------
# SavedModel and .keras
# --------------------------------------------------------------------------------------------------


def _savedmodel(
    path: str,
    signature: str,
    batch_size: int,
    replay: Replay | None,
    shapes: dict[str, tuple[int, ...]],
) -> LoadedSubject:
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
    digest = spec_digest(declared, outputs)
    if replay is not None:
        callables: Callables = {
            str(name): (_signature_inputs(fn), _KeywordCall(fn, loaded))
            for name, fn in sorted(signatures.items())
        }
        return _replayed(replay, "savedmodel", signature, digest, callables)
    # declared in the order the signature's function takes them (its keywords, sorted)
    graph = synthesis.read_graph(function, declared)
    tensors, source = synthesise(
        declared, batch_size, where=path, graph=graph, input_shapes=shapes, model_path=path
    )
    _check_first_call(path, lambda: _wait(function(**tensors)), tensors)
    # Keep the loaded object alive: signature functions only hold weak references to it.
    return LoadedSubject(
        model_format="savedmodel",
        signature=signature,
        signature_digest=digest,
        inputs=describe_tensors(tensors),
        request=lambda: _wait(function(**tensors), keep=loaded, rows=1),
        inputs_source={"kind": "synthesised", "detail": source},
    )


def _keras(
    path: str, batch_size: int, replay: Replay | None, shapes: dict[str, tuple[int, ...]]
) -> LoadedSubject:
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
    specs = [tf.TensorSpec(d.shape, d.dtype, name=d.name) for d in declared]
    single = len(declared) == 1

    # A fixed input signature, as TF Serving runs it: no Python per call, no retracing.
    @tf.function(input_signature=specs)  # type: ignore[untyped-decorator]
    def serve(*xs: Any) -> Any:
        return model(xs[0] if single else list(xs), training=False)

    digest = spec_digest(declared, outputs)
    if replay is not None:
        # a .keras file has one way in; requests name it as TF Serving's default signature
        def by_name(**named: Any) -> Any:
            return serve(*(named[d.name] for d in declared))

        default = "serving_default"
        return _replayed(replay, "keras", default, digest, {default: (declared, by_name)})
    try:
        graph = synthesis.read_graph(serve.get_concrete_function(), declared)
    except Exception:  # a model that cannot be traced fails on its first call, said there
        graph = None
    # no warmup file to name: TF Serving serves SavedModels
    tensors, source = synthesise(declared, batch_size, where=path, graph=graph, input_shapes=shapes)
    arguments = [tensors[d.name] for d in declared]
    _check_first_call(path, lambda: _wait(serve(*arguments)), tensors)
    return LoadedSubject(
        model_format="keras",
        signature=None,
        signature_digest=digest,
        inputs=describe_tensors(tensors),
        request=lambda: _wait(serve(*arguments), rows=1),
        inputs_source={"kind": "synthesised", "detail": source},
    )


# --------------------------------------------------------------------------------------------------
# Recorded requests
# --------------------------------------------------------------------------------------------------

#: a signature's declared inputs and how to call it with tensors by input name
Callables = dict[str, tuple[list[TensorDecl], Callable[..., Any]]]


def _signature_inputs(function: Any) -> list[TensorDecl]:
    _, kw_specs = function.structured_input_signature
    return [_decl(name, spec.dtype, spec.shape) for name, spec in sorted(kw_specs.items())]


class _KeywordCall:
    """A signature function called by input name, holding the loaded model alive (signature
    functions only hold weak references to it)."""

    def __init__(self, function: Any, keep: object) -> None:
        self.function = function
        self.keep = keep

    def __call__(self, **tensors: Any) -> Any:
        return self.function(**tensors)


def _replayed(
    replay: Replay,
    model_format: ModelFormat,
    default_signature: str,
    digest: str,
    callables: Callables,
) -> LoadedSubject:
    """The subject that replays ``replay``'s requests in a fixed cycle, each as recorded.

    Every distinct request runs once here, at every load: a model that rejects one fails before
    any trial, and no trial meets a request's shapes first in its measured window.
    """
    from advisor.trials.child import requests as recorded

    raw = recorded.read_once(replay.path)
    bound = recorded.bind(
        raw,
        {name: declared for name, (declared, _) in callables.items()},
        path=replay.path,
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
                _wait(call(**tensors))
        except Exception as exc:
            raise ModelError(
                f"{replay.path}: record {request.record}: the model failed on it: {_why(exc)}"
            ) from None
    lock = threading.Lock()
    position = [0]

    def replay_one() -> int:
        with lock:  # loops in several threads share one fixed order
            index = position[0]
            position[0] = (index + 1) % len(prepared)
        rows, calls = prepared[index]
        for call, tensors in calls:
            _wait(call(**tensors))
        return rows

    batches = [rows for rows, _ in prepared]
    return LoadedSubject(
        model_format=model_format,
        signature=default_signature if model_format == "savedmodel" else None,
        signature_digest=digest,
        inputs=_describe_replayed(bound),
        request=replay_one,
        inputs_source={
            "kind": replay.origin,
            "file": replay.path,
            "requests": len(prepared),
            "batch_sizes": [min(batches), max(batches)],
        },
    )


def _describe_replayed(bound: Sequence[Any]) -> dict[str, str]:
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


def _check_first_call(path: str, call: Callable[[], object], tensors: dict[str, Any]) -> None:
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
    declared: Sequence[TensorDecl],
    batch_size: int,
    *,
    where: str = "built-in model",
    graph: synthesis.GraphFacts | None = None,
    input_shapes: Mapping[str, tuple[int, ...]] | None = None,
    model_path: str | None = None,
) -> tuple[dict[str, Any], str | None]:
    """Fixed-seed tensors for each declared input, by the rules in the module docstring, and
    what they were synthesised from (``synthesis.Synthesis.description``)."""
    rng = np.random.default_rng(SEED)
    given = dict(input_shapes or {})
    synthesis.check_input_shapes(declared, given, where)
    shapes = {
        d.name: synthesis.concrete_shape(d, batch_size, where, given.get(d.name)) for d in declared
    }
    total = 0
    for d in declared:
        itemsize = tf.as_dtype(d.dtype).size
        total += int(np.prod(shapes[d.name], dtype=np.int64)) * itemsize
    _check_size(total, batch_size, where)
    maker = synthesis.Synthesis(graph, rng, where=where, model_path=model_path, input_shapes=given)
    values = {d.name: maker.values(d, shapes[d.name]) for d in declared}
    # strings (serialized tf.Examples) are sized once made
    _check_size(total + sum(_string_bytes(v) for v in values.values()), batch_size, where)
    return {name: tf.constant(v) for name, v in values.items()}, maker.description()


def _check_size(total: int, batch_size: int, where: str) -> None:
    if total > MAX_INPUT_BYTES:
        raise ModelError(
            f"{where}: batch size {batch_size} makes the inputs {total / 2**30:.1f} GiB; "
            f"limit {MAX_INPUT_BYTES // 2**30} GiB"
        )


def _string_bytes(values: Any) -> int:
    if getattr(getattr(values, "dtype", None), "kind", "") != "O":
        return 0
    return sum(len(v) for v in values.reshape(-1))


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


def _wait(outputs: Any, keep: object = None, rows: int = 0) -> int:
    """Bring every output to the host, as a server does before it answers; ``rows``, the
    request's examples, is handed back for the caller's count."""
    del keep
    for tensor in tf.nest.flatten(outputs):
        tensor.numpy()
    return rows


#: lines of a TF OpError message that locate the failing node but say nothing to a user
_TF_NOISE = ("Graph execution error", "Detected at node", "<stack traces", "[[")
_TF_OP_SUFFIX = re.compile(r"\s*\[Op:[^\]]*\]$")


def _why(exc: BaseException) -> str:
    """The part of an exception a user can act on, on one line."""
    lines = [line.strip() for line in str(exc).splitlines()]
    kept = [line for line in lines if line and not line.startswith(_TF_NOISE)]
    text = _TF_OP_SUFFIX.sub("", " ".join(kept))
    return one_line(text or type(exc).__name__)
