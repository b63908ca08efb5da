"""Build the small models synthesis is tested on: ``python build_synthesis_models.py OUT_DIR``.

Run as a child process so that tensorflow never enters the pytest process. One model per kind of
signature teams serve on CPUs, each tiny and built from fixed seeds:

- ``sm_examples``: serialized tf.Examples parsed in the graph (``tf.io.parse_example``): dense
  float and id features, a var-len string feature looked up in a vocabulary of constants, a
  var-len string feature looked up in an asset vocabulary file, a ragged int feature; the id
  feature indexes a 1000-row embedding;
- ``sm_examples_v1``: the same through the older ``ParseExample`` op (Estimator exports), its
  keys one constant each: a var-len string feature without a vocabulary, dense float and id
  features, the id into a 50-row table;
- ``embedding.keras``: int ids into a Keras ``Embedding`` of 100000 rows;
- ``sm_bert``: a BERT-style encoder exported by Keras (``input_ids``/``attention_mask``, unknown
  sequence length, a 512-row token embedding);
- ``sm_text``: raw sentences tokenised in the graph;
- ``sm_image``: encoded JPEG bytes decoded in the graph (``tf.map_fn``: a While loop);
- ``sm_category``: a string input looked up as it is in a vocabulary (a category, not text).
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

RNG = np.random.default_rng(11)

#: the vocabularies the tests expect synthesis to draw from
TAGS = ["sports", "news", "music"]
CITIES = ["paris", "lima", "oslo", "pune"]
EMBEDDING_ROWS = 100_000
EXAMPLE_ROWS = 1000
V1_ROWS = 50
BERT_VOCAB = 512


def _weights(*shape: int) -> tf.Variable:
    return tf.Variable(RNG.normal(size=shape).astype(np.float32))


class Examples(tf.Module):
    def __init__(self, cities: Path) -> None:
        super().__init__()
        self.embedding = _weights(EXAMPLE_ROWS, 4)
        self.tags = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(TAGS), tf.range(len(TAGS), dtype=tf.int64)
            ),
            default_value=-1,
        )
        self.cities = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(
                str(cities),
                tf.string,
                tf.lookup.TextFileIndex.WHOLE_LINE,
                tf.int64,
                tf.lookup.TextFileIndex.LINE_NUMBER,
            ),
            default_value=-1,
        )

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve(self, examples: tf.Tensor) -> dict[str, tf.Tensor]:
        spec = {
            "price": tf.io.FixedLenFeature([2], tf.float32),
            "user_id": tf.io.FixedLenFeature([], tf.int64),
            "tags": tf.io.VarLenFeature(tf.string),
            "city": tf.io.VarLenFeature(tf.string),
            "clicks": tf.io.RaggedFeature(tf.int64),
        }
        f = tf.io.parse_example(examples, spec)
        # an unknown tag or city would be -1: fail loudly so a test sees made-up strings
        tags = self.tags.lookup(f["tags"].values)
        cities = self.cities.lookup(f["city"].values)
        tf.debugging.assert_non_negative(tags, message="unknown tag")
        tf.debugging.assert_non_negative(cities, message="unknown city")
        user = tf.nn.embedding_lookup(self.embedding, f["user_id"])
        clicks = tf.cast(f["clicks"].row_lengths(), tf.float32)
        score = tf.reduce_sum(user, axis=1) + tf.reduce_sum(f["price"], axis=1) + clicks
        return {"score": score + tf.cast(tf.reduce_sum(tags) + tf.reduce_sum(cities), tf.float32)}


class ExamplesV1(tf.Module):
    def __init__(self) -> None:
        super().__init__()
        self.items = _weights(V1_ROWS, 2)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
    def serve(self, inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        parsed = tf.raw_ops.ParseExample(
            serialized=inputs,
            names=tf.constant([], tf.string),
            sparse_keys=[tf.constant("words")],
            dense_keys=[tf.constant("age"), tf.constant("item")],
            dense_defaults=[tf.constant([0.0]), tf.constant([0], tf.int64)],
            sparse_types=[tf.string],
            dense_shapes=[[1], [1]],
        )
        age, item = parsed.dense_values
        words = tf.cast(tf.strings.length(parsed.sparse_values[0]), tf.float32)
        vectors = tf.gather(self.items, item[:, 0])
        return {"score": tf.reduce_sum(vectors, axis=1) + age[:, 0] + tf.reduce_sum(words)}


class Text(tf.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = _weights(64, 4)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="sentences")])
    def serve(self, sentences: tf.Tensor) -> dict[str, tf.Tensor]:
        words = tf.strings.split(tf.strings.lower(sentences))
        ids = tf.strings.to_hash_bucket_fast(words, 64)
        vectors = tf.ragged.map_flat_values(tf.nn.embedding_lookup, self.embedding, ids)
        return {"embedding": tf.reduce_mean(vectors, axis=1)}


class Image(tf.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = _weights(3, 2)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="image_bytes")])
    def serve(self, image_bytes: tf.Tensor) -> dict[str, tf.Tensor]:
        def decode(data: tf.Tensor) -> tf.Tensor:
            image = tf.io.decode_jpeg(data, channels=3)
            return tf.image.resize(tf.cast(image, tf.float32), [8, 8])

        images = tf.map_fn(decode, image_bytes, fn_output_signature=tf.float32)
        return {"logits": tf.reduce_mean(images, axis=[1, 2]) @ self.w}


class Category(tf.Module):
    def __init__(self) -> None:
        super().__init__()
        self.countries = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(CITIES), tf.range(len(CITIES), dtype=tf.int64)
            ),
            default_value=-1,
        )

    @tf.function(input_signature=[tf.TensorSpec([None, 1], tf.string, name="city")])
    def serve(self, city: tf.Tensor) -> dict[str, tf.Tensor]:
        ids = self.countries.lookup(city)
        tf.debugging.assert_non_negative(ids, message="unknown city")
        return {"id": ids}


def _bert(out: Path) -> None:
    keras.utils.set_random_seed(11)
    ids = keras.Input(shape=(None,), dtype="int32", name="input_ids")
    mask = keras.Input(shape=(None,), dtype="int32", name="attention_mask")
    tokens = keras.layers.Embedding(BERT_VOCAB, 8)(ids)
    weights = keras.ops.expand_dims(keras.ops.cast(mask, "float32"), -1)
    pooled = keras.ops.sum(tokens * weights, axis=1) / (keras.ops.sum(weights, axis=1) + 1.0)
    model = keras.Model([ids, mask], keras.layers.Dense(2)(pooled))
    model.export(str(out), verbose=False)


def _embedding(out: Path) -> None:
    keras.utils.set_random_seed(11)
    ids = keras.Input(shape=(4,), dtype="int64", name="ids")
    pooled = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(EMBEDDING_ROWS, 2)(ids))
    keras.Model(ids, keras.layers.Dense(1)(pooled)).save(out)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cities = out / "cities.txt"
    cities.write_text("\n".join(CITIES) + "\n")
    modules = {
        "sm_examples": Examples(cities),
        "sm_examples_v1": ExamplesV1(),
        "sm_text": Text(),
        "sm_image": Image(),
        "sm_category": Category(),
    }
    for name, module in modules.items():
        tf.saved_model.save(module, str(out / name), signatures={"serving_default": module.serve})
    cities.unlink()  # the SavedModel's own copy (assets/) is what it reads
    _bert(out / "sm_bert")
    _embedding(out / "embedding.keras")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
