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


class ParsesExamples(tf.Module):
    """serving_default: serialized tf.Examples (feature "x": float32[4]) -> score, as TFX and
    Estimator exports take them; by_x: the same model on float32[?,4]."""

    def __init__(self) -> None:
        super().__init__()
        self.w = weights(4, 1)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve(self, examples: tf.Tensor) -> dict[str, tf.Tensor]:
        parsed = tf.io.parse_example(examples, {"x": tf.io.FixedLenFeature([4], tf.float32)})
        return {"score": parsed["x"] @ self.w}

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def by_x(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"score": x @ self.w}


def example(values: list[float]) -> bytes:
    feature = tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Example(features=tf.train.Features(feature={"x": feature})).SerializeToString()


def write_warmup(model: Path) -> None:
    """assets.extra/tf_serving_warmup_requests with one record of each PredictionLog kind TF
    Serving replays: predict (batch 2 on by_x), classify (3 examples), regress (1, with a
    context), multi-inference (2 examples on both tasks)."""
    from tensorflow_serving.apis import (
        classification_pb2,
        inference_pb2,
        input_pb2,
        predict_pb2,
        prediction_log_pb2,
        regression_pb2,
    )

    def examples(count: int) -> input_pb2.Input:
        listed = input_pb2.Input()
        for i in range(count):
            listed.example_list.examples.add().ParseFromString(example([float(i)] * 4))
        return listed

    logs = []
    predict = predict_pb2.PredictRequest()
    predict.model_spec.signature_name = "by_x"
    predict.inputs["x"].CopyFrom(tf.make_tensor_proto(np.ones((2, 4), np.float32)))
    logs.append(
        prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=predict))
    )
    classify = classification_pb2.ClassificationRequest(input=examples(3))
    logs.append(
        prediction_log_pb2.PredictionLog(
            classify_log=prediction_log_pb2.ClassifyLog(request=classify)
        )
    )
    with_context = input_pb2.Input()
    with_context.example_list_with_context.context.ParseFromString(example([1.0] * 4))
    with_context.example_list_with_context.examples.add()
    regress = regression_pb2.RegressionRequest(input=with_context)
    logs.append(
        prediction_log_pb2.PredictionLog(regress_log=prediction_log_pb2.RegressLog(request=regress))
    )
    multi = inference_pb2.MultiInferenceRequest(input=examples(2))
    for _ in range(2):
        multi.tasks.add().model_spec.signature_name = "serving_default"
    logs.append(
        prediction_log_pb2.PredictionLog(
            multi_inference_log=prediction_log_pb2.MultiInferenceLog(request=multi)
        )
    )
    (model / "assets.extra").mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(model / "assets.extra" / "tf_serving_warmup_requests")) as out:
        for log in logs:
            out.write(log.SerializeToString())


def write_bad_requests(out: Path) -> None:
    """TFRecords the tests' bad cases replay against sm_good: an int64 input where float32 is
    declared (record 2), and records that are no PredictionLog."""
    from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

    def predict(values: np.ndarray) -> bytes:
        request = predict_pb2.PredictRequest()
        request.inputs["features"].CopyFrom(tf.make_tensor_proto(values))
        log = prediction_log_pb2.PredictionLog(
            predict_log=prediction_log_pb2.PredictLog(request=request)
        )
        return log.SerializeToString()

    out.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(out / "int64.tfrecord")) as writer:
        writer.write(predict(np.ones((1, 16), np.float32)))
        writer.write(predict(np.ones((1, 16), np.int64)))
    with tf.io.TFRecordWriter(str(out / "not_a_log.tfrecord")) as writer:
        writer.write(b"\xff\xff\xff not a protobuf")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    good = Dense()
    save(good, out / "sm_good", serving_default=good.serve, by_ids=good.by_ids)

    parses = ParsesExamples()
    save(parses, out / "sm_warmup", serving_default=parses.serve, by_x=parses.by_x)
    write_warmup(out / "sm_warmup")
    write_bad_requests(out / "requests")

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
