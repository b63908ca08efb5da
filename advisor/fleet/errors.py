"""The one error of deriving a calibration Job, apart so that every part of the Job raises it."""

from __future__ import annotations


class DeriveError(ValueError):
    """The workload cannot be calibrated as it is; the message says why (a ``skipped``)."""
