"""What a sweep tells as it goes: one ``Progress`` event per step, for a terminal's bar or a log.

The search (``advisor.calibrate``) and the pipeline emit them and the CLI draws them, so they live
here, below both, rather than beside the trials.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field

from advisor.models.base import StrictModel


class Progress(StrictModel):
    """One step of a sweep as it happens: inspecting, a trial started or finished, a round planned.

    The search's steps carry how much of its budget is spent, so a terminal can draw a bar from
    the numbers themselves; elsewhere ``line`` is what is logged.
    """

    text: str = Field(description="what happens, in words")
    elapsed_s: float | None = Field(default=None, description="seconds of the budget spent")
    budget_s: float | None = Field(default=None, description="the budget the search plans in")

    @property
    def line(self) -> str:
        """``[ 11/60 s] round 0 trial 2/5: ...`` for a step of the search, else the text."""
        if self.elapsed_s is None or self.budget_s is None:
            return self.text
        return f"[{self.elapsed_s:3.0f}/{self.budget_s:.0f} s] {self.text}"


#: receives the sweep's events as they happen (the CLI: a bar on a terminal; else they are logged)
ProgressFn = Callable[[Progress], None]
