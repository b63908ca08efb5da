"""User models: SavedModels and .keras files the tests build themselves, loaded in trial children.

The models are built once per module by tests/support/fake_trials/build_models.py in a child
process, so tensorflow never enters the pytest process. Every bad model must end as one exact
ModelError line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.errors import ModelError
from advisor.models import ThreadSetting
from advisor.trials.runner import inspect_subject, run_trial

pytestmark = pytest.mark.tf

DEADLINE_S = 180.0


@pytest.fixture(scope="module")
def models(test_models: Callable[[], Path]) -> Path:
    return test_models()


def test_a_savedmodel_signature_is_described(models: Path) -> None:
    default = inspect_subject(SubjectSpec(str(models / "sm_good")))
    assert default.model_format == "savedmodel"
    assert default.path == str(models / "sm_good")
    assert default.signature == "serving_default"
    assert default.model_dump()["inputs"] == {"features": "float32[1,16]"}
    # int inputs that index a table are spread over its rows (this one has 4)
    by_ids = inspect_subject(SubjectSpec(str(models / "sm_good"), "by_ids", batch_size=3))
    assert by_ids.signature == "by_ids"
    assert by_ids.model_dump()["inputs"] == {"ids": "int64[3,4]"}
    assert by_ids.batch_size == 3
    assert by_ids.signature_digest != default.signature_digest


def test_a_fixed_batch_dimension_is_used_when_the_batch_size_matches(models: Path) -> None:
    info = inspect_subject(SubjectSpec(str(models / "sm_fixed_batch"), batch_size=4))
    assert info.model_dump()["inputs"] == {"x": "float32[4,16]"}


def test_a_multi_input_keras_model_is_described(models: Path) -> None:
    info = inspect_subject(SubjectSpec(str(models / "two_inputs.keras")))
    assert info.model_format == "keras"
    assert info.signature is None
    assert info.model_dump()["inputs"] == {"numbers": "float32[1,8]", "tokens": "int32[1,3]"}


def test_real_trials_on_a_savedmodel_and_a_keras_file(models: Path) -> None:
    saved = run_trial(
        TrialSpec(ThreadSetting(1, 1), warmup_s=0.1, measure_s=0.3),
        SubjectSpec(str(models / "sm_good"), "by_ids", batch_size=2),
        deadline_s=DEADLINE_S,
    )
    keras_file = run_trial(
        TrialSpec(ThreadSetting(2, 1), warmup_s=0.1, measure_s=0.3),
        SubjectSpec(str(models / "cnn.keras"), batch_size=2, concurrency=2),
        deadline_s=DEADLINE_S,
    )
    for result in (saved, keras_file):
        assert result.status == "ok", result.reason
        assert result.requests is not None
        assert result.requests >= 1
        assert result.p99_ms is not None
        assert result.p99_ms > 0
        assert result.threads is not None


@pytest.mark.parametrize(
    ("name", "signature", "batch_size", "message"),
    [
        ("sm_good", "predict", 1, "{m}: no signature 'predict'; it has: by_ids, serving_default"),
        (
            "sm_string",
            "serving_default",
            1,
            "{m}: input 'text' is raw text (not parsed as tf.Example nor looked up as a "
            "category), which cannot be synthesised meaningfully; give recorded requests: the "
            "model's assets.extra/tf_serving_warmup_requests or --requests FILE",
        ),
        (
            "sm_unknown_dim",
            "serving_default",
            1,
            "{m}: give the unknown dimensions after the batch with --input-shape 'x=D1' "
            "(input 'x' float32[?,?])",
        ),
        (
            "sm_fixed_batch",
            "serving_default",
            2,
            "{m}: input 'x' float32[4,16] has a fixed batch dimension 4; use batch size 4 "
            "(asked for 2)",
        ),
        (
            "sm_fails",
            "serving_default",
            1,
            "{m}: the model failed on synthesised inputs (x=float32[1,3]): assertion failed: "
            "[inputs must exceed 2]",
        ),
        (
            "sm_corrupt",
            "serving_default",
            1,
            "{m}: not a loadable SavedModel: Cannot parse file",
        ),
        (
            "garbage.keras",
            "serving_default",
            1,
            "{m}: not a Keras .keras file (its content is not a zip archive)",
        ),
    ],
)
def test_an_unusable_model_is_one_model_error_line(
    models: Path, name: str, signature: str, batch_size: int, message: str
) -> None:
    path = models / name
    with pytest.raises(ModelError) as caught:
        inspect_subject(SubjectSpec(str(path), signature, batch_size=batch_size))
    text = str(caught.value)
    assert text.startswith(message.format(m=path))
    assert "\n" not in text
    assert "Traceback" not in text


def test_a_trial_on_an_unusable_model_fails_with_the_model_error(models: Path) -> None:
    path = models / "sm_string"
    result = run_trial(
        TrialSpec(ThreadSetting(1, 1), warmup_s=0.1, measure_s=0.1),
        SubjectSpec(str(path)),
        deadline_s=DEADLINE_S,
    )
    assert result.status == "failed"
    assert result.reason == (
        f"ModelError: {path}: input 'text' is raw text (not parsed as tf.Example nor looked up "
        "as a category), which cannot be synthesised meaningfully; give recorded requests: the "
        "model's assets.extra/tf_serving_warmup_requests or --requests FILE"
    )
