"""Checks on a model path that need no TensorFlow, run in the parent before any child starts.

A typo in --model is reported in milliseconds, not after a trial server has imported TF, and
Keras answers a garbage file with a misleading "File not found": the first bytes tell.
"""

from __future__ import annotations

from pathlib import Path

from advisor.calibrate.spec import WorkloadSpec
from advisor.errors import ModelError
from advisor.models import ModelFormat, model_format

#: how each Keras file (``KERAS_SUFFIXES``) begins: checked in the parent, since Keras answers
#: garbage with a misleading "File not found"
_KERAS_MAGIC = {".keras": b"PK\x03\x04", ".h5": b"\x89HDF\r\n\x1a\n"}


_KERAS_FORMAT = {".keras": "a zip archive", ".h5": "HDF5"}


def workload_kind(workload: WorkloadSpec) -> ModelFormat:
    """Which loader a path needs; a path that cannot be a model is a ModelError, in the parent."""
    if workload.model_path is None:
        return "builtin"
    path = Path(workload.model_path)
    if not path.exists():
        raise ModelError(f"{path}: no such file or directory")
    if path.is_dir():
        if not any(path.iterdir()):
            raise ModelError(f"{path}: the directory is empty (expected a SavedModel)")
        if not (path / "saved_model.pb").is_file() and not (path / "saved_model.pbtxt").is_file():
            raise ModelError(f"{path}: not a SavedModel directory (no saved_model.pb in it)")
        return "savedmodel"
    if not path.is_file():
        # a FIFO or a device: opening it to check its first bytes could block forever
        raise ModelError(f"{path}: not a regular file or a directory")
    suffix = path.suffix.lower()
    if model_format(workload.model_path) == "keras":
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


def check_workload(workload: WorkloadSpec) -> ModelFormat:
    """What can be checked without TensorFlow (sizes, the path); ModelError (one line) if wrong.

    Cheap, so it runs before anything that starts TensorFlow: a typo in --model is reported in
    milliseconds, not after a trial server has imported TF.
    """
    where = workload.model_path or "built-in workload"
    if workload.batch_size < 1:
        raise ModelError(f"{where}: batch size {workload.batch_size}: must be at least 1")
    if workload.concurrency < 1:
        raise ModelError(f"{where}: concurrency {workload.concurrency}: must be at least 1")
    return workload_kind(workload)
