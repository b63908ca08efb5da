"""What a trial runs, the subject (the model under test): the loaders of the built-in network, a
user's SavedModel and a .keras file, each ending in a ``LoadedSubject`` whose ``request()`` is one
inference.

Imports tensorflow, so only the trial child (``advisor.trials.child.trial``) may import this module:
thread settings are read once when TF starts, and the parent must stay TF-free to run many
settings. A model is fed recorded requests where there are some (``advisor.trials.child.replay``:
the model's warmup file or ``--requests FILE``, replayed as recorded, in a fixed cycle), else
inputs synthesised from its own signature and graph (``advisor.trials.child.synthesis``, by the
rules its docstring gives; the graph read by ``advisor.trials.child.graph``). The built-in model
is ``advisor.trials.child.builtin``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from advisor.errors import ModelError
from advisor.models import InputsSource, ModelFormat
from advisor.models.input_shape import parse_input_shapes
from advisor.trials.child import graph, synthesis
from advisor.trials.child.builtin import load_builtin
from advisor.trials.child.loaded import (
    LoadedSubject,
    signature_inputs,
    spec_digest,
    tensor_decl,
    wait,
    why,
)

if TYPE_CHECKING:
    from advisor.trials.requestfile import RequestsSource


def load_subject(
    model_format: ModelFormat,
    path: str | None,
    signature: str,
    batch_size: int,
    replay: RequestsSource | None = None,
    *,
    input_shape: str | None = None,
) -> LoadedSubject:
    """Load what ``model_format`` names; every problem with the model is a one-line ModelError,
    every problem with the requests to replay a one-line RequestsError.

    ``replay``: the requests to replay (None: synthesise inputs); ``input_shape``:
    ``--input-shape`` as the options spell it (synthesis only)."""
    if batch_size < 1:
        raise ModelError(f"batch size {batch_size}: must be at least 1")
    try:
        shapes = {} if input_shape is None else parse_input_shapes(input_shape)
    except ValueError as exc:
        raise ModelError(f"--input-shape {input_shape!r}: {exc}") from None
    if model_format == "builtin":
        if shapes:
            raise ModelError("--input-shape names inputs, but the built-in model takes none")
        return load_builtin(batch_size)
    if path is None:
        raise ModelError(f"model format {model_format!r} needs a model path")
    if model_format == "savedmodel":
        return _savedmodel(path, signature, batch_size, replay, shapes)
    if model_format == "keras":
        return _keras(path, batch_size, replay, shapes)
    raise ModelError(f"unknown model format {model_format!r}")


def _savedmodel(
    path: str,
    signature: str,
    batch_size: int,
    replay: RequestsSource | None,
    shapes: dict[str, tuple[int, ...]],
) -> LoadedSubject:
    try:
        loaded = tf.saved_model.load(path)
    except Exception as exc:
        raise ModelError(f"{path}: not a loadable SavedModel: {why(exc)}") from None
    signatures = dict(getattr(loaded, "signatures", {}) or {})
    if not signatures:
        raise ModelError(f"{path}: the SavedModel has no signatures to serve")
    if signature not in signatures:
        known = ", ".join(sorted(signatures))
        raise ModelError(f"{path}: no signature {signature!r}; it has: {known}")
    function = signatures[signature]
    # declared in the order the signature's function takes them (its keywords, sorted)
    declared = signature_inputs(function)
    outputs = [
        tensor_decl(name, spec.dtype, spec.shape)
        for name, spec in sorted(dict(function.structured_outputs).items())
    ]
    digest = spec_digest(declared, outputs)
    if replay is not None:
        # the request reader is loaded only where requests are replayed
        from advisor.trials.child.replay import Callables, KeywordCall, replayed

        callables: Callables = {
            str(name): (signature_inputs(fn), KeywordCall(fn, loaded))
            for name, fn in sorted(signatures.items())
        }
        return replayed(replay, "savedmodel", signature, digest, callables)
    facts = graph.read_graph(function, declared)
    tensors, detail = synthesis.synthesise(
        declared, batch_size, where=path, graph=facts, input_shapes=shapes, model_path=path
    )
    _check_first_call(path, lambda: wait(function(**tensors)), tensors)
    # Keep the loaded object alive: signature functions only hold weak references to it.
    return LoadedSubject(
        model_format="savedmodel",
        signature=signature,
        signature_digest=digest,
        inputs=synthesis.describe_tensors(tensors),
        request=lambda: wait(function(**tensors), keep=loaded, rows=1),
        inputs_source=InputsSource(kind="synthesised", detail=detail),
    )


def _keras(
    path: str, batch_size: int, replay: RequestsSource | None, shapes: dict[str, tuple[int, ...]]
) -> LoadedSubject:
    import keras

    try:
        model = keras.models.load_model(path, compile=False)
    except Exception as exc:
        raise ModelError(f"{path}: not a loadable Keras model: {why(exc)}") from None
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
    declared = [tensor_decl(n, t.dtype, t.shape) for n, t in zip(names, model_inputs, strict=True)]
    out_names = _unique_names(
        [str(getattr(t, "name", "") or f"output_{i}") for i, t in enumerate(model_outputs)]
    )
    outputs = [
        tensor_decl(n, t.dtype, t.shape) for n, t in zip(out_names, model_outputs, strict=True)
    ]
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

        from advisor.trials.child.replay import replayed

        default = "serving_default"
        return replayed(replay, "keras", default, digest, {default: (declared, by_name)})
    try:
        facts = graph.read_graph(serve.get_concrete_function(), declared)
    except Exception:  # a model that cannot be traced fails on its first call, said there
        facts = None
    # no warmup file to name: TF Serving serves SavedModels
    tensors, detail = synthesis.synthesise(
        declared, batch_size, where=path, graph=facts, input_shapes=shapes
    )
    arguments = [tensors[d.name] for d in declared]
    _check_first_call(path, lambda: wait(serve(*arguments)), tensors)
    return LoadedSubject(
        model_format="keras",
        signature=None,
        signature_digest=digest,
        inputs=synthesis.describe_tensors(tensors),
        request=lambda: wait(serve(*arguments), rows=1),
        inputs_source=InputsSource(kind="synthesised", detail=detail),
    )


def _check_first_call(path: str, call: Callable[[], object], tensors: dict[str, Any]) -> None:
    """Run one request now, so a model that rejects its synthesised inputs fails as a ModelError."""
    try:
        call()
    except Exception as exc:
        fed = ", ".join(f"{k}={v}" for k, v in synthesis.describe_tensors(tensors).items())
        raise ModelError(
            f"{path}: the model failed on synthesised inputs ({fed}): {why(exc)}"
        ) from None


def _unique_names(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        count = seen.get(name, 0)
        seen[name] = count + 1
        unique.append(name if count == 0 else f"{name}_{count}")
    return unique
