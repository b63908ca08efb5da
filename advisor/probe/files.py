"""Reading small kernel files under a host root, turning every failure into a warning.

Every probe reader goes through here so that a missing or unreadable file is reported the same
way everywhere: as a warning naming the file as it would be named on the probed system (the
host-root prefix stripped), never as an exception reaching the user.
"""

from __future__ import annotations

from pathlib import Path


class HostFiles:
    """A host root plus the warnings collected while reading below it."""

    def __init__(self, host_root: Path) -> None:
        self.root = host_root
        self.warnings: list[str] = []

    def path(self, absolute: str) -> Path:
        """The file that ``absolute`` (a path on the probed system) is under the host root."""
        return self.root / absolute.lstrip("/")

    def show(self, path: Path) -> str:
        """``path`` as named on the probed system, for warnings."""
        try:
            return "/" + path.relative_to(self.root).as_posix().lstrip("/")
        except ValueError:
            return str(path)

    def warn(self, path: Path, problem: str) -> None:
        self.warnings.append(f"{self.show(path)}: {problem}")

    def read(self, path: Path, *, required: bool = True) -> str | None:
        """The stripped text, or None. A missing file is only a warning when ``required``."""
        try:
            return path.read_text(encoding="utf-8", errors="strict").strip()
        except (FileNotFoundError, NotADirectoryError):
            if required:
                self.warn(path, "missing")
            return None
        except UnicodeDecodeError:
            self.warn(path, "not text")
            return None
        except OSError as exc:
            self.warn(path, f"unreadable ({exc.strerror or type(exc).__name__})")
            return None

    def read_int(self, path: Path, *, required: bool = True) -> int | None:
        """An integer file (e.g. cpu.shares); garbage is a warning and None."""
        text = self.read(path, required=required)
        if text is None:
            return None
        try:
            return int(text)
        except ValueError:
            self.warn(path, f"not an integer: {excerpt(text)}")
            return None


def excerpt(text: str) -> str:
    """A short repr of file content for a warning (long garbage is cut)."""
    return repr(text if len(text) <= 40 else text[:40] + "...")
