"""Replays a TF Serving model's warmup file with plain TensorFlow, as TF Serving would at load time.

Run as a child by test_serving_models.py (TensorFlow stays out of the pytest process):

    python tests/system/serving_replay.py VERSION_DIR

Written apart from the factory (testkit/serving_models.py) on purpose: it reads the TFRecord with
``tf.data`` and the official PredictionLog protos, finds each request's signature by the name the
request gives, feeds the tensors or the examples as TF Serving does, and prints one JSON object:
per record the log kind, the signature, its method name, each input's dtype and shape, and the
output shapes.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

WARMUP = "assets.extra/tf_serving_warmup_requests"
#: the input key TF Serving's Classify and Regress APIs feed the serialized examples to
EXAMPLES_KEY = "inputs"


def main(version_dir: str) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    from tensorflow.python.tools import saved_model_utils
    from tensorflow_serving.apis import prediction_log_pb2

    meta = saved_model_utils.get_meta_graph_def(version_dir, "serve")
    methods = {name: sig.method_name for name, sig in meta.signature_def.items()}
    loaded = tf.saved_model.load(version_dir)
    records: list[dict[str, Any]] = []
    for raw in tf.data.TFRecordDataset(os.path.join(version_dir, WARMUP)):
        log = prediction_log_pb2.PredictionLog.FromString(raw.numpy())
        kind = log.WhichOneof("log_type")
        if kind == "predict_log":
            request = log.predict_log.request
            feed = {k: tf.constant(tf.make_ndarray(v)) for k, v in request.inputs.items()}
        else:
            request = getattr(log, kind).request
            examples = request.input.example_list.examples
            feed = {EXAMPLES_KEY: tf.constant([e.SerializeToString() for e in examples])}
        signature = request.model_spec.signature_name or "serving_default"
        outputs = loaded.signatures[signature](**feed)
        records.append(
            {
                "kind": kind,
                "model": request.model_spec.name,
                "signature": signature,
                "method": methods[signature],
                "inputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in feed.items()},
                "outputs": {k: v.shape.as_list() for k, v in outputs.items()},
                "finite": all(
                    bool(tf.reduce_all(tf.math.is_finite(v)))
                    for v in outputs.values()
                    if v.dtype.is_floating
                ),
                "first": _first_values(feed),
            }
        )
    sys.stdout.write(json.dumps({"methods": methods, "records": records}) + "\n")
    return 0


def _first_values(feed: dict[str, Any]) -> dict[str, Any]:
    """A peek at each input: the first string's leading bytes, or the integers' min and max."""
    peek: dict[str, Any] = {}
    for name, value in feed.items():
        if value.dtype.name == "string":
            peek[name] = value.numpy().reshape(-1)[0][:4].hex()
        elif value.dtype.is_integer:
            peek[name] = [int(value.numpy().min()), int(value.numpy().max())]
    return peek


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
