"""The trial request is a model (advisor.trials.wire.TrialRequest): the runner writes it as JSON,
the child validates it, and one that does not validate is one line and exit code 2, never a
traceback. The wire keys stay those the fake trial programs and older children read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.errors import first_error
from advisor.models import InputsSource, SubjectInfo, ThreadSetting
from advisor.trials.requestfile import RequestsSource
from advisor.trials.runner import run_trial
from advisor.trials.wire import TrialRequest, inspection_answer

#: a trial program that answers with the request it was given, as the child reads it
ECHO = """
import json, sys
from pathlib import Path
from advisor.trials.wire import TrialRequest
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
request = TrialRequest.model_validate_json(Path(args["--request"]).read_text())
Path(args["--result"]).write_text(
    json.dumps({"status": "failed", "reason": request.model_dump_json()})
)
"""


def test_the_runner_hands_the_child_a_request_that_validates() -> None:
    spec = TrialSpec(
        ThreadSetting(3, 1), warmup_s=0.25, measure_s=1.5, min_requests=200, max_measure_s=4.0
    )
    subject = SubjectSpec(
        None, signature="serving_default", batch_size=8, input_shape="ids=16", concurrency=2
    )
    result = run_trial(spec, subject, deadline_s=30, program=[sys.executable, "-c", ECHO])
    assert result.status == "failed"
    request = TrialRequest.model_validate_json(result.reason or "")
    assert request == TrialRequest(
        mode="trial",
        model_format="builtin",
        path=None,
        signature="serving_default",
        batch_size=8,
        input_shape="ids=16",
        concurrency=2,
        warmup_s=0.25,
        measure_s=1.5,
        min_requests=200,
        max_measure_s=4.0,
    )


def test_the_wire_keys_are_the_ones_the_child_always_read() -> None:
    request = TrialRequest(
        mode="trial",
        model_format="keras",
        path="/models/m.keras",
        signature="serving_default",
        batch_size=1,
        concurrency=1,
        warmup_s=0.2,
        measure_s=1.0,
        loaded_marker="/tmp/loaded",
    )
    wire = json.loads(request.model_dump_json())
    assert set(wire) == {
        "mode",
        "kind",
        "path",
        "signature",
        "batch_size",
        "input_shape",
        "concurrency",
        "warmup_s",
        "measure_s",
        "min_requests",
        "max_measure_s",
        "loaded_marker",
        "requests",
        "requests_origin",
    }
    assert wire["requests"] is None  # inputs synthesised: no request file
    assert wire["path"] == "/models/m.keras" and wire["loaded_marker"] == "/tmp/loaded"


def test_the_requests_to_replay_travel_as_the_two_keys_and_come_back_whole() -> None:
    base = TrialRequest(
        mode="inspect",
        model_format="savedmodel",
        path="/m/1",
        signature="s",
        batch_size=1,
        concurrency=1,
    )
    assert base.replay is None and TrialRequest.replaying(None) == {}
    source = RequestsSource("/m/1/assets.extra/tf_serving_warmup_requests", "warmup")
    fields = TrialRequest.replaying(source)
    assert fields == {"requests": source.path, "requests_origin": "warmup"}
    sent = base.model_copy(update=fields)
    assert TrialRequest.model_validate_json(sent.model_dump_json()).replay == source
    # a request file without its origin (a child started by hand) is the user's file
    assert base.model_copy(update={"requests": "r.json"}).replay == RequestsSource("r.json", "file")


#: the child's inspection answers as every child has written them: the keys it set, no others
INSPECTED = {
    "kind": "savedmodel",
    "path": "/m/1",
    "signature": "serving_default",
    "signature_digest": "ab" * 32,
    "inputs": {"x": "float32[1,4]"},
    "batch_size": 1,
    "concurrency": 2,
    "tf_version": "2.21.0",
}


@pytest.mark.parametrize(
    ("source", "wire"),
    [
        # the built-in model: nothing read but its signature
        (InputsSource(kind="synthesised"), {"kind": "synthesised"}),
        # a model's synthesised inputs: what synthesis read, null where it read nothing
        (InputsSource(kind="synthesised", detail=None), {"kind": "synthesised", "detail": None}),
        (
            InputsSource(kind="synthesised", detail="table sizes (ids<1000)"),
            {"kind": "synthesised", "detail": "table sizes (ids<1000)"},
        ),
        (
            InputsSource(kind="warmup", file="/m/1/w", requests=4, batch_sizes=(1, 3)),
            {"kind": "warmup", "file": "/m/1/w", "requests": 4, "batch_sizes": [1, 3]},
        ),
    ],
)
def test_the_inspection_answer_keeps_the_keys_the_child_always_wrote(
    source: InputsSource, wire: dict[str, object]
) -> None:
    info = SubjectInfo.model_validate({**INSPECTED, "inputs_source": source})
    answer = json.loads(json.dumps(inspection_answer(info)))
    assert answer == {"status": "ok", "info": {**INSPECTED, "inputs_source": wire}}
    # and the parent reads it back as the child built it
    assert SubjectInfo.model_validate(answer["info"]) == info


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"mode": "trial"}, "a trial request needs warmup_s and measure_s"),
        ({"mode": "fork"}, "mode: Input should be 'trial' or 'inspect'"),
        ({"batch_size": 0}, "batch_size: Input should be greater than or equal to 1"),
        ({"threads": 4}, "threads: Extra inputs are not permitted"),
    ],
)
def test_a_request_that_makes_no_sense_is_refused(data: dict[str, object], says: str) -> None:
    base = {
        "mode": "inspect",
        "kind": "builtin",
        "signature": "serving_default",
        "batch_size": 1,
        "concurrency": 1,
    }
    with pytest.raises(ValidationError) as caught:
        TrialRequest.model_validate({**base, **data})
    assert first_error(caught.value) == says


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"mode": "trial", "kind": "builtin"}', "signature: Field required"),
        ("{not json", "Invalid JSON"),
    ],
)
def test_the_child_answers_a_bad_request_with_one_line_and_exit_code_2(
    tmp_path: Path, text: str, says: str
) -> None:
    request, result = tmp_path / "request.json", tmp_path / "result.json"
    request.write_text(text)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor.trials.child.trial",
            "--request",
            str(request),
            "--result",
            str(result),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("the trial request does not validate: ")
    assert says in line
    assert not result.exists()
