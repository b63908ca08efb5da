"""Small models of the five signature kinds teams serve with TF Serving on CPUs, each in TF
Serving's layout (``BASE/VERSION/saved_model.pb``, ``variables/``, ``assets.extra/``) with a
warmup file written through TF Serving's own protos.

Why here: the advisor's tests (request replay, synthesis from the graph, base paths) and the
benchmark's ``serving`` family need the same realistic models, and neither may import the other
(``testkit/__init__.py``). The kinds are those issue 38 found refused:

- ``tfexample``: serialized ``tf.Example`` strings parsed in the graph (``tf.io.parse_example``:
  dense float and int features, a var-len string feature looked up in a vocabulary table and
  embedded), with ``classify`` and ``regress`` signatures as TF Serving's Classify/Regress APIs
  want them (method names patched into the SavedModel, input ``inputs``);
- ``text``: raw sentences, tokenised in the graph (``tf.strings.split``, a ``StaticHashTable``
  vocabulary, an embedding, two 1-D convolutions, masked pooling);
- ``bert``: ``input_ids``/``attention_mask`` int32 ``[batch, None]`` (unknown sequence length),
  a 30,522-row vocabulary and two small transformer encoder blocks;
- ``image_bytes``: encoded JPEG bytes, decoded and resized in the graph (``tf.io.decode_jpeg``
  inside ``tf.map_fn``), then a small CNN;
- ``recommender``: an int64 user id and 100 candidate item ids per example into large tables
  (1M x 16 users, 200k x 16 items: about 75 MB on disk, the largest of the five; the others are
  2-21 MB) and an MLP scoring every candidate.

Weights are Keras random initialisations under a fixed seed; the warmup requests
(``testkit.serving_requests``: batch sizes 1..8 unless given, sequence lengths 8..128 for ``bert``,
real JPEGs from ``tf.io.encode_jpeg``, sentences from the vocabulary, ids spread over the whole
tables) come from a seeded NumPy generator, so one seed gives the same bytes every time. Sizes are
chosen so one request takes a few milliseconds on one core of the project's CI machine with 1/1
threads over the warmup requests (``tfexample`` lightest, ``bert`` heaviest; the figures:
docs/benchmark.md, "The serving family").

TensorFlow and ``tensorflow_serving`` are imported inside the functions that need them: building
starts TensorFlow, so callers run it in a child process (``python -m testkit.serving_models
build KIND BASE``) when their own process must stay free of it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit.serving_requests import (
    BERT_MAX_LEN,
    BERT_VOCAB,
    CANDIDATES,
    Request,
    batch_sizes,
    bert_requests,
    image_requests,
    recommender_requests,
    text_requests,
    tfexample_requests,
    words,
    write_warmup,
)

#: kind -> one line for plans, docs and tables (no TensorFlow needed to read it)
KINDS: dict[str, str] = {
    "tfexample": "serialized tf.Example strings parsed in the graph (+ classify/regress)",
    "text": "raw sentences tokenised in the graph, vocabulary table, two 1-D convs",
    "bert": "input_ids/attention_mask int32 [batch, None], 30,522-row vocab, 2 encoder blocks",
    "image_bytes": "JPEG bytes decoded and resized in the graph (map_fn), small CNN",
    "recommender": "int64 user id + 100 item ids into 1M x 16 and 200k x 16 tables, MLP",
}

#: where TF Serving looks for a version's warmup requests
WARMUP_RELPATH = "assets.extra/tf_serving_warmup_requests"
DEFAULT_SEED = 6
DEFAULT_REQUESTS = 32

TF_CLASSIFY = "tensorflow/serving/classify"
TF_REGRESS = "tensorflow/serving/regress"

# the vocabularies' sizes; ids beyond them map to row 0 (out of vocabulary)
EXAMPLE_TERMS = 2_000
TEXT_WORDS = 5_000
USERS = 1_000_000
ITEMS = 200_000
IMAGE_SIDE = 128


@dataclass(frozen=True)
class Built:
    """One model version on disk, and what its warmup file holds."""

    kind: str
    base: Path
    version_dir: Path
    warmup: Path | None
    #: batch sizes of the warmup requests, in the file's order
    batch_sizes: tuple[int, ...]
    #: input name -> dtype and shape with None for unknown dimensions
    inputs: dict[str, str]

    def dump(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "base": str(self.base),
            "version_dir": str(self.version_dir),
            "warmup": None if self.warmup is None else str(self.warmup),
            "batch_sizes": list(self.batch_sizes),
            "inputs": self.inputs,
        }


# --- the models -------------------------------------------------------------------------------


def _vocab_table(tf: Any, vocab: list[str]) -> Any:
    keys = tf.constant(vocab)
    values = tf.range(1, len(vocab) + 1, dtype=tf.int64)
    return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), 0)


def _mlp(
    keras: Any, widths: list[int], last: int, activation: str | None, shape: tuple[Any, ...]
) -> Any:
    """Dense layers over the last axis of inputs of ``shape`` (batch first)."""
    inputs = keras.Input(shape=shape[1:])
    x = inputs
    for width in widths:
        x = keras.layers.Dense(width, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(last, activation=activation)(x))


def _embedding(keras: Any, rows: int, dims: int) -> Any:
    layer = keras.layers.Embedding(rows, dims)
    layer.build((None,))
    return layer


def _ragged_mean(tf: Any, ragged: Any) -> Any:
    """Mean over each row's values; an empty row gives zeros (no NaN)."""
    total = tf.reduce_sum(ragged, axis=1)
    count = tf.cast(tf.maximum(ragged.row_lengths(), 1), total.dtype)
    return total / count[:, None]


