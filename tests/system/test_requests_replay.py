"""Replaying recorded requests with real TensorFlow: TF Serving's REST bodies and TFRecords of
PredictionLog read and checked against a signature (in one child, as the reader imports TF),
the trial server reading them before it forks without starting TF's runtime, and ``calibrate``
replaying a model's warmup file and a user's file through the real CLI.

The bad request files through the CLI (their exit codes, nothing published) are cases of
tests/integration/test_hardening_inputs.py's table (those that need a real model run from
tests/system/test_hardening_inputs_models.py).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.models import ThreadSetting
from advisor.trials import launch, runner
from tests.support import REPO
from tests.support.distributions import NO_SERVING_API

pytestmark = pytest.mark.tf

#: One child reads and checks every case: ``read_requests`` then ``bind`` against the case's
#: signatures; the answer per case is the requests (record, rows, calls with each input's dtype,
#: shape and first values) or the one-line error.
_READER = """
import json, sys, tempfile
from pathlib import Path
from advisor.trials.child import requests as r
from advisor.trials.child.decl import TensorDecl

cases = json.loads(Path(sys.argv[1]).read_text())
answers = {}
for case in cases:
    if "file" in case:
        path = case["file"]
    else:
        handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        handle.write(case["body"])
        handle.close()
        path = handle.name
    signatures = {
        name: [TensorDecl(n, d, None if s is None else tuple(s)) for n, d, s in inputs]
        for name, inputs in case["signatures"].items()
    }
    hidden = {}
    if case.get("hide_serving_api"):
        for name in ("tensorflow_serving", "tensorflow_serving.apis"):
            hidden[name] = sys.modules.get(name)
            sys.modules[name] = None  # import fails, as where the package is not installed
    if case.get("break_serving_api"):
        import types
        class Broken(types.ModuleType):  # installed but unusable, as with a protobuf mismatch
            def __getattr__(self, name):
                raise TypeError("Descriptors cannot be created directly")
        for name in ("tensorflow_serving", "tensorflow_serving.apis"):
            hidden[name] = sys.modules.get(name)
            sys.modules[name] = Broken(name)
    try:
        raw = r.read_requests(path, **case.get("read", {}))
        bound = r.bind(raw, signatures, path=path, default_signature="serving_default",
                       max_bytes=case.get("max_bytes", 1 << 30))
    except Exception as exc:
        answers[case["id"]] = {"error": f"{type(exc).__name__}: {exc}".replace(path, "FILE")}
        continue
    finally:
        for name, module in hidden.items():
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module
    answers[case["id"]] = {"requests": [
        {"record": b.record, "rows": b.rows, "calls": [
            [sig, {k: [r._dtype_name(v), list(v.shape),
                       [x.decode("latin-1") if isinstance(x, bytes) else x
                        for x in v.flatten()[:2].tolist()]]
                   for k, v in arrays.items()}]
            for sig, arrays in b.calls]}
        for b in bound]}
