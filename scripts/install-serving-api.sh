#!/usr/bin/env bash
# Installs tensorflow-serving-api for the installed TensorFlow (same major.minor), without its
# dependencies, for the tests only: they write TF Serving models' warmup files (TFRecords of
# PredictionLog) with TF Serving's own protos, so that reading them checks the advisor's
# definitions of those messages (advisor/trials/child/serving_protos.py), which is all the
# advisor itself reads them with. The package requires the `tensorflow` distribution, so a plain
# `pip install` puts `tensorflow` beside an installed `tensorflow-cpu`: two TensorFlows in one
# environment, the second overwriting the first's files. Its modules are pure-Python protos over
# TensorFlow's own (protobuf comes with TensorFlow; grpcio, its other requirement, is only for
# calling a server).
set -euo pipefail
PYTHON="${PYTHON:-python3}"
version="$("$PYTHON" - <<'PY'
import importlib.metadata as metadata

for name in ("tensorflow-cpu", "tensorflow"):
    try:
        print(".".join(metadata.version(name).split(".")[:2]))
        break
    except metadata.PackageNotFoundError:
        pass
else:
    raise SystemExit("no TensorFlow is installed: install the advisor first (pip install .)")
PY
)"
"$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps \
  "tensorflow-serving-api==${version}.*"