def _tfexample_module(tf: Any, keras: Any, vocab: list[str]) -> tuple[Any, dict[str, Any]]:
    spec = {
        "age": tf.io.FixedLenFeature([1], tf.float32),
        "income": tf.io.FixedLenFeature([1], tf.float32),
        "visits": tf.io.FixedLenFeature([1], tf.int64),
        "hour": tf.io.FixedLenFeature([1], tf.int64, default_value=[12]),
        "terms": tf.io.VarLenFeature(tf.string),
    }

    class Model(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.table = _vocab_table(tf, vocab)
            self.embed = _embedding(keras, len(vocab) + 1, 32)
            self.hour = _embedding(keras, 24, 8)
            self.mlp = _mlp(keras, [2048, 2048, 512], 1, None, (None, 32 + 8 + 3))

        def score(self, examples: Any) -> Any:
            parsed = tf.io.parse_example(examples, spec)
            terms = tf.RaggedTensor.from_sparse(parsed["terms"])
            ids = tf.ragged.map_flat_values(self.table.lookup, terms)
            pooled = _ragged_mean(tf, tf.ragged.map_flat_values(self.embed, ids))
            hour = self.hour(tf.clip_by_value(parsed["hour"][:, 0], 0, 23))
            dense = tf.concat(
                [
                    parsed["age"] / 100.0,
                    tf.math.log1p(tf.maximum(parsed["income"], 0.0)) / 12.0,
                    tf.math.log1p(tf.cast(parsed["visits"], tf.float32)),
                ],
                axis=1,
            )
            return self.mlp(tf.concat([pooled, hour, dense], axis=1))[:, 0]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])  # type: ignore[untyped-decorator]
        def predict(self, examples: Any) -> Any:
            return {"probabilities": tf.sigmoid(self.score(examples))}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])  # type: ignore[untyped-decorator]
        def regress(self, inputs: Any) -> Any:
            return {"outputs": self.score(inputs)}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])  # type: ignore[untyped-decorator]
        def classify(self, inputs: Any) -> Any:
            p = tf.sigmoid(self.score(inputs))
            scores = tf.stack([1.0 - p, p], axis=1)
            classes = tf.tile(tf.constant([["negative", "positive"]]), [tf.shape(p)[0], 1])
            return {"scores": scores, "classes": classes}

    model = Model()
    return model, {
        "serving_default": model.predict,
        "regress": model.regress,
        "classify": model.classify,
    }


