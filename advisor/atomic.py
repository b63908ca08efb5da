"""Files replaced whole or not at all: the new content is written to a temp file beside the target,
flushed to disk, and renamed over it.

A reader (a pod mounting the env file, a browser on the report, the parent reading a trial's
answer) never sees half a file, and a write that fails (a full disk, a file-size limit, a
signal) leaves the previous file as it was. The temp file sits in the target's own folder
because a rename is atomic only within one filesystem; through a symlink that is the folder of
the file it points to, so the link stays a link. Everything here raises ``OSError``; each caller
turns it into its own error and message.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: what every file written here is given: readable by the consumers that mount or serve it
#: (a temp file is created 0600)
FILE_MODE = 0o644


@dataclass(frozen=True)
class StagedWrite:
    """New content complete on disk next to ``target``, not yet in its place."""

    target: Path
    tmp: Path

    def commit(self) -> None:
        """Rename it over the target; the temp file is removed if that fails."""
        try:
            self.tmp.replace(self.target)
        except OSError:
            self.discard()
            raise

    def discard(self) -> None:
        self.tmp.unlink(missing_ok=True)


def stage_write(path: Path, text: str, *, mode: int = FILE_MODE) -> StagedWrite:
    """Write ``text`` to a temp file beside ``path`` (beside the file a symlink points to) and
    fsync it, for ``commit`` to rename later: a caller with several files, or a cluster write
    between, puts all of them in place only once everything else succeeded."""
    target = Path(os.path.realpath(path))
    tmp: Path | None = None
    try:
        with tempfile.NamedTemporaryFile(
            "w",
            encoding="utf-8",
            dir=target.parent,
            prefix=f".{target.name}.",
            suffix=".tmp",
            delete=False,
        ) as handle:
            tmp = Path(handle.name)
            handle.write(text)
            handle.flush()
            # on disk before the rename: after a crash the target holds the old or the new
            # content, never an empty file that the rename made visible first
            os.fsync(handle.fileno())
        tmp.chmod(mode)
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise
    return StagedWrite(target, tmp)


def write_atomically(path: Path, text: str, *, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``text`` in one step (``stage_write`` and ``commit`` at once)."""
    stage_write(path, text, mode=mode).commit()
