"""Model shapes the benchmark builds itself, besides the advisor's built-in model.

Why: advice that only fits the advisor's own toy model proves little. These shapes stress the
thread pools differently: one big matmul chain (intra-op parallelism matters) and an attention
block (several independent branches, so inter-op parallelism can matter too); and two networks
nobody here wrote (Keras' MobileNetV2 and ResNet50 with random weights: the speed of a
convolution does not depend on its weights), the ``networks`` family. Each is saved as a
SavedModel, the format TF Serving and the advisor's ``--model`` both take.

Imported only inside a child process (it imports TensorFlow).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

#: shape name -> one-line description (the plan and the docs list these without importing TF)
SHAPES: dict[str, str] = {
    "wide_mlp": "MLP 1024 -> 2048 -> 2048 -> 1000 (relu), float32, ~6.3 M weights",
    "transformer": "one transformer encoder block: seq 64, d_model 256, 4 heads, ffn 1024",
    "mobilenet_v2": "Keras' MobileNetV2, random weights, one 224x224x3 image: ~3.5 M weights",
    "resnet50": "Keras' ResNet50, random weights, one 224x224x3 image: ~25.6 M weights",
}


def _wide_mlp(keras: Any) -> Any:
    inputs = keras.Input(shape=(1024,), name="features")
    x = keras.layers.Dense(2048, activation="relu")(inputs)
    x = keras.layers.Dense(2048, activation="relu")(x)
    outputs = keras.layers.Dense(1000)(x)
    return keras.Model(inputs, outputs, name="wide_mlp")


def _transformer(keras: Any) -> Any:
    seq, d_model, heads, ffn = 64, 256, 4, 1024
    inputs = keras.Input(shape=(seq, d_model), name="tokens")
    attn = keras.layers.MultiHeadAttention(num_heads=heads, key_dim=d_model // heads)(
        inputs, inputs
    )
    x = keras.layers.LayerNormalization()(inputs + attn)
    hidden = keras.layers.Dense(ffn, activation="gelu")(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(d_model)(hidden))
    outputs = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, outputs, name="transformer_block")


def _mobilenet_v2(keras: Any) -> Any:
    return keras.applications.MobileNetV2(weights=None)


def _resnet50(keras: Any) -> Any:
    return keras.applications.ResNet50(weights=None)


_BUILDERS: dict[str, Callable[[Any], Any]] = {
    "wide_mlp": _wide_mlp,
    "transformer": _transformer,
    "mobilenet_v2": _mobilenet_v2,
    "resnet50": _resnet50,
}


def build_savedmodel(shape: str, out_dir: Path) -> Path:
    """Build ``shape`` with fixed seeds and export it as a SavedModel under ``out_dir``."""
    import keras

    if shape not in _BUILDERS:
        raise ValueError(f"unknown shape {shape!r}; known: {', '.join(sorted(_BUILDERS))}")
    keras.utils.set_random_seed(6)
    model = _BUILDERS[shape](keras)
    target = out_dir / shape
    model.export(str(target), format="tf_saved_model", verbose=False)
    return target
