"""The built-in model: a small CNN measured when no model is given.

Imports tensorflow: only the trial child (through ``advisor.trials.child.subjects``) imports it.
The benchmark's harness child loads it through ``subjects.load_subject`` too, so "builtin" is
the same network in a trial and in the benchmark.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from advisor.trials.child.decl import TensorDecl
from advisor.trials.child.loaded import LoadedSubject, spec_digest, wait
from advisor.trials.child.synthesis import SEED, describe_tensors, synthesise

BUILTIN_NAME = "builtin-cnn-v1"
_BUILTIN_SIDE = 112
_BUILTIN_TOWERS = 3


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


def load_builtin(batch_size: int) -> LoadedSubject:
    """The built-in model, fed synthesised images of ``batch_size``."""
    model = _BuiltinModel()
    inputs = [TensorDecl("image", "float32", (None, _BUILTIN_SIDE, _BUILTIN_SIDE, 3))]
    outputs = [TensorDecl("logits", "float32", (None, 10))]
    tensors, _ = synthesise(inputs, batch_size)
    image = tensors["image"]
    return LoadedSubject(
        model_format="builtin",
        signature=None,
        signature_digest=spec_digest(inputs, outputs, extra=BUILTIN_NAME),
        inputs=describe_tensors(tensors),
        request=lambda: wait(model(image), rows=1),
    )
