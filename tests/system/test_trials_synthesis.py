"""Synthesis that reads the model: real TensorFlow children on the small models of
tests/support/fake_trials/build_synthesis_models.py, one per kind of signature teams serve.

What was synthesised is read back from a child (tests/support/fake_trials/synthesis_probe.py) that
loads each model through the real ``load_subject``, so tensorflow never enters the pytest
process; ``calibrate`` runs end to end on the tf.Example model, on the BERT-style model with
``--input-shape``, and refuses the raw text model with the model-error exit code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import ModelError
from tests.support import FAKE_TRIALS, REPO
from tests.support.real_parts import need_module

pytestmark = pytest.mark.tf

#: the builder's vocabularies and table sizes (it imports tensorflow: not importable here)
TAGS = {"sports", "news", "music"}
CITIES = {"paris", "lima", "oslo", "pune"}
EMBEDDING_ROWS = 100_000
EXAMPLE_ROWS = 1000
BERT_VOCAB = 512
#: as tests/system/test_calibrate_real.py: the smallest that still fits a few forked trials
#: on a loaded 2-CPU machine (25 s, the floor, leaves one trial where inspection is slow)
BUDGET = "30"


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "2"}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_module("tensorflow")
    out = tmp_path_factory.mktemp("synthesis-models")
    done = subprocess.run(
        [sys.executable, str(FAKE_TRIALS / "build_synthesis_models.py"), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def _probe(kind: str, path: Path, batch: int, input_shape: str | None = None) -> dict[str, Any]:
    argv = [sys.executable, str(FAKE_TRIALS / "synthesis_probe.py"), kind, str(path), str(batch)]
    done = subprocess.run(
        [*argv, *([input_shape] if input_shape else [])],
        capture_output=True,
        text=True,
        timeout=180,
        env=_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_tf_examples_are_built_from_the_parse_spec_in_the_graph(models: Path) -> None:
    answer = _probe("savedmodel", models / "sm_examples", 3)
    assert "error" not in answer, answer
    assert answer["synthesised_from"] == (
        "parse spec (5 features), table sizes (user_id<1000), "
        "vocabularies (city: 4 keys, tags: 3 keys)"
    )
    assert answer["described"] == {"examples": "string[3]"}
    examples = answer["inputs"]["examples"]["values"]
    assert len(examples) == 3
    for example in examples:
        assert set(example) == {"price", "user_id", "tags", "city", "clicks"}
        # a dense feature has its dtype and shape (FixedLenFeature([2], float32))
        assert len(example["price"]) == 2
        assert all(isinstance(v, float) and 0 <= v < 1 for v in example["price"])
        # an id feature that indexes a 1000-row embedding takes ids from all of it
        assert len(example["user_id"]) == 1
        assert 0 <= example["user_id"][0] < EXAMPLE_ROWS
        # var-len strings come from the vocabularies in the graph: one of constants, one of an
        # asset file (the model asserts every value is known: a made-up one fails its first call)
        assert 1 <= len(example["tags"]) <= 4 and set(example["tags"]) <= TAGS
        assert 1 <= len(example["city"]) <= 4 and set(example["city"]) <= CITIES
        # a ragged int feature has a few values
        assert 1 <= len(example["clicks"]) <= 4
    assert len({e["user_id"][0] for e in examples}) == 3
    # a fixed seed: every trial process runs the same computation
    assert _probe("savedmodel", models / "sm_examples", 3) == answer


def test_the_older_parse_op_of_estimator_exports_is_read_too(models: Path) -> None:
    answer = _probe("savedmodel", models / "sm_examples_v1", 4)
    assert answer["synthesised_from"] == ("parse spec (3 features), table sizes (item<50)")
    for example in answer["inputs"]["inputs"]["values"]:
        assert set(example) == {"words", "age", "item"}
        assert len(example["age"]) == 1 and len(example["item"]) == 1
        assert 0 <= example["item"][0] < 50
        # a string feature no vocabulary covers gets short tokens
        assert all(w.isalpha() and 3 <= len(w) <= 8 for w in example["words"])


def test_ids_spread_over_a_100000_row_embedding(models: Path) -> None:
    answer = _probe("keras", models / "embedding.keras", 64)
    assert answer["synthesised_from"] == f"table sizes (ids<{EMBEDDING_ROWS})"
    ids = answer["inputs"]["ids"]
    assert ids["shape"] == [64, 4]
    values = ids["values"]
    assert all(0 <= v < EMBEDDING_ROWS for v in values)
    # the whole table, not its first rows: 256 ids reach both ends and hardly repeat
    assert min(values) < EMBEDDING_ROWS // 100
    assert max(values) > EMBEDDING_ROWS - EMBEDDING_ROWS // 100
    assert len(set(values)) >= 250


def test_an_unknown_sequence_length_takes_its_size_from_input_shape(models: Path) -> None:
    answer = _probe("savedmodel", models / "sm_bert", 2, "input_ids=16;attention_mask=16")
    assert "error" not in answer, answer
    assert answer["described"] == {"attention_mask": "int32[2,16]", "input_ids": "int32[2,16]"}
    assert answer["synthesised_from"] == (
        f"table sizes (input_ids<{BERT_VOCAB}), input-shape attention_mask=16;input_ids=16"
    )
    token_ids = answer["inputs"]["input_ids"]["values"]
    assert all(0 <= v < BERT_VOCAB for v in token_ids)
    assert max(token_ids) >= BERT_VOCAB // 2  # spread over the vocabulary, not 0..3
    # an integer input that indexes no table keeps the small values
    assert set(answer["inputs"]["attention_mask"]["values"]) <= {0, 1, 2, 3}


def test_a_string_looked_up_as_it_is_takes_the_vocabularys_words(models: Path) -> None:
    answer = _probe("savedmodel", models / "sm_category", 5)
    assert answer["synthesised_from"] == "vocabularies (city: 4 keys)"
    assert set(answer["inputs"]["city"]["values"]) <= CITIES


@pytest.mark.parametrize(
    ("name", "input_shape", "message"),
    [
        (
            "sm_bert",
            None,
            "{m}: give the unknown dimensions after the batch with --input-shape "
            "'attention_mask=D1;input_ids=D1' (inputs 'attention_mask' int32[?,?], 'input_ids' "
            "int32[?,?])",
        ),
        (
            "sm_bert",
            "input_ids=16",
            "{m}: give the unknown dimensions after the batch with --input-shape "
            "'attention_mask=D1' (input 'attention_mask' int32[?,?])",
        ),
        (
            "sm_bert",
            "input_ids=16,2;attention_mask=16",
            "{m}: --input-shape input_ids=16,2 gives 2 dimension(s) after the batch; input "
            "'input_ids' int32[?,?] has 1",
        ),
        (
            "sm_bert",
            "input_ids=16;attention_mask=16;token_type_ids=16",
            "{m}: --input-shape names input 'token_type_ids', which the signature lacks (its "
            "inputs: attention_mask, input_ids)",
        ),
        (
            "sm_examples",
            "examples=4",
            "{m}: --input-shape names input 'examples', whose shape string[?] has no unknown "
            "dimension after the batch: give only inputs with unknown dimensions",
        ),
        (
            "sm_text",
            None,
            "{m}: input 'sentences' is raw text (not parsed as tf.Example nor looked up as a "
            "category), which cannot be synthesised meaningfully; give recorded requests: the "
            "model's assets.extra/tf_serving_warmup_requests or --requests FILE",
        ),
        (
            "sm_image",
            None,
            "{m}: input 'image_bytes' is encoded image bytes (decoded in the graph), which "
            "cannot be synthesised meaningfully; give recorded requests: the model's "
            "assets.extra/tf_serving_warmup_requests or --requests FILE",
        ),
    ],
)
def test_what_cannot_be_synthesised_is_one_model_error_line(
    models: Path, name: str, input_shape: str | None, message: str
) -> None:
    answer = _probe("savedmodel", models / name, 1, input_shape)
    assert answer == {"error": message.format(m=models / name)}


def _calibrate(model: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "advisor", "calibrate", "--budget", BUDGET, "--format", "json"]
    return subprocess.run(
        [*argv, "--model", str(model), *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=int(BUDGET) + 90,
        check=False,
    )


@pytest.mark.parametrize(
    ("name", "extra", "inputs"),
    [
        ("sm_examples", (), {"examples": "string[1]"}),
        (
            "sm_bert",
            ("--input-shape", "input_ids=32;attention_mask=32"),
            {"attention_mask": "int32[1,32]", "input_ids": "int32[1,32]"},
        ),
    ],
)
def test_calibrate_end_to_end_on_a_synthesised_model(
    models: Path, name: str, extra: tuple[str, ...], inputs: dict[str, str]
) -> None:
    done = _calibrate(models / name, *extra)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout)
    assert data["workload"]["inputs"] == inputs
    ok = [t for t in data["trials"] if t["status"] == "ok"]
    assert len(ok) >= 2, [(t["status"], t.get("reason")) for t in data["trials"]]


def test_calibrate_refuses_a_raw_text_model_with_the_model_error_code(models: Path) -> None:
    model = models / "sm_text"
    done = _calibrate(model)
    assert done.returncode == ModelError.exit_code, done.stderr[-2000:]
    assert done.stdout == ""
    lines = [line for line in done.stderr.splitlines() if line.startswith("tf-thread-advisor:")]
    assert len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith(f"tf-thread-advisor: error: {model}: input 'sentences' is raw text")
    assert lines[0].endswith(
        "give recorded requests: the model's assets.extra/tf_serving_warmup_requests or "
        "--requests FILE"
    )
    assert "Traceback" not in done.stderr
