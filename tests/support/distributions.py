"""Which TensorFlow distributions an environment holds, checked the same way here and inside the
image: exactly one TensorFlow, and whether ``tensorflow-serving-api`` is there (at which version).
The image has none: the advisor reads warmup files with its own definitions of TF Serving's
messages. A development environment has it at its TensorFlow's major.minor, installed without
its requirement of the ``tensorflow`` distribution (a second TensorFlow beside
``tensorflow-cpu``), because the tests write their warmup files with TF Serving's own protos.

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


#: Python that makes ``tensorflow_serving`` unimportable in the process that runs it, as where the
#: package is not installed (the start of a ``-c`` program, or a ``sitecustomize`` for a process
#: and its children)
NO_SERVING_API = """
import importlib.abc, sys

class NoServingApi(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "tensorflow_serving":
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoServingApi())
"""


def minor(version: str) -> str:
    """``2.21.0`` -> ``2.21``."""
    return ".".join(version.split(".")[:2])
