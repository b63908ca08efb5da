"""A TF Serving base path resolved as TF Serving's default version policy serves it: the highest
numbered version directory, names that are not numbers ignored; fixture trees in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.calibrate.spec import SubjectSpec
from advisor.errors import ModelError
from advisor.trials.modelfile import ServedVersion, served_version, subject_format


def tree(root: Path, *files: str) -> Path:
    """Empty files (and their directories) under ``root``."""
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    return root


def test_the_highest_numbered_version_is_the_one_served(tmp_path: Path) -> None:
    base = tree(
        tmp_path / "m",
        "1/saved_model.pb",
        "2/saved_model.pb",
        "10/saved_model.pb",
        "10/assets.extra/tf_serving_warmup_requests",
    )
    assert served_version(str(base)) == ServedVersion(str(base), 10, str(base / "10"))


def test_versions_compare_as_numbers_and_leading_zeros_read_as_tf_serving_reads_them(
    tmp_path: Path,
) -> None:
    base = tree(tmp_path / "m", "0009/saved_model.pb", "12/saved_model.pbtxt")
    assert served_version(str(base)) == ServedVersion(str(base), 12, str(base / "12"))
    base = tree(tmp_path / "n", "0012/saved_model.pb", "9/saved_model.pb")
    assert served_version(str(base)) == ServedVersion(str(base), 12, str(base / "0012"))


@pytest.mark.parametrize(
    "ignored", ["v3", "3.0", "latest", "99_tmp", ".7", "\u0663"]
)  # \u0663: an Arabic-Indic 3, a digit to str.isdigit, none to TF Serving
def test_entries_that_are_not_numbers_are_ignored(tmp_path: Path, ignored: str) -> None:
    base = tree(tmp_path / "m", "2/saved_model.pb", f"{ignored}/saved_model.pb", "README")
    assert served_version(str(base)) == ServedVersion(str(base), 2, str(base / "2"))


def test_a_savedmodel_a_file_or_a_directory_without_versions_is_no_base_path(
    tmp_path: Path,
) -> None:
    saved = tree(tmp_path / "sm", "saved_model.pb", "1/whatever")
    assert served_version(str(saved)) is None  # a SavedModel, even with a numbered directory
    plain = tree(tmp_path / "plain", "variables.txt", "v1/saved_model.pb")
    assert served_version(str(plain)) is None
    assert served_version(str(tree(tmp_path, "m.keras") / "m.keras")) is None
    assert served_version(str(tmp_path / "missing")) is None


def test_a_highest_version_that_is_no_savedmodel_is_a_model_error_not_a_lower_one(
    tmp_path: Path,
) -> None:
    base = tree(tmp_path / "m", "1/saved_model.pb", "2/variables/variables.index")
    with pytest.raises(ModelError) as raised:
        served_version(str(base))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{base}: a TF Serving base path (versions 1, 2)")
    assert "highest version, 2, is not a SavedModel directory" in message


def test_a_numbered_file_is_a_version_tf_serving_cannot_load(tmp_path: Path) -> None:
    base = tree(tmp_path / "m", "1/saved_model.pb", "3")
    with pytest.raises(ModelError, match=r"versions 1, 3\) whose highest version, 3,"):
        served_version(str(base))


def test_a_directory_that_is_neither_says_both(tmp_path: Path) -> None:
    plain = tree(tmp_path / "plain", "variables.txt")
    with pytest.raises(ModelError) as raised:
        subject_format(SubjectSpec(str(plain)))
    assert str(raised.value) == (
        f"{plain}: not a SavedModel directory (no saved_model.pb in it) nor a TF Serving base "
        "path (no numbered version directory in it)"
    )


def test_a_base_path_checked_before_it_is_resolved_is_named_as_one(tmp_path: Path) -> None:
    """The 'nor a TF Serving base path' wording holds whoever calls: a base path that reaches
    subject_format unresolved is named with the version it serves, a bad one as served_version
    names it."""
    base = tree(tmp_path / "m", "1/saved_model.pb", "2/saved_model.pb")
    with pytest.raises(ModelError) as raised:
        subject_format(SubjectSpec(str(base)))
    assert str(raised.value) == (
        f"{base}: a TF Serving base path, not a SavedModel: the version TF Serving serves from "
        f"it is {base / '2'}"
    )
    broken = tree(tmp_path / "b", "1/saved_model.pb", "2/variables.txt")
    with pytest.raises(ModelError, match="whose highest version, 2, is not a SavedModel"):
        subject_format(SubjectSpec(str(broken)))
