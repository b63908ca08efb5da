"""Local output files of a run: checked before the sweep, written whole or not at all.

A path that cannot be written is refused before minutes of measuring (the folder is tried for
real); the new content is staged in a temp file beside the target and renamed into place only once
everything else was published, so a failed run leaves every file as it was.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from advisor.atomic import StagedWrite, stage_write
from advisor.errors import Opt, OutputError, UsageError


def check_output_path(option: str, path: Path) -> None:
    """Refuse an output path before the sweep that could not be written after it (``option``:
    the one that named it, for the message).

    The folder is tried for real (a temp file made and removed): root passes every permission
    check, and a pseudo or read-only filesystem (/proc, a read-only root) only refuses a write.
    """
    # through a symlink the write lands beside the file it points to (see stage_file)
    real = Path(os.path.realpath(path)) if path.is_symlink() else path
    folder = real.parent if str(real.parent) else Path()
    if path.is_dir():
        raise UsageError(Opt(option), f" {path}: is a directory")
    if path.exists() and not path.is_file():
        # the result is renamed into place: a device or a pipe would be replaced, not written to
        raise UsageError(Opt(option), f" {path}: is not a regular file")
    if not folder.is_dir():
        problem = "is not a directory" if folder.exists() else "does not exist"
        raise UsageError(Opt(option), f" {path}: folder {folder} {problem}")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{path.name}.", suffix=".tmp"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(
            Opt(option), f" {path}: folder {folder} is not writable ({reason})"
        ) from None


@dataclass(frozen=True)
class StagedFile:
    """A file's new content, complete on disk next to it, not yet in its place."""

    staged: StagedWrite
    #: the option that named the file, for messages
    option: Opt

    @property
    def path(self) -> Path:
        """The file that is replaced (through a symlink: the file it points to)."""
        return self.staged.target

    def commit(self) -> None:
        try:
            self.staged.commit()
        except OSError as exc:
            reason = exc.strerror or exc
            raise OutputError(self.option, f" {self.path}: cannot write it ({reason})") from None

    def discard(self) -> None:
        self.staged.discard()


def stage_file(path: Path, text: str, option: str) -> StagedFile:
    """Temp file in the same folder, to be renamed by ``commit``: a reader never sees half a
    file, and a run that fails later (the cluster write) leaves the old file as it was.
    A symlink is followed: the rename replaces the file it points to, not the link."""
    try:
        staged = stage_write(path, text)
    except OSError as exc:
        reason = exc.strerror or exc
        raise OutputError(Opt(option), f" {path}: cannot write it ({reason})") from None
    return StagedFile(staged, Opt(option))
