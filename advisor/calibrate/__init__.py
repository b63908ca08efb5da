"""Calibration: measure TensorFlow thread settings on this node, within a wall-clock budget.

``calibrate`` is the one entry point; the parent side never imports tensorflow (only the trial
child does), so importing this package stays cheap.
"""

from advisor.calibrate.search import Clock, SearchSettings, TrialFn
from advisor.calibrate.sweep import calibrate

__all__ = ["Clock", "SearchSettings", "TrialFn", "calibrate"]
