"""What one trial measures and on what: plain values the search decides and the trials carry out.

They live with the decisions, not with the process code, so the search can name a setting
without importing anything that starts a process.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.models import OPTION, OnednnValue, ThreadSetting


@dataclass(frozen=True)
class SubjectSpec:
    """The subject, the model under test, as the child loads and feeds it: the built-in network
    or a user's SavedModel or .keras file. ("Workload", here, is always a Kubernetes one.)"""

    model_path: str | None  # None = the built-in model
    # the options' defaults (the option table's)
    signature: str = OPTION["signature"].default
    batch_size: int = OPTION["batch_size"].default
    #: ``--input-shape`` in its canonical spelling (None: none given)
    input_shape: str | None = OPTION["input_shape"].default
    concurrency: int = OPTION["concurrency"].default
    #: ``--requests``: a request file, ``none``, or None (the model's warmup file, if any)
    requests: str | None = OPTION["requests"].default


@dataclass(frozen=True)
class TrialSpec:
    """One setting to measure (``ThreadSetting.TF_DEFAULT``: the baseline) and its window."""

    setting: ThreadSetting
    warmup_s: float
    measure_s: float
    round: int = 0
    #: the window also lasts until this many requests have completed (a p99 needs a few hundred
    #: samples: a 1 s window of a 20 ms model has 50, and its "p99" is its maximum) ...
    min_requests: int = 0
    #: ... but never longer than this (None: ``measure_s`` alone decides)
    max_measure_s: float | None = None
    #: TF_ENABLE_ONEDNN_OPTS for this trial (None: TF's default; an inherited value is removed)
    onednn: OnednnValue | None = None

    @property
    def longest_s(self) -> float:
        """The longest this trial may measure, for its deadline."""
        return max(self.measure_s, self.max_measure_s or 0.0)
