"""The ``calibrate`` command's pipeline: measure thread settings here and return the advice,
publishing nothing.

The same checks before the sweep as ``run`` where they apply (the options, by the model; the
report path, tried for real), the same probe, and the advice in force raced as the incumbent
when the caller names one (a ConfigMap YAML; ``run`` reads its own from where it will write).

In stages, like ``run``, so a caller can wrap the sweep alone (the CLI's progress bar)::

    prepared = prepare_calibration(request)  # UsageError, ... before measuring
    result = prepared.measure(progress)      # the sweep
    prepared.write_report(result)            # the HTML/SVG report, if asked for

``calibrate_only(request)`` does all three.

A model path that is a TF Serving base path is resolved first, to the version directory TF
Serving serves from it (``resolve_served_version``, ``run`` too): that path is what the sweep
measures, the incumbent is compared with and the provenance records, so a new version is a new
model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.models import CalibrationOptions, CalibrationResult, Incumbent, NodeProfile, ProgressFn
from advisor.models.notes import HighestVersion, Note
from advisor.pipeline.files import check_output_path
from advisor.pipeline.incumbent import read_incumbent
from advisor.pipeline.instruments import Instruments
from advisor.render.report import write_report
from advisor.render.words import note_text
from advisor.trials.modelfile import served_version

log = logging.getLogger("advisor.calibrate")


@dataclass(frozen=True)
class CalibrateRequest:
    """What to measure (``options``), against which advice in force (``incumbent``: a ConfigMap
    YAML file, ``-`` for stdin; None: TF's default), and where to put a report (HTML, or SVG
    for a ``.svg`` path)."""

    options: CalibrationOptions = field(default_factory=CalibrationOptions)
    incumbent: str | None = None
    report: Path | None = None
    host_root: Path = Path("/")


@dataclass(frozen=True)
class PreparedCalibration:
    """A calibration whose checks passed, on the probed ``node``; ``measure`` then
    ``write_report``."""

    request: CalibrateRequest
    node: NodeProfile
    incumbent: Incumbent | None
    instruments: Instruments
    #: what the result should say before the sweep's own notes (the version measured)
    notes: tuple[Note, ...] = ()

    def measure(self, progress: ProgressFn | None = None) -> CalibrationResult:
        """The sweep (the budget's time), the incumbent racing as a named arm."""
        request = self.request
        result = self.instruments.sweep(
            request.options, self.node, progress=progress, incumbent=self.incumbent
        )
        return with_notes(result, self.notes)

    def write_report(self, result: CalibrationResult) -> None:
        """The report file, if the request asked for one (OutputError if it cannot be written)."""
        if self.request.report is not None:
            write_report(result, self.request.report)
            log.info("report written to %s", self.request.report)


def resolve_served_version(
    options: CalibrationOptions,
) -> tuple[CalibrationOptions, HighestVersion | None]:
    """The options with a TF Serving base path replaced by the version directory TF Serving
    serves from it, and the note that says so (None: the path was no base path). ModelError when
    the highest version is not a SavedModel."""
    if options.model_path is None:
        return options, None
    served = served_version(options.model_path)
    if served is None:
        return options, None
    note = HighestVersion(served.base_path, served.version, served.path)
    log.info("%s", note_text(note))
    return options.model_copy(update={"model_path": served.path}), note


def with_notes(result: CalibrationResult, notes: tuple[Note, ...]) -> CalibrationResult:
    """``result`` with ``notes`` worded before its own."""
    if not notes:
        return result
    return result.model_copy(update={"notes": [*map(note_text, notes), *result.notes]})


def prepare_calibration(
    request: CalibrateRequest, instruments: Instruments | None = None
) -> PreparedCalibration:
    """The checks before the sweep: the report path (refused now, not after the sweep), the
    probe, and the named incumbent (unreadable or invalid: an error; measured for something
    else: noted, and TF's default races instead)."""
    instruments = instruments or Instruments()
    if request.report is not None:
        check_output_path("report", request.report)
    options, version = resolve_served_version(request.options)
    request = replace(request, options=options)
    node = instruments.probe(request.host_root)
    incumbent = None
    if request.incumbent is not None:
        held = read_incumbent(request.incumbent, node, request.options)
        for note in held.notes:
            log.warning("%s", note_text(note))
        incumbent = held.incumbent
    notes = (version,) if version is not None else ()
    return PreparedCalibration(request, node, incumbent, instruments, notes)


def calibrate_only(
    request: CalibrateRequest,
    progress: ProgressFn | None = None,
    instruments: Instruments | None = None,
) -> CalibrationResult:
    """Check, probe, measure and report, as ``tf-thread-advisor calibrate`` does."""
    prepared = prepare_calibration(request, instruments)
    result = prepared.measure(progress)
    prepared.write_report(result)
    return result
