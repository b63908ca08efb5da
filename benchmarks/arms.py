"""Which processes the judge measures for one subject and quota, and which keys share them.

Two rules, both about measuring one setting once on purpose and twice on purpose:

- **A twin shares its windows.** TF's default (no thread variable set) is intra = inter = the
  affinity count, as the advisor's baseline assumes; the grid point spelled that way is the same
  setting. Measured as two processes, their figures differed by up to 20% in one run by noise
  alone, so a kept default's advice (published spelled out) came out "better" or "worse" than TF's
  default. The spelled-out key shares the no-variable process's windows instead: one process, one
  set of figures, under both names.
- **The advice is also measured as two arms** (an A/A test): a second process of the same
  setting, in the same rounds and in the second look whenever the advice is in it. How far the two
  arms' figures are apart is the judge's own noise for exactly the figure a near-best verdict
  rests on; where it exceeds the target's tolerance the report says the verdict cannot be told.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks import figures
from benchmarks.pool import DEFAULT, Arm
from benchmarks.results import Pooled


def default_twin(affinity: int) -> Arm:
    """TF's default spelled out: both pools at the affinity count."""
    return Arm.of(affinity, affinity)


@dataclass(frozen=True)
class Arms:
    #: every setting a scenario names (TF's default, the rule, the grid, each advice), once
    settings: tuple[Arm, ...]
    #: key -> the key of the process whose windows it shares
    shared: dict[str, str] = field(default_factory=dict)
    #: the key an A/A pair is measured under -> its second arm's key
    second: dict[str, str] = field(default_factory=dict)

    def resolve(self, key: str) -> str:
        """The key of the process that measures ``key``."""
        return self.shared.get(key, key)

    @property
    def measured(self) -> list[Arm]:
        """One process per setting that is not shared, and one per second arm."""
        own = [s for s in self.settings if s.key not in self.shared]
        by_key = {s.key: s for s in own}
        return [*own, *(by_key[first].second_arm() for first in self.second)]

    def contenders(self, keys: Iterable[str]) -> list[str]:
        """``keys`` as the processes that measure them, each with its second arm, once each."""
        out: list[str] = []
        for key in keys:
            first = self.resolve(key)
            out += [first] + ([self.second[first]] if first in self.second else [])
        return list(dict.fromkeys(out))

    def share(self, stats: MutableMapping[str, Any]) -> None:
        """Put each shared key's figures under its own name too (the very same figures)."""
        for key, owner in self.shared.items():
            if owner in stats:
                stats[key] = stats[owner]

    def pair(self, key: str) -> tuple[str, str] | None:
        """The two arms that measure ``key``'s setting, None when it has no second arm."""
        first = self.resolve(key)
        return None if first not in self.second else (first, self.second[first])


def plan_arms(settings: Sequence[Arm], affinity: int, advice: Iterable[Arm]) -> Arms:
    """The arms for ``settings``: the default's twin shares the default's process (when both are
    measured), and every setting in ``advice`` gets a second arm."""
    unique = tuple(dict.fromkeys(settings))
    keys = {s.key for s in unique}
    twin = default_twin(affinity).key
    shared = {twin: DEFAULT.key} if {twin, DEFAULT.key} <= keys else {}
    arms = Arms(unique, shared)
    second = {}
    for setting in advice:
        first = arms.resolve(setting.key)
        if first in keys:
            second[first] = f"{first}#2"
    return Arms(unique, shared, second)


def aa_figures(
    stats: Mapping[str, Pooled], pair: tuple[str, str], objective: str
) -> dict[str, Any]:
    """The A/A result of one pair: both arms' figures and how far apart they are, as a fraction
    of the smaller (0.12 = the same setting measured 12% apart)."""
    values = [figures.objective_value(stats[key], objective) for key in pair]
    low, high = min(values), max(values)
    return {
        "arms": list(pair),
        "values": values,
        "rounds": [stats[key].rounds for key in pair],
        "noise": None if low <= 0 else round(high / low - 1, 3),
    }
