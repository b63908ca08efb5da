"""The TF Serving model factory (testkit/serving_models.py): every kind builds in TF Serving's
layout, loads, and its warmup file replays through the model's own signatures with plain
TensorFlow (tests/system/serving_replay.py, an independent reader), so the files are what TF
Serving would replay at load time, for the advisor's tests and the benchmark's ``serving`` family.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testkit import serving_models, serving_requests
from tests.support import REPO
from tests.support.real_parts import need_module

pytestmark = pytest.mark.tf

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 300


def _child(argv: list[str]) -> dict[str, Any]:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=REPO,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return answer


def _build(kind: str, base: Path, *extra: str) -> dict[str, Any]:
    return _child(["-m", "testkit.serving_models", "build", kind, str(base), *extra])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], Any]]:
    """Every kind built once (as ``BASE/1``) and its warmup file replayed by the independent
    reader: kind -> (what the factory said, what the replay saw)."""
    need_module("tensorflow_serving.apis", "tensorflow-serving-api is not installed")
    root = tmp_path_factory.mktemp("serving")
    out = {}
    for kind in serving_models.KINDS:
        info = _build(kind, root / kind)
        out[kind] = (info, _child([str(HERE / "serving_replay.py"), info["version_dir"]]))
    return out


@pytest.mark.parametrize("kind", list(serving_models.KINDS))
def test_each_kind_is_a_tf_serving_version_whose_warmup_replays(
    built: dict[str, tuple[dict[str, Any], Any]], kind: str
) -> None:
    info, replay = built[kind]
    version = Path(info["version_dir"])
    assert version == Path(info["base"]) / "1"
    assert (version / "saved_model.pb").is_file()
    assert (version / "variables").is_dir()
    assert Path(info["warmup"]) == version / "assets.extra" / "tf_serving_warmup_requests"
    records = replay["records"]
    assert len(records) == serving_models.DEFAULT_REQUESTS
    # each record replayed through the signature it names, one output row per example
    batches = []
    for record in records:
        assert record["model"] == kind  # the base directory's name, as TF Serving names it
        assert record["finite"]
        rows = {shape[0] for _, shape in record["inputs"].values()}
        assert len(rows) == 1
        (batch,) = rows
        assert {shape[0] for shape in record["outputs"].values()} == {batch}
        batches.append(batch)
    assert tuple(batches) == tuple(info["batch_sizes"])
    assert set(batches) <= set(range(1, serving_requests.MAX_BATCH + 1))
    assert len(set(batches)) >= 4  # varying, not one size
    # what the serving signature takes, as the refused models do
    default = [r for r in records if r["signature"] == "serving_default"]
    assert default
    assert {k: v[0] for k, v in default[0]["inputs"].items()} == EXPECTED_DTYPES[kind]


EXPECTED_DTYPES = {
    "tfexample": {"examples": "string"},
    "text": {"sentences": "string"},
    "bert": {"input_ids": "int32", "attention_mask": "int32"},
    "image_bytes": {"image_bytes": "string"},
    "recommender": {"user_id": "int64", "item_ids": "int64"},
}


def test_tfexample_requests_use_predict_classify_and_regress(
    built: dict[str, tuple[dict[str, Any], Any]],
) -> None:
    info, replay = built["tfexample"]
    assert replay["methods"]["classify"] == "tensorflow/serving/classify"
    assert replay["methods"]["regress"] == "tensorflow/serving/regress"
    assert replay["methods"]["serving_default"] == "tensorflow/serving/predict"
    kinds = {r["kind"]: r for r in replay["records"]}
    assert set(kinds) == {"predict_log", "classify_log", "regress_log"}
    assert kinds["classify_log"]["signature"] == "classify"
    assert set(kinds["classify_log"]["outputs"]) == {"scores", "classes"}
    regress = kinds["regress_log"]
    assert regress["outputs"]["outputs"] == [regress["inputs"]["inputs"][1][0]]
    assert info["inputs"] == {"examples": "string[None]"}


def test_bert_sequences_vary_in_length(built: dict[str, tuple[dict[str, Any], Any]]) -> None:
    info, replay = built["bert"]
    assert info["inputs"] == {
        "input_ids": "int32[None, None]",
        "attention_mask": "int32[None, None]",
    }
    widths = {r["inputs"]["input_ids"][1][1] for r in replay["records"]}
    assert len(widths) >= 10
    assert max(widths) <= serving_requests.BERT_MAX_LEN
    assert max(r["first"]["input_ids"][1] for r in replay["records"]) < serving_requests.BERT_VOCAB


def test_image_requests_are_real_jpegs(built: dict[str, tuple[dict[str, Any], Any]]) -> None:
    _, replay = built["image_bytes"]
    assert {r["first"]["image_bytes"][:4] for r in replay["records"]} == {"ffd8"}  # SOI marker


def test_recommender_ids_spread_over_the_whole_tables(
    built: dict[str, tuple[dict[str, Any], Any]],
) -> None:
    _, replay = built["recommender"]
    users = [r["first"]["user_id"] for r in replay["records"]]
    items = [r["first"]["item_ids"] for r in replay["records"]]
    assert max(u[1] for u in users) > serving_models.USERS // 2
    assert min(u[0] for u in users) < serving_models.USERS // 100
    assert max(i[1] for i in items) > serving_models.ITEMS // 2
    assert max(i[1] for i in items) < serving_models.ITEMS


def test_one_seed_gives_the_same_warmup_bytes(tmp_path: Path) -> None:
    args = ["--warmup-requests", "4", "--batch-size", "3", "--version", "2"]
    first = _build("text", tmp_path / "a" / "text", *args)
    again = _build("text", tmp_path / "b" / "text", *args)
    other = _build("text", tmp_path / "c" / "text", *args, "--seed", "7")
    assert first["version_dir"] == str(tmp_path / "a" / "text" / "2")
    assert first["batch_sizes"] == [3, 3, 3, 3]
    a, b, c = (Path(x["warmup"]).read_bytes() for x in (first, again, other))
    assert a == b
    assert a != c


@pytest.mark.parametrize("kind", list(serving_models.KINDS))
def test_the_benchmarks_judge_replays_each_kind_in_the_files_order(
    built: dict[str, tuple[dict[str, Any], Any]], kind: str
) -> None:
    """benchmarks/harness_child.py ``--serving`` (the serving family's judge) reads the same file
    its own way: every record, its batch, and a window of requests each timed alone."""
    info, _ = built[kind]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.update(TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1")
    commands = [
        {"cmd": "measure", "window_s": 0.3, "warmup_s": 0.05, "concurrency": 1},
        {"cmd": "measure", "window_s": 0.3, "warmup_s": 0.0, "concurrency": 2},
        {"cmd": "quit"},
    ]
    argv = ["-m", "benchmarks.harness_child", "serve", "--serving", info["version_dir"]]
    proc = subprocess.run(
        [sys.executable, *argv],
        input="".join(json.dumps(c) + "\n" for c in commands),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=REPO,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ready, *windows = (json.loads(line) for line in proc.stdout.splitlines())
    assert ready["requests"] == {"count": 32, "batch_sizes": info["batch_sizes"]}
    assert set(ready["inputs"]) == set(EXPECTED_DTYPES[kind])
    assert len(windows) == 2
    for window in windows:
        assert window["completed"] >= 1
        assert all(ms > 0 for ms in window["latencies_ms"])
