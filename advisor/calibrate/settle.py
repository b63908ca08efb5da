"""Whether the race's answer is settled: more measurement could not change the advice by more than
its tolerance (the rule in words is ``advisor.calibrate.search``'s docstring), and what keeps it
open when it is not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.calibrate.choice import TRADE_OFF, Choice, beats
from advisor.calibrate.rounds import unstable
from advisor.calibrate.state import BASELINE, SearchState
from advisor.calibrate.statistics import within
from advisor.models import OpenReason, ThreadSetting


@dataclass(frozen=True)
class Settlement:
    """Settled, or each setting that keeps the race open and why (in the race's order)."""

    open: tuple[tuple[ThreadSetting, OpenReason], ...]
    #: the rule could be asked at all (a race ran, and the pick can be made)
    asked: bool = True

    @property
    def settled(self) -> bool:
        return self.asked and not self.open


def settlement(state: SearchState, alive: Sequence[ThreadSetting]) -> Settlement:
    """The race's answer as the measurement stands: settled when every setting still in it (the
    contenders, the baseline, the incumbent) has the race windows the rule needs and is through
    the stability gate, every one but the pick is within TRADE_OFF of it or beaten by it beyond
    noise (and in the rounds), and a replaced incumbent was beaten by more than twice their band.

    Not asked (never settled) without what TF runs for the baseline (the pick weighs its threads)
    or before the race measured anything.
    """
    settings = state.settings
    stats = state.stats()
    if state.picks is None or not any(s.raced for s in stats.values()):
        return Settlement((), asked=False)
    try:
        choice = state.choose(list(stats.values()))
    except ValueError:
        return Settlement((), asked=False)
    measure, pick = choice.measure, choice.chosen
    racing = [*alive, BASELINE, state.incumbent]
    open_: list[tuple[ThreadSetting, OpenReason]] = []
    for key in dict.fromkeys(racing):
        s = stats.get(key)
        if s is None:
            if key in alive:
                open_.append((key, "windows"))
            continue  # an incumbent that could not be measured cannot stand: nothing to ask
        if not s.raced or s.windows < settings.settle_windows:
            open_.append((key, "windows"))
        elif unstable(s, measure) and s.windows < settings.unstable_windows:
            open_.append((key, "unstable"))
        elif s is pick:
            continue
        elif within(measure.value(s), measure.value(pick), TRADE_OFF):
            continue  # a choice between the two costs less than the tolerance
        elif beats(pick, s, state.objective, state.p99_slo_ms):
            continue  # it lost beyond noise, in the rounds too: more windows will not advise it
        else:
            open_.append((key, "noise"))
    if _narrow(choice, settings.replace_margin) and not any(k == pick.setting for k, _ in open_):
        open_.append((pick.setting, "incumbent"))
    return Settlement(tuple(open_))


def _narrow(choice: Choice, margin: float) -> bool:
    """The advice replaced the incumbent by less than ``margin`` times the band of the two.

    Wider than the focus's question (twice the band): the rule is asked after every round, and
    a margin that one look would trust is crossed by chance more often when looked at again and
    again; a few windows also make a band that is too narrow (their spread is a guess)."""
    if choice.kept or choice.versus_incumbent is None or choice.incumbent_band is None:
        return False
    return abs(choice.versus_incumbent - 1) < margin * choice.incumbent_band