print(json.dumps(answers))
"""

#: sm_good's serving_default and by_ids (tests/support/fake_trials/build_models.py)
GOOD = {
    "serving_default": [["features", "float32", [None, 16]]],
    "by_ids": [["ids", "int64", [None, 4]]],
}
TWO = {"serving_default": [["a", "float32", [None, 2]], ["b", "string", [None]]]}
TEXT = {"serving_default": [["text", "string", [None]]]}
#: sm_warmup's: serialized Examples, and the same model on float32[?,4]
WARMUP = {
    "serving_default": [["examples", "string", [None]]],
    "by_x": [["x", "float32", [None, 4]]],
}
ROW = [0.5] * 16
B64 = base64.b64encode(b"\x00\xffbytes").decode()


def _body(value: Any) -> str:
    return json.dumps(value)


#: (id, body, signatures, expected: a list of (rows, signature, {input: (dtype, shape)}) per
#: request, or the error's words)
CASES: list[tuple[str, str, dict[str, Any], Any]] = [
    # row format
    (
        "instances-values",
        _body({"instances": [ROW, ROW, ROW]}),
        GOOD,
        [(3, "serving_default", {"features": ("float32", [3, 16])})],
    ),
    (
        "instances-objects",
        _body({"instances": [{"a": [1, 2], "b": "x"}, {"a": [3, 4], "b": "yz"}]}),
        TWO,
        [(2, "serving_default", {"a": ("float32", [2, 2]), "b": ("string", [2])})],
    ),
    (
        "instances-b64",
        _body({"instances": [{"b64": B64}, "plain"]}),
        TEXT,
        [(2, "serving_default", {"text": ("string", [2])})],
    ),
    (
        "signature-name",
        _body({"signature_name": "by_ids", "instances": [[0, 1, 2, 3]]}),
        GOOD,
        [(1, "by_ids", {"ids": ("int64", [1, 4])})],
    ),
    # columnar format
    (
        "inputs-value",
        _body({"inputs": [ROW, ROW]}),
        GOOD,
        [(2, "serving_default", {"features": ("float32", [2, 16])})],
    ),
    (
        "inputs-object",
        _body({"inputs": {"a": [[1, 2]], "b": [{"b64": B64}]}}),
        TWO,
        [(1, "serving_default", {"a": ("float32", [1, 2]), "b": ("string", [1])})],
    ),
    (
        "json-lines",
        "\n".join(
            [
                _body({"instances": [ROW]}),
                "",
                _body({"signature_name": "by_ids", "inputs": {"ids": [[1, 1, 1, 1]] * 4}}),
            ]
        ),
        GOOD,
        [
            (1, "serving_default", {"features": ("float32", [1, 16])}),
            (4, "by_ids", {"ids": ("int64", [4, 4])}),
        ],
    ),
    # what the file is, told before any body is read (malformed bodies, which need no
    # TensorFlow, are tests/unit/trials/test_rest.py's)
    ("not-an-object", "[1, 2]", GOOD, "neither a TF Serving REST body"),
    (
        "leading-whitespace",
        " \n" * 40 + _body({"inputs": [ROW]}),
        GOOD,
        [(1, "serving_default", {"features": ("float32", [1, 16])})],
    ),
    (
        "json-over-the-file-cap",
        _body({"inputs": [ROW]}),
        GOOD,
        "FILE: the request file is 0.00 GiB; JSON of requests is read up to",
    ),
    # checked against the signature
    (
        "unknown-signature",
        _body({"signature_name": "nope", "inputs": [ROW]}),
        GOOD,
        "FILE: record 1: the model has no signature 'nope'; it has: by_ids, serving_default",
    ),
    (
        "unknown-input",
        _body({"inputs": {"feats": [ROW]}}),
        GOOD,
        "FILE: record 1: signature 'serving_default' has no input 'feats' (it takes features)",
    ),
    ("missing-input", _body({"inputs": {"a": [[1, 2]]}}), TWO, "record 1: input 'b' is missing"),
    ("unnamed-for-two", _body({"inputs": [[1, 2]]}), TWO, "gives one unnamed input"),
    (
        "wrong-shape",
        _body({"instances": [[1.0, 2.0]]}),
        GOOD,
        "record 1: input 'features' has shape [1,2], the signature takes float32[?,16]",
    ),
    ("ragged", _body({"inputs": [[1.0], [1.0, 2.0]]}), GOOD, "not a rectangular array"),
    ("strings-for-floats", _body({"inputs": [["a"] * 16]}), GOOD, "holds strings, the signature"),
    ("b64-for-floats", _body({"inputs": [{"b64": B64}]}), GOOD, "holds bytes (b64)"),
    (
        "fractions-for-ints",
        _body({"signature_name": "by_ids", "inputs": [[0.5, 1, 2, 3]]}),
        GOOD,
        "input 'ids' holds fractions, the signature takes int64",
    ),
    ("numbers-for-strings", _body({"inputs": [1, 2]}), TEXT, "holds numbers, the signature takes"),
    ("booleans-for-floats", _body({"inputs": [[True] * 16]}), GOOD, "holds booleans"),
]


#: what read_requests is given besides the file, by case
CASE_OPTIONS: dict[str, dict[str, Any]] = {
    "json-over-the-file-cap": {"read": {"max_json_bytes": 20}},
    "tfrecord-over-the-file-cap": {"read": {"max_tfrecord_bytes": 20}},
    "with-a-broken-serving-api": {"break_serving_api": True},
}


#: sm_warmup's file (tests/support/fake_trials/build_models.py), one record of each kind
EVERY_KIND = [
    (2, "by_x", {"x": ("float32", [2, 4])}),
    (3, "serving_default", {"examples": ("string", [3])}),
    (1, "serving_default", {"examples": ("string", [1])}),
    (2, "serving_default", {"examples": ("string", [2])}),
]


def _file_cases(models: Path) -> list[tuple[str, Path, dict[str, Any], Any]]:
    warmup = models / "sm_warmup" / "assets.extra" / "tf_serving_warmup_requests"
    data = warmup.read_bytes()
    return [
        ("prediction-log-every-kind", warmup, WARMUP, EVERY_KIND),
        ("prediction-log-truncated", data[:-7], WARMUP, "record 4: corrupt or truncated"),
        (
            "prediction-log-corrupt",
            data[:20] + bytes([data[20] ^ 0xFF]) + data[21:],
            WARMUP,
            "record 1: corrupt or truncated",
        ),
        (
            "prediction-log-wrong-dtype",
            models / "requests" / "int64.tfrecord",
            GOOD,
            "record 2: input 'features' is int64, the signature takes float32",
        ),
        (
            "prediction-log-not-a-log",
            models / "requests" / "not_a_log.tfrecord",
            GOOD,
            "record 1: not a PredictionLog",
        ),
        ("over-the-cap", warmup, WARMUP, "record 2: the requests so far hold"),
        (
            "tfrecord-over-the-file-cap",
            warmup,
            WARMUP,
            "FILE: the request file is 0.00 GiB; a TFRecord of requests is read up to",
        ),
        # the advisor's own TF Serving messages read it: the package is not needed, and one
        # that is installed but broken does not matter
        ("with-a-broken-serving-api", warmup, WARMUP, EVERY_KIND),
        ("without-the-serving-api", warmup, WARMUP, EVERY_KIND),
    ]


@pytest.fixture(scope="module")
def answers(test_models: Callable[[], Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    models = test_models()
    tmp = tmp_path_factory.mktemp("requests")
    cases: list[dict[str, Any]] = [
        {"id": case_id, "body": body, "signatures": signatures, **CASE_OPTIONS.get(case_id, {})}
        for case_id, body, signatures, _ in CASES
    ]
    for case_id, content, signatures, _ in _file_cases(models):
        if isinstance(content, bytes):
            path = tmp / f"{case_id}.tfrecord"
            path.write_bytes(content)
        else:
            path = content
        case = {
            "id": case_id,
            "file": str(path),
            "signatures": signatures,
            **CASE_OPTIONS.get(case_id, {}),
        }
        if case_id == "over-the-cap":
            case["max_bytes"] = 40  # record 1's two float32[4] rows fit, record 2's do not
        if case_id == "without-the-serving-api":
            case["hide_serving_api"] = True
        cases.append(case)
    listing = tmp / "cases.json"
    listing.write_text(json.dumps(cases))
    done = subprocess.run(
        [sys.executable, "-c", _READER, str(listing)],
        env={**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), models


def _check(answer: dict[str, Any], expected: Any) -> None:
    if isinstance(expected, str):
        assert "error" in answer, answer
        assert answer["error"].startswith("RequestsError: "), answer["error"]
        assert expected in answer["error"], answer["error"]
        assert "\n" not in answer["error"]
        return
    assert "error" not in answer, answer
    got = [
        (
            request["rows"],
            request["calls"][0][0],
            {k: (v[0], v[1]) for k, v in request["calls"][0][1].items()},
        )
        for request in answer["requests"]
    ]
    assert got == expected


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_rest_body_is_read_as_tf_serving_reads_it(
    case: tuple[str, str, dict[str, Any], Any], answers: Any
) -> None:
    found, _ = answers
    _check(found[case[0]], case[3])


def test_b64_values_are_the_bytes_they_encode(answers: Any) -> None:
    found, _ = answers
    (request,) = found["instances-b64"]["requests"]
    assert request["calls"][0][1]["text"][2] == ["\x00\xffbytes", "plain"]


@pytest.mark.parametrize(
    "case_id",
    [
        "prediction-log-every-kind",
        "prediction-log-truncated",
        "prediction-log-corrupt",
        "prediction-log-wrong-dtype",
        "prediction-log-not-a-log",
        "over-the-cap",
        "tfrecord-over-the-file-cap",
        "with-a-broken-serving-api",
        "without-the-serving-api",
    ],
)
def test_a_prediction_log_is_read_per_kind_and_damage_names_the_record(
    case_id: str, answers: Any
) -> None:
    found, models = answers
    (case,) = (c for c in _file_cases(models) if c[0] == case_id)
    _check(found[case_id], case[3])


def test_a_multi_inference_request_calls_every_task_and_context_reaches_each_example(
    answers: Any,
) -> None:
    found, _ = answers
    requests = found["prediction-log-every-kind"]["requests"]
    assert [len(r["calls"]) for r in requests] == [1, 1, 1, 2]
    # the regress request's one example is empty: its feature comes from the context
    (example,) = requests[2]["calls"][0][1]["examples"][2]
    assert len(example) > 10


# --------------------------------------------------------------------------------------------------
# the trial server and the sweep


def test_the_server_reads_the_requests_before_it_forks_without_starting_tensorflow(
    test_models: Callable[[], Path],
) -> None:
    subject = SubjectSpec(model_path=str(test_models() / "sm_warmup"))
    trials = launch.Launcher(subject, "fork")
    try:
        info = trials.inspect(120)
        assert trials.used == "fork"
        assert info.inputs_source is not None and info.inputs_source.kind == "warmup"
        assert (info.inputs_source.requests, info.inputs_source.batch_sizes) == (4, (1, 3))
        spec = TrialSpec(ThreadSetting(1, 1), warmup_s=0.05, measure_s=0.3)
        result = trials(spec, 60)
        assert result.status == "ok", result.reason
        state = trials.state()
        assert state is not None and state["tf_initialized"] is False
        # the four requests carry 2+3+1+2 examples: throughput counts examples, not requests
        assert result.requests and result.measure_s and result.throughput_rps
        per_request = result.throughput_rps * result.measure_s / result.requests
        assert 1.5 <= per_request <= 2.5, per_request
    finally:
        trials.close()


def test_requests_none_synthesises_even_where_a_warmup_file_is(
    test_models: Callable[[], Path],
) -> None:
    subject = SubjectSpec(
        model_path=str(test_models() / "sm_warmup"), signature="by_x", requests="none"
    )
    info = runner.inspect_subject(subject)
    assert info.inputs_source is not None and info.inputs_source.kind == "synthesised"
    assert info.model_dump()["inputs"] == {"x": "float32[1,4]"}


def _calibrate(*argv: str, blocked: Path | None = None) -> tuple[int, dict[str, Any], str]:
    """``calibrate`` through the real CLI; with ``blocked``, a folder for a ``sitecustomize``
    that hides tensorflow-serving-api from the CLI and every trial child."""
    path = [str(REPO)]
    if blocked is not None:
        (blocked / "sitecustomize.py").write_text(NO_SERVING_API)
        path.insert(0, str(blocked))
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "calibrate", "--budget", "25", "--format", "json", *argv],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    return done.returncode, json.loads(done.stdout or "{}"), done.stderr


def test_calibrate_replays_the_models_warmup_file_and_says_so(
    test_models: Callable[[], Path], tmp_path: Path
) -> None:
    # as after `pip install .` alone: no tensorflow-serving-api in any process
    code, result, err = _calibrate("--model", str(test_models() / "sm_warmup"), blocked=tmp_path)
    assert code == 0, err[-2000:]
    source = result["workload"]["inputs_source"]
    assert source["kind"] == "warmup" and source["requests"] == 4
    assert source["batch_sizes"] == [1, 3]
    assert result["workload"]["inputs"] == {"examples": "string[1-3]", "x": "float32[2,4]"}
    assert any(t["status"] == "ok" and not t["intra_op_threads"] for t in result["trials"])


def test_calibrate_replays_a_users_rest_file(
    test_models: Callable[[], Path], tmp_path: Path
) -> None:
    requests = tmp_path / "requests.jsonl"
    lines = [{"instances": [ROW] * n} for n in (1, 4)]
    lines.append({"signature_name": "by_ids", "inputs": {"ids": [[0, 1, 2, 3]] * 2}})
    requests.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, result, err = _calibrate(
        "--model", str(test_models() / "sm_good"), "--requests", str(requests)
    )
    assert code == 0, err[-2000:]
    source = result["workload"]["inputs_source"]
    assert source == {
        "kind": "file",
        "file": str(requests),
        "requests": 3,
        "batch_sizes": [1, 4],
        "detail": None,
    }


def test_calibrate_refuses_a_kserve_v2_body_with_the_requests_exit_code(
    test_models: Callable[[], Path], tmp_path: Path
) -> None:
    """A KServe v2 body begins with { and has inputs, as a TF Serving body does: it is refused
    as what it is, one line and exit 18 (the parser's rule: tests/unit/trials/test_rest.py)."""
    requests = tmp_path / "kserve.json"
    tensor = {"name": "features", "shape": [1, 16], "datatype": "FP32", "data": ROW}
    requests.write_text(json.dumps({"inputs": [tensor]}))
    code, result, err = _calibrate(
        "--model", str(test_models() / "sm_good"), "--requests", str(requests)
    )
    assert (code, result) == (18, {}), err[-2000:]
    said = f"{requests}: record 1: a KServe v2 (Open Inference Protocol) request, which is not"
    (line,) = [line for line in err.splitlines() if said in line]
    assert line.endswith("or a TFRecord of PredictionLog"), err[-2000:]


#: a trial (not an inspection) loads the model with a REST file of three requests; replay's wait
#: counts the requests run, so the count after loading is how many ran before any measuring
_TRIAL_LOAD = """
import sys
from advisor.trials.child import replay, trial
from advisor.trials.wire import TrialRequest

ran = []
waited = replay.wait
def counting(outputs, *args, **kwargs):
    ran.append(1)
    return waited(outputs, *args, **kwargs)
replay.wait = counting
request = TrialRequest(mode="trial", model_format="savedmodel", path=sys.argv[1],
                       signature="serving_default", batch_size=1, concurrency=1, warmup_s=0.0,
                       measure_s=0.1, requests=sys.argv[2], requests_origin="file")
trial._load(request)
print(len(ran))
"""


def test_a_trial_runs_every_distinct_request_once_at_load(
    test_models: Callable[[], Path], tmp_path: Path
) -> None:
    """A trial's warm-up window may not reach every request: each runs once when the trial
    loads, so no shape is met first in the measured window."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text("\n".join(json.dumps({"instances": [ROW] * n}) for n in (1, 2, 3)))
    done = subprocess.run(
        [sys.executable, "-c", _TRIAL_LOAD, str(test_models() / "sm_good"), str(requests)],
        env={**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "3"
