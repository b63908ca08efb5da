"""The warmup requests of testkit/serving_models.py's models, and TF Serving's warmup file of them:
each kind's requests drawn from a seeded NumPy generator (batch sizes 1..8 unless fixed, sentences
from a made-up vocabulary, padded ``bert`` batches, real JPEGs, ids spread over whole tables),
each turned into the PredictionLog TF Serving replays through its own protos.

TensorFlow and ``tensorflow_serving`` are imported inside the functions that need them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the most examples in one warmup request
MAX_BATCH = 8
#: the ``bert`` model's vocabulary and longest sequence, and the ``recommender``'s candidates per
#: example: the requests are drawn within them
BERT_VOCAB = 30_522
BERT_MAX_LEN = 128
CANDIDATES = 100


@dataclass(frozen=True)
class Request:
    """One warmup request before it becomes a PredictionLog: which API, which signature, and the
    inputs (numpy arrays; for classify/regress, ``examples`` holds serialized tf.Examples)."""

    api: str  # "predict", "classify" or "regress"
    signature: str
    inputs: dict[str, Any]


def words(count: int, rng_seed: int) -> list[str]:
    """``count`` distinct pronounceable lower-case words (a vocabulary that looks like one)."""
    import numpy as np

    rng = np.random.default_rng(rng_seed)
    onsets = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou"]
    seen: dict[str, None] = {}
    while len(seen) < count:
        syllables = int(rng.integers(1, 4))
        word = "".join(
            onsets[int(rng.integers(len(onsets)))] + vowels[int(rng.integers(len(vowels)))]
            for _ in range(syllables)
        )
        if int(rng.integers(2)):
            word += onsets[int(rng.integers(len(onsets)))]
        seen.setdefault(word, None)
    return list(seen)


def batch_sizes(rng: Any, count: int, fixed: int | None) -> list[int]:
    if fixed is not None:
        return [fixed] * count
    return [int(b) for b in rng.integers(1, MAX_BATCH + 1, size=count)]


def spread_ids(rng: Any, rows: int, shape: tuple[int, ...]) -> Any:
    """Ids over the whole table, as traffic looks them up: half from a popular head (the first
    1% of rows), half uniform over every row."""
    import numpy as np

    head = rng.integers(0, max(1, rows // 100), size=shape)
    tail = rng.integers(0, rows, size=shape)
    return np.where(rng.random(size=shape) < 0.5, head, tail).astype(np.int64)


def _example_bytes(rng: Any, vocab: list[str]) -> bytes:
    import tensorflow as tf

    terms = [vocab[int(i)].encode() for i in rng.integers(0, len(vocab), int(rng.integers(0, 9)))]
    feature = {
        "age": tf.train.Feature(float_list=tf.train.FloatList(value=[float(rng.uniform(18, 90))])),
        "income": tf.train.Feature(
            float_list=tf.train.FloatList(value=[float(rng.lognormal(10.5, 0.8))])
        ),
        "visits": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(rng.poisson(4))])),
        "terms": tf.train.Feature(bytes_list=tf.train.BytesList(value=terms)),
    }
    if rng.random() < 0.8:  # the rest take the parse spec's default
        feature["hour"] = tf.train.Feature(
            int64_list=tf.train.Int64List(value=[int(rng.integers(0, 24))])
        )
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    return bytes(example.SerializeToString())


def tfexample_requests(rng: Any, sizes: list[int], vocab: list[str]) -> Iterator[Request]:
    import numpy as np

    for n, batch in enumerate(sizes):
        examples = np.array([_example_bytes(rng, vocab) for _ in range(batch)], dtype=object)
        # mostly Predict, as clients call it; every eighth a Classify, every eighth a Regress
        if n % 8 == 3:
            yield Request("classify", "classify", {"examples": examples})
        elif n % 8 == 6:
            yield Request("regress", "regress", {"examples": examples})
        else:
            yield Request("predict", "serving_default", {"examples": examples})


def _sentence(rng: Any, vocab: list[str]) -> bytes:
    count = int(rng.integers(4, 41))
    chosen = [vocab[int(i)] for i in rng.integers(0, len(vocab), count)]
    if rng.random() < 0.3:
        chosen[0] = chosen[0].capitalize()
    return (" ".join(chosen) + ("." if rng.random() < 0.5 else "")).encode()


def text_requests(rng: Any, sizes: list[int], vocab: list[str]) -> Iterator[Request]:
    import numpy as np

    for batch in sizes:
        sentences = np.array([_sentence(rng, vocab) for _ in range(batch)], dtype=object)
        yield Request("predict", "serving_default", {"sentences": sentences})


def bert_requests(rng: Any, sizes: list[int]) -> Iterator[Request]:
    import numpy as np

    for batch in sizes:
        # padded to the longest sentence of the batch, as a tokenizer with padding=True does
        lengths = rng.integers(8, BERT_MAX_LEN + 1, size=batch)
        width = int(lengths.max())
        ids = rng.integers(1000, BERT_VOCAB, size=(batch, width)).astype(np.int32)
        mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int32)
        ids[:, 0] = 101  # [CLS]
        ids = np.where(mask == 1, ids, 0).astype(np.int32)
        yield Request("predict", "serving_default", {"input_ids": ids, "attention_mask": mask})


def _jpeg(rng: Any) -> bytes:
    """A real JPEG of a smooth random picture (noise upsampled: it compresses like a photo)."""
    import numpy as np
    import tensorflow as tf

    height, width = int(rng.integers(96, 321)), int(rng.integers(96, 321))
    coarse = rng.uniform(0, 255, size=(1, 8, 8, 3)).astype(np.float32)
    image = tf.image.resize(coarse, [height, width], method="bicubic")[0]
    grain = rng.normal(0, 6, size=(height, width, 3)).astype(np.float32)
    pixels = tf.cast(tf.clip_by_value(image + grain, 0, 255), tf.uint8)
    return bytes(tf.io.encode_jpeg(pixels, quality=int(rng.integers(70, 96))).numpy())


def image_requests(rng: Any, sizes: list[int]) -> Iterator[Request]:
    import numpy as np

    for batch in sizes:
        images = np.array([_jpeg(rng) for _ in range(batch)], dtype=object)
        yield Request("predict", "serving_default", {"image_bytes": images})


def recommender_requests(rng: Any, sizes: list[int], users: int, items: int) -> Iterator[Request]:
    for batch in sizes:
        yield Request(
            "predict",
            "serving_default",
            {
                "user_id": spread_ids(rng, users, (batch,)),
                "item_ids": spread_ids(rng, items, (batch, CANDIDATES)),
            },
        )


def prediction_log(request: Request, model_name: str) -> Any:
    """``request`` as the PredictionLog TF Serving replays (its official protos)."""
    import tensorflow as tf
    from tensorflow_serving.apis import (
        classification_pb2,
        input_pb2,
        predict_pb2,
        prediction_log_pb2,
        regression_pb2,
    )

    if request.api == "predict":
        predict = predict_pb2.PredictRequest()
        predict.model_spec.name = model_name
        predict.model_spec.signature_name = request.signature
        for name, value in request.inputs.items():
            predict.inputs[name].CopyFrom(tf.make_tensor_proto(value))
        return prediction_log_pb2.PredictionLog(
            predict_log=prediction_log_pb2.PredictLog(request=predict)
        )
    examples = [tf.train.Example.FromString(e) for e in request.inputs["examples"]]
    model_input = input_pb2.Input(example_list=input_pb2.ExampleList(examples=examples))
    # Classify and Regress carry tf.Examples, not tensors: TF Serving feeds them serialized
    classes = {
        "classify": (classification_pb2.ClassificationRequest, prediction_log_pb2.ClassifyLog),
        "regress": (regression_pb2.RegressionRequest, prediction_log_pb2.RegressLog),
    }
    if request.api in classes:
        request_class, log_class = classes[request.api]
        wrapped = request_class(input=model_input)
        wrapped.model_spec.name = model_name
        wrapped.model_spec.signature_name = request.signature
        return prediction_log_pb2.PredictionLog(
            **{f"{request.api}_log": log_class(request=wrapped)}
        )
    raise ValueError(f"unknown API {request.api!r}")


def write_warmup(path: Path, requests: list[Request], model_name: str) -> None:
    """A TFRecord of PredictionLog records, as TF Serving reads its warmup file."""
    import tensorflow as tf

    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for request in requests:
            writer.write(prediction_log(request, model_name).SerializeToString())
