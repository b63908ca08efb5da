"""How what an advice was measured for differs from what would be measured now: the options of
the workload (objective, its p99 bound, requests in flight, batch size) its provenance records
against the options asked for now.

The one comparison ``run``'s incumbent (is the stored advice evidence for this run?) and
``plan`` (does the advice still fit the workload as it asks now?) make; each words the changes
in its own sentences, and compares what only it knows (the model path, the serving image, the
node) itself. Pure: the provenance and the options in, the changes out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.models import CalibrationOptions, Provenance
from advisor.models.options import Measured


@dataclass(frozen=True)
class Changed:
    """One option the advice was measured for (``was``) that is asked otherwise now (``now``)."""

    what: Measured
    was: Any
    now: Any


def option_changes(prov: Provenance, options: CalibrationOptions) -> dict[Measured, Changed]:
    """The options that differ (empty: the advice was measured for these), by what changed, in
    the order objective, concurrency, batch size, p99 bound."""
    pairs: tuple[tuple[Measured, Any, Any], ...] = (
        ("objective", prov.objective, options.objective),
        ("concurrency", prov.workload.concurrency, options.concurrency),
        ("batch size", prov.workload.batch_size, options.batch_size),
        ("p99 bound (ms)", prov.p99_slo_ms, options.p99_slo_ms),
    )
    return {what: Changed(what, was, now) for what, was, now in pairs if was != now}
