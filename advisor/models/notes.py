"""What a reader of a calibration should know beyond its figures, each as a typed note: what
happened and the settings and numbers its sentence needs. ``advisor.calibrate`` and the sweep make
them; ``advisor.render.words.note_text`` puts each into words, once, and the result stores those
words in ``CalibrationResult.notes`` (beside the trial server's and the stored advice's own notes,
which arrive as text).
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.models.setting import ThreadSetting
from advisor.objectives import Measure


@dataclass(frozen=True)
class SloMissed:
    """No setting met the objective's bound: the pick is the best by the bound's own measure."""

    bound: Measure
    p99_slo_ms: float


@dataclass(frozen=True)
class FewerThreads:
    """The advice is not the best but within ``trade`` of it, with fewer threads."""

    chosen: ThreadSetting
    leader: ThreadSetting
    trade: float


@dataclass(frozen=True)
class PassedOver:
    """Settings within noise (``band``) of the best with fewer threads than the advice, but more
    than ``trade`` behind the best: not advised."""

    leader: ThreadSetting
    band: float
    trade: float
    passed: tuple[ThreadSetting, ...]


@dataclass(frozen=True)
class IncumbentUnmeasured:
    """The advice in force could not be measured in this run, so it cannot stand."""

    incumbent: ThreadSetting


@dataclass(frozen=True)
class IncumbentKept:
    """The best measured ``ratio`` against the advice in force (None: no comparable figure),
    inside the noise band of the two: the advice in force is kept."""

    leader: ThreadSetting
    held: ThreadSetting
    measure: Measure
    ratio: float | None
    band: float


@dataclass(frozen=True)
class NoGain:
    """The advice and TF's default measured within ``band`` of each other (``ratio``: the
    advice against the default, None when not comparable)."""

    chosen: ThreadSetting
    band: float
    ratio: float | None


@dataclass(frozen=True)
class OnlyDefault:
    """One CPU in the affinity mask: TF's default (``picks``) was the only setting to measure."""

    picks: ThreadSetting


@dataclass(frozen=True)
class DefaultKept:
    """The advice is TF's default, spelled out as the counts TF picks (``picks``)."""

    picks: ThreadSetting


@dataclass(frozen=True)
class Unmeasured:
    """Settings the budget left unmeasured (never the advice: it was measured)."""

    settings: tuple[ThreadSetting, ...]


@dataclass(frozen=True)
class Unstable:
    """Settings whose windows still disagree by a CV over ``cv``."""

    settings: tuple[ThreadSetting, ...]
    cv: float


#: every note a calibration makes; a new one is a class here and its sentence in ``note_text``
Note = (
    SloMissed
    | FewerThreads
    | PassedOver
    | IncumbentUnmeasured
    | IncumbentKept
    | NoGain
    | OnlyDefault
    | DefaultKept
    | Unmeasured
    | Unstable
)
