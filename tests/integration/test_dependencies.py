"""This environment holds exactly one TensorFlow, and the serving API of its major.minor: the
tests write their warmup files with TF Serving's own protos (the check of the advisor's own
definitions), and ``make deps`` installs it without its dependencies
(scripts/install-serving-api.sh). The image has none (tests/system/test_container.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.distributions import CHECK, minor


def test_one_tensorflow_and_the_serving_api_of_its_version() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60, check=True
    )
    found = json.loads(done.stdout)
    assert len(found["tensorflow"]) == 1, found["tensorflow"]
    (version,) = found["tensorflow"].values()
    assert found["serving_api"] is not None, "run make deps (scripts/install-serving-api.sh)"
    assert minor(found["serving_api"]) == minor(version)
