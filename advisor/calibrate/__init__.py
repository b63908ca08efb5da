"""The decisions of a calibration, pure: which settings to try, how to read their measurements
against an objective, how to spend the budget on them, which one to advise.

May import: ``advisor.models``, ``advisor.objectives`` and ``advisor.errors`` only. Nothing here
starts a process, reads a host file or imports TensorFlow, so every decision is tested with plain
values and a fake clock (import-linter checks it). The sweep that ties these to real trials is
``advisor.pipeline.sweep``.
"""

from advisor.calibrate.budget import Clock, SearchSettings, TrialFn

__all__ = ["Clock", "SearchSettings", "TrialFn"]
