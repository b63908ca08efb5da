"""Whether the race's answer is settled: more measurement could not change the advice by more than
its tolerance (the rule in words is ``advisor.calibrate.search``'s docstring), and what keeps it
open when it is not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.calibrate.choice import TRADE_OFF, beats
from advisor.calibrate.rounds import unstable
from advisor.calibrate.state import BASELINE, SearchState
from advisor.calibrate.statistics import ConfigStats, paired_band, within
from advisor.models import OpenReason, ThreadSetting
from advisor.objectives import Measure


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
    the stability gate, every one but the pick is within TRADE_OFF of it (with a noise band of the
    two no wider than ``settle_band``), beaten by it beyond noise (and in the rounds), or behind
    it by no more than its band's edge allows (``_behind``). A
    replacement needs nothing more: its paired test (``choice.replaces``) is valid at whichever
    round it is asked, so stopping at the round it passed costs no error. A setting dropped from
    the race (it lost, or its trial failed) is not waited on; the incumbent is never dropped.

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
    # a dropped setting (it lost, or its trial failed) is never measured again: waiting on its
    # windows would keep the race open until the budget ends it, and the pick leaves it out
    racing = [k for k in (*alive, BASELINE, state.incumbent) if k not in state.outcome.dropped]
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
        elif _tied(s, pick, measure, settings.settle_band) or _behind(s, pick, measure):
            # a choice between the two costs less than the tolerance, and is known to: tied, or
            # worse than the pick and even at its band's better edge not TRADE_OFF better
            continue
        elif beats(pick, s, state.objective, state.p99_slo_ms):
            continue  # it lost beyond noise, in the rounds too: more windows will not advise it
        elif choice.kept and _ahead(measure.value(s), measure.value(pick), measure):
            open_.append((key, "incumbent"))  # better than the advice in force, not yet shown
        else:
            open_.append((key, "noise"))
    return Settlement(tuple(open_))


def _ahead(mine: float, held: float, measure: Measure) -> bool:
    """``mine`` is better than the incumbent's ``held`` by more than TRADE_OFF."""
    return (
        mine < held * (1 - TRADE_OFF) if measure.lower_is_better else mine > held * (1 + TRADE_OFF)
    )


def _behind(s: ConfigStats, pick: ConfigStats, measure: Measure) -> bool:
    """``s`` is worse than the pick in the median of the rounds that measured both, and at the
    better edge of that ratio's noise band no more than TRADE_OFF better than it: whatever more
    rounds show, advising the pick gives up at most the tolerance. Between tied and beaten: a
    setting 5-10% behind inside a 10% band is neither, and would hold the race open until the
    band fell below its gap (with a round's log ratio spread by 0.15, as under a 1-CPU quota,
    some 30 rounds)."""
    middle, band = paired_band(s, pick, measure)
    if measure.lower_is_better:
        return middle > 1.0 and middle * (1 - band) >= 1 - TRADE_OFF
    return middle < 1.0 and middle * (1 + band) <= 1 + TRADE_OFF


def _tied(s: ConfigStats, pick: ConfigStats, measure: Measure, settle_band: float) -> bool:
    """``s`` and the pick are within TRADE_OFF of each other, in the median of the rounds that
    measured both, with a noise band of that ratio no wider than ``settle_band``
    (``statistics.paired_band``: the pooled medians' with too few such rounds)."""
    middle, band = paired_band(s, pick, measure)
    return within(middle, 1.0, TRADE_OFF) and band <= settle_band
