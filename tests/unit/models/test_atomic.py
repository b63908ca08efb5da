"""advisor.atomic: a file is replaced whole or not at all, beside the file a symlink points to,
flushed to disk before the rename, with no temp file left behind either way."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from advisor import atomic
from advisor.atomic import stage_write, write_atomically


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_write_replaces_the_file_with_the_mode_consumers_read(tmp_path: Path) -> None:
    target = tmp_path / "advice.env"
    target.write_text("old\n")
    target.chmod(0o600)
    write_atomically(target, "new ünïcode\n")
    assert target.read_text(encoding="utf-8") == "new ünïcode\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert names(tmp_path) == ["advice.env"]


def test_the_content_is_fsynced_before_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.html"
    seen: list[tuple[str, bool]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        seen.append((path.read_text(), target.exists()))
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    write_atomically(target, "<html>")
    # the temp file's full content, while the target did not exist yet
    assert seen == [("<html>", False)]


def test_a_failed_write_leaves_the_old_file_whole_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "advice.env"
    target.write_text("the previous advice\n")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(target, "half of the new one")
    assert target.read_text() == "the previous advice\n"
    assert names(tmp_path) == ["advice.env"]


def test_a_failed_rename_removes_the_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # a file cannot be renamed over a directory
    with pytest.raises(IsADirectoryError):
        write_atomically(target, "text")
    assert names(tmp_path) == ["taken"]
    assert names(target) == []


def test_a_symlink_stays_a_link_and_the_file_it_points_to_is_replaced(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    real = volume / "advice.env"
    real.write_text("old\n")
    link = tmp_path / "advice.env"
    link.symlink_to(real)
    write_atomically(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new\n"
    # the temp file was made beside the real file (one filesystem), and is gone
    assert names(volume) == ["advice.env"]
    assert names(tmp_path) == ["advice.env", "volume"]


def test_a_staged_write_is_invisible_until_committed_and_gone_when_discarded(
    tmp_path: Path,
) -> None:
    target = tmp_path / "out.yaml"
    target.write_text("old\n")
    staged = stage_write(target, "new\n")
    assert staged.tmp.parent == tmp_path and staged.tmp.read_text() == "new\n"
    assert target.read_text() == "old\n"
    staged.discard()
    assert target.read_text() == "old\n"
    assert names(tmp_path) == ["out.yaml"]

    stage_write(target, "newer\n").commit()
    assert target.read_text() == "newer\n"
    assert names(tmp_path) == ["out.yaml"]


def test_a_folder_that_cannot_be_written_raises_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / "missing" / "r.html", "text")
    assert names(tmp_path) == []
