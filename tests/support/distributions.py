"""Which TensorFlow distributions an environment holds, checked the same way here and inside the
image: exactly one TensorFlow (tensorflow-serving-api, which requires the ``tensorflow``
distribution, is installed without its dependencies beside ``tensorflow-cpu``), and the serving
API of its major.minor.

``CHECK`` is a program (``python -c CHECK``) printing the JSON ``installed()`` returns, for an
environment the tests cannot import from (the image's venv).
"""

from __future__ import annotations

#: the names TensorFlow is distributed under (pip would install any two side by side)
TF_DISTRIBUTIONS = (
    "tensorflow",
    "tensorflow-cpu",
    "tensorflow-intel",
    "tensorflow-macos",
    "tensorflow-aarch64",
    "intel-tensorflow",
    "tf-nightly",
    "tf-nightly-cpu",
)

CHECK = f"""
import importlib.metadata as metadata, json

def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

found = {{name: version(name) for name in {TF_DISTRIBUTIONS!r}}}
print(json.dumps({{
    "tensorflow": {{name: v for name, v in found.items() if v is not None}},
    "serving_api": version("tensorflow-serving-api"),
}}))
"""


def minor(version: str) -> str:
    """``2.21.0`` -> ``2.21``."""
    return ".".join(version.split(".")[:2])
