"""One thread setting: the intra-op and inter-op pool sizes a trial runs and an advice sets.

TensorFlow's own default (no thread variable set) is a setting like any other,
``ThreadSetting.TF_DEFAULT``: both counts unset. What it costs depends on the node, since TF sizes
both pools from the process's affinity mask, so it is spelled out against the mask
(``spelled_out``) wherever threads are counted or an advice must carry concrete numbers.

"Default" names the unset setting only (``TF_DEFAULT``, ``is_default``); the counts TF runs for
it are ``tf_picks``. The stored and wire forms keep their flat keys (``intra``/``inter`` or
``intra_op_threads``/``inter_op_threads``, null for TF's default), so older advice and results
still load; the models hold a ``ThreadSetting`` read from and written as those keys
(``advisor.models.stored_setting``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

#: thread counts above this are refused everywhere: no node TF runs on has more logical CPUs,
#: and a typo (40000 for 4) must not reach a ConfigMap.
MAX_THREADS = 1024


@dataclass(frozen=True)
class ThreadSetting:
    """intra-op and inter-op threads, both set, or neither: TF's default (``TF_DEFAULT``)."""

    intra: int | None = None
    inter: int | None = None

    #: TF's own default: no thread variable set, both pools sized by TF from the affinity mask
    TF_DEFAULT: ClassVar[ThreadSetting]

    def __post_init__(self) -> None:
        if (self.intra is None) != (self.inter is None):
            raise ValueError(
                f"a thread setting sets both pools or neither (TF's default), not "
                f"intra={self.intra} inter={self.inter}"
            )
        for count in (self.intra, self.inter):
            if count is not None and not 1 <= count <= MAX_THREADS:
                raise ValueError(f"thread count {count} is not within 1..{MAX_THREADS}")

    @classmethod
    def tf_picks(cls, affinity_cpus: int) -> ThreadSetting:
        """The counts TensorFlow picks by itself for a process with ``affinity_cpus`` CPUs in
        its affinity mask: both pools at that count. TF never reads the CFS quota, so this is what
        the baseline trial (no thread variable set) really runs; an advice that keeps the default
        spells these numbers out."""
        n = min(max(1, affinity_cpus), MAX_THREADS)
        return cls(n, n)

    @classmethod
    def from_label(cls, label: str) -> ThreadSetting:
        """The setting ``label`` names (``2/1``, or ``TF default``); ValueError otherwise."""
        if label == "TF default":
            return cls.TF_DEFAULT
        intra, slash, inter = label.partition("/")
        if not (slash and intra.isdigit() and inter.isdigit()):
            raise ValueError(f"{label!r} is not a setting (intra/inter, or 'TF default')")
        return cls(int(intra), int(inter))

    @property
    def is_default(self) -> bool:
        return self.intra is None

    @property
    def label(self) -> str:
        """``2/1`` (intra/inter), or ``TF default``."""
        return "TF default" if self.is_default else f"{self.intra}/{self.inter}"

    @property
    def threads(self) -> int | None:
        """intra + inter, what the setting costs in threads; None for TF's default, whose cost
        is the node's (``cost``)."""
        if self.intra is None or self.inter is None:
            return None
        return self.intra + self.inter

    def spelled_out(self, affinity_cpus: int) -> ThreadSetting:
        """The counts this setting runs with on a process with ``affinity_cpus`` CPUs in its
        affinity mask: itself, or what TF picks when it is TF's default."""
        return ThreadSetting.tf_picks(affinity_cpus) if self.is_default else self

    def cost(self, affinity_cpus: int) -> int:
        """intra + inter as run with ``affinity_cpus`` CPUs in the affinity mask."""
        threads = self.spelled_out(affinity_cpus).threads
        assert threads is not None  # spelled out: both counts set
        return threads


ThreadSetting.TF_DEFAULT = ThreadSetting()
