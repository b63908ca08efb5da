"""Build the small models the trial tests load: ``python build_models.py OUT_DIR``.

Run as a child process so that tensorflow never enters the pytest process. Every model is tiny
(milliseconds per request) and built from fixed seeds; each one exercises one loading rule.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras
import numpy as np
import tensorflow as tf

RNG = np.random.default_rng(7)


def weights(*shape: int) -> tf.Variable:
    return tf.Variable(RNG.normal(size=shape).astype(np.float32))


class Dense(tf.Module):
    """serving_default: float32[?,16] -> scores; by_ids: int64[?,4] looked up in a 4-row table."""

    def __init__(self) -> None:
        super().__init__()
        self.w = weights(16, 8)
        self.table = weights(4, 8)

    @tf.function(input_signature=[tf.TensorSpec([None, 16], tf.float32, name="features")])
    def serve(self, features: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"scores": tf.nn.relu(features @ self.w)}

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.int64, name="ids")])
    def by_ids(self, ids: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"pooled": tf.reduce_sum(tf.gather(self.table, ids), axis=1)}


def save(module: tf.Module, path: Path, **signatures: object) -> None:
    tf.saved_model.save(module, str(path), signatures=signatures)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    good = Dense()
    save(good, out / "sm_good", serving_default=good.serve, by_ids=good.by_ids)

    strings = tf.Module()
    strings.f = tf.function(
        lambda text: {"length": tf.strings.length(text)},
        input_signature=[tf.TensorSpec([None], tf.string, name="text")],
    )
    save(strings, out / "sm_string", serving_default=strings.f)

    unknown = tf.Module()
    unknown.f = tf.function(
        lambda x: {"y": x * 2.0},
        input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")],
    )
    save(unknown, out / "sm_unknown_dim", serving_default=unknown.f)

    fixed = tf.Module()
    fixed.f = tf.function(
        lambda x: {"y": x + 1.0},
        input_signature=[tf.TensorSpec([4, 16], tf.float32, name="x")],
    )
    save(fixed, out / "sm_fixed_batch", serving_default=fixed.f)

    def refuses_small_values(x: tf.Tensor) -> dict[str, tf.Tensor]:
        tf.debugging.assert_greater(x, 2.0, message="inputs must exceed 2")
        return {"y": x}

    fails = tf.Module()
    fails.f = tf.function(
        refuses_small_values, input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")]
    )
    save(fails, out / "sm_fails", serving_default=fails.f)

    corrupt = tf.Module()
    corrupt.f = tf.function(
        lambda x: {"y": x}, input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")]
    )
    save(corrupt, out / "sm_corrupt", serving_default=corrupt.f)
    (out / "sm_corrupt" / "saved_model.pb").write_bytes(b"\x08\x96\x01 definitely not a proto")

    keras.utils.set_random_seed(7)
    image = keras.Input(shape=(16, 16, 3), name="image")
    h = keras.layers.Conv2D(8, 3, activation="relu")(image)
    h = keras.layers.GlobalAveragePooling2D()(h)
    keras.Model(image, keras.layers.Dense(4)(h)).save(out / "cnn.keras")

    numbers = keras.Input(shape=(8,), name="numbers")
    tokens = keras.Input(shape=(3,), dtype="int32", name="tokens")
    embedded = keras.layers.Flatten()(keras.layers.Embedding(4, 2)(tokens))
    joined = keras.layers.Concatenate()([keras.layers.Dense(4)(numbers), embedded])
    keras.Model([numbers, tokens], keras.layers.Dense(1)(joined)).save(out / "two_inputs.keras")

    (out / "garbage.keras").write_bytes(RNG.bytes(2048))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