def _text_module(tf: Any, keras: Any, vocab: list[str]) -> tuple[Any, dict[str, Any]]:
    class Model(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.table = _vocab_table(tf, vocab)
            self.embed = _embedding(keras, len(vocab) + 1, 128)
            self.conv1 = keras.layers.Conv1D(384, 5, padding="same", activation="relu")
            self.conv1.build((None, None, 128))
            self.conv2 = keras.layers.Conv1D(384, 5, padding="same", activation="relu")
            self.conv2.build((None, None, 384))
            self.head = _mlp(keras, [128], 5, "softmax", (None, 384))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="sentences")])  # type: ignore[untyped-decorator]
        def predict(self, sentences: Any) -> Any:
            tokens = tf.strings.split(tf.strings.lower(sentences))
            ids = tf.ragged.map_flat_values(self.table.lookup, tokens)
            mask = tf.cast(tf.sequence_mask(ids.row_lengths()), tf.float32)[:, :, None]
            x = self.embed(ids.to_tensor())
            x = self.conv2(self.conv1(x)) * mask
            pooled = tf.reduce_sum(x, axis=1) / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
            return {"probabilities": self.head(pooled)}

    model = Model()
    return model, {"serving_default": model.predict}


def _bert_module(tf: Any, keras: Any) -> tuple[Any, dict[str, Any]]:
    d_model, heads, ffn, blocks = 128, 4, 512, 2

    class Block(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.attn = keras.layers.MultiHeadAttention(heads, d_model // heads)
            self.attn.build((None, None, d_model), (None, None, d_model))
            self.norm1 = keras.layers.LayerNormalization()
            self.norm1.build((None, None, d_model))
            self.ffn = _mlp(keras, [ffn], d_model, None, (None, None, d_model))
            self.norm2 = keras.layers.LayerNormalization()
            self.norm2.build((None, None, d_model))

        def __call__(self, x: Any, mask: Any) -> Any:
            x = self.norm1(x + self.attn(x, x, attention_mask=mask))
            return self.norm2(x + self.ffn(x))

    class Model(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.tokens = _embedding(keras, BERT_VOCAB, d_model)
            self.positions = _embedding(keras, BERT_MAX_LEN, d_model)
            self.blocks = [Block() for _ in range(blocks)]
            self.pooler = _mlp(keras, [], 2, "softmax", (None, d_model))

        @tf.function(  # type: ignore[untyped-decorator]
            input_signature=[
                tf.TensorSpec([None, None], tf.int32, name="input_ids"),
                tf.TensorSpec([None, None], tf.int32, name="attention_mask"),
            ]
        )
        def predict(self, input_ids: Any, attention_mask: Any) -> Any:
            length = tf.shape(input_ids)[1]
            x = self.tokens(input_ids) + self.positions(tf.range(length))[None]
            mask = tf.cast(attention_mask[:, None, :], tf.bool)
            for block in self.blocks:
                x = block(x, mask)
            return {"probabilities": self.pooler(x[:, 0])}

    model = Model()
    return model, {"serving_default": model.predict}


def _image_module(tf: Any, keras: Any) -> tuple[Any, dict[str, Any]]:
    def decode(data: Any) -> Any:
        image = tf.io.decode_jpeg(data, channels=3)
        image = tf.image.resize(image, [IMAGE_SIDE, IMAGE_SIDE])
        return image / 255.0

    class Model(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            cnn = keras.Sequential(
                [
                    keras.layers.Conv2D(24, 3, strides=2, padding="same", activation="relu"),
                    keras.layers.Conv2D(48, 3, strides=2, padding="same", activation="relu"),
                    keras.layers.Conv2D(96, 3, strides=2, padding="same", activation="relu"),
                    keras.layers.Conv2D(128, 3, strides=2, padding="same", activation="relu"),
                    keras.layers.GlobalAveragePooling2D(),
                    keras.layers.Dense(10, activation="softmax"),
                ]
            )
            cnn.build((None, IMAGE_SIDE, IMAGE_SIDE, 3))
            self.cnn = cnn

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="image_bytes")])  # type: ignore[untyped-decorator]
        def predict(self, image_bytes: Any) -> Any:
            spec = tf.TensorSpec([IMAGE_SIDE, IMAGE_SIDE, 3], tf.float32)
            images = tf.map_fn(decode, image_bytes, fn_output_signature=spec)
            return {"probabilities": self.cnn(images)}

    model = Model()
    return model, {"serving_default": model.predict}


def _recommender_module(tf: Any, keras: Any, users: int, items: int) -> tuple[Any, dict[str, Any]]:
    dims = 16

    class Model(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.users = _embedding(keras, users, dims)
            self.items = _embedding(keras, items, dims)
            self.mlp = _mlp(keras, [1024, 256], 1, None, (None, CANDIDATES, 3 * dims))

        @tf.function(  # type: ignore[untyped-decorator]
            input_signature=[
                tf.TensorSpec([None], tf.int64, name="user_id"),
                tf.TensorSpec([None, CANDIDATES], tf.int64, name="item_ids"),
            ]
        )
        def predict(self, user_id: Any, item_ids: Any) -> Any:
            user = self.users(user_id)[:, None, :]
            item = self.items(item_ids)
            user = tf.broadcast_to(user, tf.shape(item))
            scores = self.mlp(tf.concat([user, item, user * item], axis=-1))[..., 0]
            return {"scores": scores}

    model = Model()
    return model, {"serving_default": model.predict}


def _set_method_names(version_dir: Path, methods: dict[str, str]) -> None:
    """TF2's saver writes every signature as Predict; TF Serving's Classify and Regress APIs
    accept only a signature whose method name says so."""
    from tensorflow.core.protobuf import saved_model_pb2

    pb = version_dir / "saved_model.pb"
    saved = saved_model_pb2.SavedModel.FromString(pb.read_bytes())
    for graph in saved.meta_graphs:
        for name, method in methods.items():
            graph.signature_def[name].method_name = method
    pb.write_bytes(saved.SerializeToString())


def build(
    kind: str,
    base: Path,
    *,
    version: int = 1,
    warmup_requests: int = DEFAULT_REQUESTS,
    batch_size: int | None = None,
    seed: int = DEFAULT_SEED,
    users: int = USERS,
    items: int = ITEMS,
) -> Built:
    """Build ``kind`` as ``base/version`` with a warmup file of ``warmup_requests`` requests
    (0: none); ``batch_size`` fixes every request's batch (default: 1..8, seeded)."""
    import keras
    import numpy as np
    import tensorflow as tf

    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; known: {', '.join(KINDS)}")
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    sizes = batch_sizes(rng, warmup_requests, batch_size)
    requests: Iterator[Request]
    methods: dict[str, str] = {}
    if kind == "tfexample":
        vocab = words(EXAMPLE_TERMS, seed)
        module, signatures = _tfexample_module(tf, keras, vocab)
        requests = tfexample_requests(rng, sizes, vocab)
        methods = {"classify": TF_CLASSIFY, "regress": TF_REGRESS}
    elif kind == "text":
        vocab = words(TEXT_WORDS, seed)
        module, signatures = _text_module(tf, keras, vocab)
        requests = text_requests(rng, sizes, vocab)
    elif kind == "bert":
        module, signatures = _bert_module(tf, keras)
        requests = bert_requests(rng, sizes)
    elif kind == "image_bytes":
        module, signatures = _image_module(tf, keras)
        requests = image_requests(rng, sizes)
    else:
        module, signatures = _recommender_module(tf, keras, users, items)
        requests = recommender_requests(rng, sizes, users, items)
    version_dir = base / str(version)
    tf.saved_model.save(module, str(version_dir), signatures=signatures)
    if methods:
        _set_method_names(version_dir, methods)
    warmup = None
    if warmup_requests:
        warmup = version_dir / WARMUP_RELPATH
        write_warmup(warmup, list(requests), base.name)
    default = signatures["serving_default"]
    inputs = {
        spec.name: f"{spec.dtype.name}{spec.shape.as_list()}" for spec in default.input_signature
    }
    return Built(kind, base, version_dir, warmup, tuple(sizes if warmup else ()), inputs)


def main(argv: list[str] | None = None) -> int:
    """``python -m testkit.serving_models build KIND BASE [options]``: one JSON line on stdout."""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    parser = argparse.ArgumentParser(prog="python -m testkit.serving_models")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_build = sub.add_parser("build", help="build one kind in TF Serving's layout")
    p_build.add_argument("kind", choices=list(KINDS))
    p_build.add_argument("base", type=Path)
    p_build.add_argument("--version", type=int, default=1)
    p_build.add_argument("--warmup-requests", type=int, default=DEFAULT_REQUESTS)
    p_build.add_argument("--batch-size", type=int)
    p_build.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    built = build(
        args.kind,
        args.base,
        version=args.version,
        warmup_requests=args.warmup_requests,
        batch_size=args.batch_size,
        seed=args.seed,
    )
    sys.stdout.write(json.dumps(built.dump()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
