"""Which requests a calibration replays, decided in the parent before any child starts.

A TF Serving model ships its own representative requests in its version directory,
``assets.extra/tf_serving_warmup_requests``, which TF Serving replays at load. The advisor
replays them by default too, since they are what the model really serves; ``--requests FILE``
names another file and ``--requests none`` synthesises inputs from the signature instead. Only
cheap checks happen here (the file exists, is a regular file, is not empty; no batch size or
input shape beside it); reading and checking every request against the signature is the child's
(``advisor.trials.child.requests``), where TensorFlow's protos are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.calibrate.spec import SubjectSpec
from advisor.errors import Opt, RequestsError, UsageError
from advisor.models import NO_FILE, OPTION, ModelFormat, RequestsOrigin

#: where TF Serving looks for a model version's warmup requests (a TFRecord of PredictionLog)
WARMUP_FILE = "assets.extra/tf_serving_warmup_requests"


@dataclass(frozen=True)
class RequestsSource:
    """A request file to replay and where it came from."""

    path: str
    origin: RequestsOrigin


def requests_source(subject: SubjectSpec, model_format: ModelFormat) -> RequestsSource | None:
    """The requests to replay for ``subject`` (None: synthesise inputs).

    RequestsError (one line naming the file) for a file that cannot be one; UsageError for a
    batch size or input shape given beside requests that carry their own.
    """
    if subject.requests == NO_FILE:
        return None
    if subject.requests is not None:
        return RequestsSource(_checked(Path(subject.requests)), "file")
    if model_format != "savedmodel" or subject.model_path is None:
        return None
    warmup = Path(subject.model_path) / WARMUP_FILE
    if not warmup.exists():
        return None
    if subject.batch_size != OPTION["batch_size"].default:
        raise UsageError(
            f"{warmup}: the model's warmup requests are replayed, each with its own batch: ",
            Opt("batch_size"),
            " cannot be given with them (",
            Opt("requests"),
            f" {NO_FILE} synthesises inputs of that batch size)",
        )
    if subject.input_shape is not None:
        # as a batch size: ignored beside them, and unlike the replayed shapes the advice records
        raise UsageError(
            f"{warmup}: the model's warmup requests are replayed, each with its own shapes: ",
            Opt("input_shape"),
            " cannot be given with them (",
            Opt("requests"),
            f" {NO_FILE} synthesises inputs of those shapes)",
        )
    return RequestsSource(_checked(warmup), "warmup")


def _checked(path: Path) -> str:
    if not path.exists():
        raise RequestsError(f"{path}: no such request file")
    if not path.is_file():
        # a directory, a FIFO or a device: reading it could block or mean nothing
        raise RequestsError(f"{path}: not a regular file")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise RequestsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if size == 0:
        raise RequestsError(f"{path}: the request file is empty")
    return str(path)
