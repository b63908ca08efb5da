"""The serving image the fleet tests opt in: debian:bookworm-slim (the project's podman store
holds it, scripts/image-setup.sh) with a real Keras SavedModel at MODEL_PATH, built with podman and
imported into the node's containerd. It has `cp` and `sleep`, all the derived init container and
the test's serving container run. No pytest here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from testkit.realcluster import images as realimages
from testkit.realcluster import layout as L
from tests.support.images import PODMAN, podman_env

SERVING_IMAGE = "localhost/tfta-e2e-serving:test"
MODEL_PATH = "/models/e2e/1"

#: a small Keras model exported as a SavedModel, in a child so TensorFlow stays out of pytest
EXPORT = """
import sys
import keras
keras.utils.set_random_seed(7)
x = keras.Input(shape=(16,), name="features")
h = keras.layers.Dense(32, activation="relu")(x)
model = keras.Model(x, keras.layers.Dense(4, name="scores")(h))
model.export(sys.argv[1], format="tf_saved_model", verbose=False)
"""


def _podman(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PODMAN, *args], env=podman_env(), capture_output=True, text=True, timeout=600, check=False
    )


def build_serving_image(context: Path) -> str:
    model = context / "model"
    done = subprocess.run(
        [sys.executable, "-c", EXPORT, str(model)],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (context / "Containerfile").write_text(
        f"FROM docker.io/library/debian:bookworm-slim\nCOPY model {MODEL_PATH}\n"
    )
    built = _podman("build", "--pull=never", "--network", "none", "-t", SERVING_IMAGE, str(context))
    assert built.returncode == 0, built.stderr[-3000:]
    realimages.import_from_podman(L.layout(), SERVING_IMAGE, PODMAN)
    return SERVING_IMAGE
