"""Whether the race's answer is settled: more measurement could not change the advice by more than
its tolerance (the rule in words is ``advisor.calibrate.search``'s docstring), and what keeps it
open when it is not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.calibrate.budget import SearchSettings
from advisor.calibrate.choice import TRADE_OFF, Choice, beats
from advisor.calibrate.rounds import unstable
from advisor.calibrate.state import BASELINE, SearchState
from advisor.calibrate.statistics import noise_band, paired_rounds, within
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
    two no wider than ``settle_band``) or beaten by it beyond noise (and in the rounds), and a
    replaced incumbent was beaten clearly (``_narrow``). A setting dropped from the race (it lost,
    or its trial failed) is not waited on, the incumbent included.

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
        elif within(measure.value(s), measure.value(pick), TRADE_OFF) and (
            noise_band(s, pick, measure) <= settings.settle_band
        ):
            continue  # a choice between the two costs less than the tolerance, and is known to
        elif beats(pick, s, state.objective, state.p99_slo_ms):
            continue  # it lost beyond noise, in the rounds too: more windows will not advise it
        else:
            open_.append((key, "noise"))
    if _narrow(choice, settings, measure) and not any(k == pick.setting for k, _ in open_):
        open_.append((pick.setting, "incumbent"))
    return Settlement(tuple(open_))


def _narrow(choice: Choice, settings: SearchSettings, measure: Measure) -> bool:
    """The advice replaced the incumbent narrowly: by less than ``clear_margin`` times the band
    of the two, unless by more than ``replace_margin`` times it in every one of at least
    ``replace_rounds`` race rounds that measured both (five of five: one chance in 32 for two
    settings that do not differ).

    Stricter than the choice's own rule: the stopping rule is asked after every round, and a
    margin one look would trust is crossed by chance more often when looked at again and again;
    a few windows also make a band that is too narrow (their spread is a guess)."""
    held = choice.incumbent
    if choice.kept or held is None or choice.versus_incumbent is None:
        return False
    if choice.incumbent_band is None:
        return True
    margin = abs(choice.versus_incumbent - 1) / max(choice.incumbent_band, 1e-9)
    if margin >= settings.clear_margin:
        return False
    pairs = paired_rounds(choice.chosen, held, measure)
    lower = measure.lower_is_better
    won = all((a < b) if lower else (a > b) for a, b in pairs)
    return not (margin >= settings.replace_margin and won and len(pairs) >= settings.replace_rounds)
