"""``calibrate``'s and ``probe``'s results as the formats see them: a summary for people (plain
text, or inside a Markdown or HTML report), their data as JSON and YAML, and a calibration's
trials one per line for spreadsheets."""

from __future__ import annotations

from typing import ClassVar

from advisor.models import CalibrationResult, NodeProfile, TrialResult
from advisor.render.document import PROSE, RECORDS, Capability, Grid, ModelView, grid
from advisor.render.node import node_summary
from advisor.render.table import text_summary

_TRIAL_KEYS = TrialResult.stored_keys()


class CalibrationView(ModelView):
    """A calibration: the table of settings and the advice (``render.table``); CSV: its trials."""

    provides: ClassVar[frozenset[Capability]] = frozenset({PROSE, RECORDS})
    title: ClassVar[str] = "tf-thread-advisor calibration"

    def __init__(self, result: CalibrationResult) -> None:
        super().__init__(result)
        self.result = result

    def summary(self) -> str:
        return text_summary(self.result)

    def records(self) -> Grid:
        """Every trial as measured, the oneDNN pairs after the sweep's; empty: not measured."""
        trials = [*self.result.trials, *self.result.onednn_trials]
        rows = [t.model_dump() for t in trials]
        return grid(_TRIAL_KEYS, [[_raw(row[key]) for key in _TRIAL_KEYS] for row in rows])


class NodeView(ModelView):
    """What a TF process started here has to run on (``render.node``)."""

    title: ClassVar[str] = "tf-thread-advisor probe"

    def __init__(self, profile: NodeProfile) -> None:
        super().__init__(profile)
        self.profile = profile

    def summary(self) -> str:
        return node_summary(self.profile)


def _raw(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)
