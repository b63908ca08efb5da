"""The advisor's TF Serving messages (advisor/trials/child/serving_protos.py) against TF Serving's
own (tensorflow-serving-api, installed for the tests only): every field it declares has the
official one's number, name, type, label, message type and oneof, so any PredictionLog the
official protos write parses the same; and a warmup file is read in a process where
``tensorflow_serving`` cannot be imported at all, as after ``pip install .`` alone.

In a child: both import TensorFlow.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import run_python
from tests.support.distributions import NO_SERVING_API
from tests.support.real_parts import need_module

pytestmark = pytest.mark.tf

#: prints every difference between ours and the official descriptors, and the official oneof
#: cases of PredictionLog ours lacks
_COMPARE = """
import json
from google.protobuf import descriptor_pool
from advisor.trials.child import serving_protos as ours
from tensorflow_serving.apis import prediction_log_pb2  # noqa: F401  (registers the official)

pool = descriptor_pool.Default()
OURS, THEIRS = "tf_thread_advisor.serving.", "tensorflow.serving."

def type_name(field):
    if field.message_type is None:
        return None
    return field.message_type.full_name.replace(OURS, "").replace(THEIRS, "")

def oneof(field):
    return None if field.containing_oneof is None else field.containing_oneof.name

def label(field):
    # protobuf 7 dropped FieldDescriptor.label for is_repeated
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:
        repeated = field.label == field.LABEL_REPEATED
    return "repeated" if repeated else "one"

def messages(descriptor):
    yield descriptor
    for nested in descriptor.nested_types:
        yield from messages(nested)

differences, compared = [], 0
top = pool.FindFileByName(ours._FILE)
for message in [m for t in top.message_types_by_name.values() for m in messages(t)]:
    official = pool.FindMessageTypeByName(message.full_name.replace(OURS, THEIRS))
    if message.GetOptions().map_entry != official.GetOptions().map_entry:
        differences.append(f"{message.full_name}: map_entry differs")
    for field in message.fields:
        compared += 1
        theirs = official.fields_by_number.get(field.number)
        if theirs is None:
            differences.append(f"{message.full_name}.{field.name}: no field {field.number}")
            continue
        for what in ("name", "type"):
            if getattr(field, what) != getattr(theirs, what):
                differences.append(f"{message.full_name}.{field.name}: {what} differs")
        for what, get in (("label", label), ("message type", type_name), ("oneof", oneof)):
            if get(field) != get(theirs):
                differences.append(
                    f"{message.full_name}.{field.name}: {what} {get(field)} != {get(theirs)}"
                )
official_log = pool.FindMessageTypeByName(THEIRS + "PredictionLog")
ours_log = ours.PredictionLog.DESCRIPTOR
missing_kinds = [
    f.name for f in official_log.oneofs_by_name["log_type"].fields
    if f.name not in ours_log.fields_by_name
]
print(json.dumps({"differences": differences, "compared": compared,
                  "missing_kinds": missing_kinds}))
"""

#: reads a warmup file where ``tensorflow_serving`` cannot be imported (an import of it fails,
#: as where the package is not installed)
_WITHOUT_SERVING_API = (
    NO_SERVING_API
    + """
import json
from advisor.trials.child import requests
raw = requests.read_requests(sys.argv[1])
imported = sorted(m for m in sys.modules if m.startswith("tensorflow_serving"))
print(json.dumps({"records": [len(r.calls) for r in raw], "rows": [r.rows for r in raw],
                  "imported": imported}))
"""
)


def _child(program: str, *argv: str) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(run_python(program, *argv, timeout=180).splitlines()[-1])
    return answer


def test_every_field_declared_is_tf_servings_own() -> None:
    need_module("tensorflow_serving.apis", "tensorflow-serving-api is not installed (make deps)")
    found = _child(_COMPARE)
    assert found["differences"] == []
    assert found["compared"] >= 30  # every request field replay reads, not an empty file
    assert found["missing_kinds"] == []  # WhichOneof names every kind of log


def test_a_warmup_file_is_read_without_tensorflow_serving_installed(
    test_models: Callable[[], Path],
) -> None:
    # sm_warmup's file: one record of each kind replayed, written by TF Serving's own protos
    warmup = test_models() / "sm_warmup" / "assets.extra" / "tf_serving_warmup_requests"
    found = _child(_WITHOUT_SERVING_API, str(warmup))
    assert found["records"] == [1, 1, 1, 2]  # multi-inference: one call per task
    assert found["rows"] == [None, 3, 1, 2]  # the predict request's rows come from its tensor
    assert found["imported"] == []
