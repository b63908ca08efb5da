"""Checks on a model path that need no TensorFlow, run in the parent before any child starts.

A typo in --model is reported in milliseconds, not after a trial server has imported TF, and
Keras answers a garbage file with a misleading "File not found": the first bytes tell.

A model path may also be a TF Serving base path: a directory of numbered version directories,
each a SavedModel (``/models/my_model/1``, ``/models/my_model/2``). ``served_version`` resolves
it as TF Serving's default version policy (``latest``, one version) does: the highest number is
the version served, so it is the one measured. Entries whose names are not numbers are ignored,
as TF Serving ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.calibrate.spec import SubjectSpec
from advisor.errors import ModelError
from advisor.models import ModelFormat, format_of

#: how each Keras file (``KERAS_SUFFIXES``) begins: checked in the parent, since Keras answers
#: garbage with a misleading "File not found"
_KERAS_MAGIC = {".keras": b"PK\x03\x04", ".h5": b"\x89HDF\r\n\x1a\n"}


_KERAS_FORMAT = {".keras": "a zip archive", ".h5": "HDF5"}


#: what TF Serving loads from a version directory (either file)
_SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")


@dataclass(frozen=True)
class ServedVersion:
    """A TF Serving base path resolved to the version TF Serving serves from it."""

    base_path: str
    #: the version number, as TF Serving reads the directory's name
    version: int
    #: the version directory: the SavedModel measured
    path: str


def is_saved_model(path: Path) -> bool:
    """A directory TF loads as a SavedModel: it holds saved_model.pb (or .pbtxt)."""
    return any((path / name).is_file() for name in _SAVED_MODEL_FILES)


def served_version(model_path: str) -> ServedVersion | None:
    """The version directory TF Serving serves from ``model_path`` when it is a base path (no
    SavedModel itself, numbered version directories in it); None when it is not one (a
    SavedModel, a file, a path whose problems ``subject_format`` names).

    TF Serving's ``latest`` policy serves the highest version and does not fall back to a lower
    one when that one cannot be loaded, so neither does this: a highest version without a
    saved_model.pb is a ModelError naming it, not a lower version measured in its place."""
    path = Path(model_path)
    if not path.is_dir() or is_saved_model(path):
        return None
    try:
        entries = list(path.iterdir())
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the directory: {exc.strerror or exc}") from None
    versions = {int(e.name): e for e in entries if e.name.isascii() and e.name.isdigit()}
    if not versions:
        return None
    number = max(versions)
    chosen = versions[number]
    if not chosen.is_dir() or not is_saved_model(chosen):
        listed = ", ".join(str(n) for n in sorted(versions))
        raise ModelError(
            f"{path}: a TF Serving base path (versions {listed}) whose highest version, "
            f"{chosen.name}, is not a SavedModel directory (no saved_model.pb in it): TF Serving "
            "would serve that version, so it is the one to measure"
        )
    return ServedVersion(base_path=model_path, version=number, path=str(chosen))


def subject_format(subject: SubjectSpec) -> ModelFormat:
    """Which loader a path needs; a path that cannot be a model is a ModelError, in the parent."""
    if subject.model_path is None:
        return "builtin"
    path = Path(subject.model_path)
    if not path.exists():
        raise ModelError(f"{path}: no such file or directory")
    if path.is_dir():
        if not any(path.iterdir()):
            raise ModelError(f"{path}: the directory is empty (expected a SavedModel)")
        if not is_saved_model(path):
            # callers resolve a base path first (served_version); one reaching here unresolved
            # is named as such, so the message below is true whoever calls
            served = served_version(str(path))
            if served is not None:
                raise ModelError(
                    f"{path}: a TF Serving base path, not a SavedModel: the version TF Serving "
                    f"serves from it is {served.path}"
                )
            raise ModelError(
                f"{path}: not a SavedModel directory (no saved_model.pb in it) nor a TF Serving "
                "base path (no numbered version directory in it)"
            )
        return "savedmodel"
    if not path.is_file():
        # a FIFO or a device: opening it to check its first bytes could block forever
        raise ModelError(f"{path}: not a regular file or a directory")
    suffix = path.suffix.lower()
    if format_of(subject.model_path) == "keras":
        if not _starts_with(path, _KERAS_MAGIC[suffix]):
            raise ModelError(
                f"{path}: not a Keras {suffix} file (its content is not {_KERAS_FORMAT[suffix]})"
            )
        return "keras"
    raise ModelError(f"{path}: expected a SavedModel directory or a .keras file")


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(magic)) == magic
    except OSError as exc:
        raise ModelError(f"{path}: cannot read it: {exc.strerror or exc}") from None


def check_subject(subject: SubjectSpec) -> ModelFormat:
    """What can be checked without TensorFlow (sizes, the path); ModelError (one line) if wrong.

    Cheap, so it runs before anything that starts TensorFlow: a typo in --model is reported in
    milliseconds, not after a trial server has imported TF.
    """
    where = subject.model_path or "built-in model"
    if subject.batch_size < 1:
        raise ModelError(f"{where}: batch size {subject.batch_size}: must be at least 1")
    if subject.concurrency < 1:
        raise ModelError(f"{where}: concurrency {subject.concurrency}: must be at least 1")
    return subject_format(subject)
