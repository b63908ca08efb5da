"""What a reader of a calibration should know beyond its figures, each as a typed note: what
happened and the settings and numbers its sentence needs. ``advisor.calibrate`` and the sweep make
them; ``advisor.render.words.note_text`` puts each into words, once, and the result stores those
words in ``CalibrationResult.notes`` (beside the trial server's own notes, which arrive as text).
The notes on the stored advice (why it is not the incumbent) are made by ``advisor.pipeline``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
class BudgetShort:
    """The budget ended before the paired test could decide: ``leader`` measured ``ratio``
    against the advice in force ``held`` (>1 = better) over ``rounds`` paired rounds, and
    ``more`` rounds like its median one would pass the test: about ``budget_s`` in all, at the
    race rounds' pace here (``statistics.rounds_to_pass``)."""

    leader: ThreadSetting
    held: ThreadSetting
    measure: Measure
    ratio: float | None
    rounds: int
    more: int
    budget_s: float


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


@dataclass(frozen=True)
class HighestVersion:
    """The model path was a TF Serving base path: its highest version (``path``) was measured,
    the one TF Serving's default version policy serves."""

    base_path: str
    version: int
    path: str


#: why a stored advice is not the advice in force. not ours: another tool wrote it; elsewhere:
#: measured for something other than this run measures (``detail``: the differences); invalid:
#: it does not validate; unusable: its file cannot be read as a ConfigMap; unreadable: the env
#: file cannot be read (``detail``: the error)
IgnoredWhy = Literal["not ours", "elsewhere", "invalid", "unusable", "unreadable"]


@dataclass(frozen=True)
class AdviceIgnored:
    """The stored advice at ``source`` is not the incumbent, for ``why``: TF's default is."""

    source: str
    why: IgnoredWhy
    detail: str = ""


@dataclass(frozen=True)
class BadThreadValue:
    """An env file's thread variable ``name`` is missing (``value`` None) or not a thread count
    up to ``cap``: the file is not the incumbent."""

    source: str
    name: str
    value: str | None
    cap: int


@dataclass(frozen=True)
class NoProvenance:
    """An env file is the incumbent with only its values checked: it says nothing of where it
    was measured."""

    source: str


@dataclass(frozen=True)
class UndoneInProduction:
    """The stored advice was undone in production: TF's default is the incumbent."""


@dataclass(frozen=True)
class Forced:
    """``--force``: the stored advice is not the incumbent; TF's default is."""


#: the notes on the stored advice: why it is (or is not) the incumbent
StoredAdviceNote = AdviceIgnored | BadThreadValue | NoProvenance | UndoneInProduction | Forced

#: the notes on the advice in force as this run measured it
IncumbentNote = IncumbentUnmeasured | IncumbentKept | BudgetShort

#: every note a calibration makes; a new one is a class here and its sentence in ``note_text``
Note = (
    SloMissed
    | FewerThreads
    | PassedOver
    | IncumbentNote
    | NoGain
    | OnlyDefault
    | DefaultKept
    | Unmeasured
    | Unstable
    | HighestVersion
    | StoredAdviceNote
)
