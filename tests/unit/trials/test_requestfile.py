"""Which requests a calibration replays, decided in the parent: the model's warmup file unless
``--requests`` says otherwise, and the cheap checks on the file before any child starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.calibrate.spec import SubjectSpec
from advisor.errors import RequestsError, UsageError
from advisor.trials.requestfile import WARMUP_FILE, RequestsSource, requests_source


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model" / "1"
    path.mkdir(parents=True)
    (path / "saved_model.pb").write_bytes(b"pb")
    return path


def _warmup(model: Path, content: bytes = b"records") -> Path:
    file = model / WARMUP_FILE
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(content)
    return file


def test_without_a_warmup_file_inputs_are_synthesised(model: Path) -> None:
    assert requests_source(SubjectSpec(str(model)), "savedmodel") is None
    assert requests_source(SubjectSpec(None), "builtin") is None


def test_the_models_warmup_file_is_replayed_by_default(model: Path) -> None:
    file = _warmup(model)
    assert requests_source(SubjectSpec(str(model)), "savedmodel") == RequestsSource(
        str(file), "warmup"
    )


def test_requests_none_synthesises_even_with_a_warmup_file(model: Path) -> None:
    _warmup(model)
    subject = SubjectSpec(str(model), requests="none", batch_size=8)
    assert requests_source(subject, "savedmodel") is None


def test_a_users_file_replaces_the_warmup_file(model: Path, tmp_path: Path) -> None:
    _warmup(model)
    mine = tmp_path / "requests.json"
    mine.write_text('{"instances": [1]}')
    subject = SubjectSpec(str(model), requests=str(mine))
    assert requests_source(subject, "savedmodel") == RequestsSource(str(mine), "file")
    # a .keras file has no warmup file, but takes a user's requests
    assert requests_source(SubjectSpec("m.keras", requests=str(mine)), "keras") is not None


def test_a_batch_size_beside_the_warmup_file_is_a_usage_error(model: Path) -> None:
    _warmup(model)
    with pytest.raises(UsageError) as raised:
        requests_source(SubjectSpec(str(model), batch_size=4), "savedmodel")
    line = raised.value.spelled(lambda option: f"--{option.replace('_', '-')}")
    assert "tf_serving_warmup_requests" in line
    assert "--batch-size cannot be given with them (--requests none synthesises" in line


def test_an_input_shape_beside_the_warmup_file_is_a_usage_error(model: Path) -> None:
    _warmup(model)
    with pytest.raises(UsageError) as raised:
        requests_source(SubjectSpec(str(model), input_shape="x=3"), "savedmodel")
    line = raised.value.spelled(lambda option: f"--{option.replace('_', '-')}")
    assert "each with its own shapes" in line
    assert "--input-shape cannot be given with them (--requests none synthesises" in line


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda tmp: tmp / "nope.json", "no such request file"),
        (lambda tmp: tmp, "not a regular file"),
        (lambda tmp: (tmp / "empty.json", (tmp / "empty.json").write_bytes(b""))[0], "is empty"),
    ],
    ids=["missing", "directory", "empty"],
)
def test_a_file_that_cannot_be_one_is_a_requests_error(
    model: Path, tmp_path: Path, make: object, says: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(RequestsError, match=says) as raised:
        requests_source(SubjectSpec(str(model), requests=str(path)), "savedmodel")
    assert str(raised.value).startswith(str(path))
    assert RequestsError.exit_code == 18


def test_an_empty_warmup_file_is_a_requests_error_naming_it(model: Path) -> None:
    file = _warmup(model, b"")
    with pytest.raises(RequestsError, match=f"{file}: the request file is empty"):
        requests_source(SubjectSpec(str(model)), "savedmodel")
