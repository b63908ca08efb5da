"""Load a model as a trial child does and print what was synthesised for it, as JSON:
``python synthesis_probe.py KIND PATH BATCH [INPUT_SHAPE]``.

Run as a child process so that tensorflow never enters the pytest process. It goes through the
real ``load_subject`` (graph reading, synthesis, the model's first call), watching what
``synthesise`` returns: ``{"synthesised_from", "inputs": {name: {"dtype", "shape", "values"}}}``,
serialized tf.Examples decoded into ``{feature: [values]}``; or ``{"error": ModelError line}``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import tensorflow as tf

from advisor.errors import ModelError
from advisor.trials.child import subjects, synthesis


def _example(data: bytes) -> dict[str, list[Any]]:
    example = tf.train.Example.FromString(data)
    out: dict[str, list[Any]] = {}
    for key, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        values = list(getattr(feature, kind).value) if kind else []
        out[key] = [v.decode() if isinstance(v, bytes) else v for v in values]
    return out


def _plain(tensor: Any) -> dict[str, Any]:
    array = tensor.numpy()
    flat = array.reshape(-1).tolist()
    if tensor.dtype == tf.string:
        try:
            values: list[Any] = [_example(v) for v in flat]
        except Exception:
            values = [v.decode() for v in flat]
    else:
        values = flat
    return {"dtype": tensor.dtype.name, "shape": list(array.shape), "values": values}


def main(kind: str, path: str, batch: int, input_shape: str | None) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    real = synthesis.synthesise

    def watch(*args: Any, **kwargs: Any) -> Any:
        tensors, source = real(*args, **kwargs)
        seen.update(tensors)
        return tensors, source

    synthesis.synthesise = watch  # type: ignore[assignment]
    try:
        loaded = subjects.load_subject(
            kind, path, "serving_default", batch, input_shape=input_shape
        )
    except ModelError as exc:
        return {"error": str(exc)}
    return {
        "synthesised_from": loaded.inputs_source.detail,
        "inputs": {name: _plain(t) for name, t in seen.items()},
        "described": loaded.inputs,
    }


if __name__ == "__main__":
    shape = sys.argv[4] if len(sys.argv) > 4 else None
    print(json.dumps(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), shape)))
