"""What the commands do, callable from Python: a run end to end, a calibration alone, reading an
advice back, how a node drifted from it, the status of every advice in a namespace, the cleanup.

This layer sits between the CLI and the cluster: the CLI parses flags into these calls and prints
their results; everything else (the order of the checks, staging files, what a failure leaves
behind) lives here, so a Python caller gets the same guarantees as ``tf-thread-advisor run``.
What the commands measure with (the node probe, the sweep) is passed in as ``Instruments``.
"""

import importlib
from typing import TYPE_CHECKING

from advisor.models import AdviceStatus
from advisor.pipeline.cleanup import cleanup
from advisor.pipeline.drift import drift, env_differences, installed_tf_version
from advisor.pipeline.instruments import Instruments
from advisor.pipeline.node import profile_node
from advisor.pipeline.source import (
    POD_NAMESPACE_ENV,
    read_advice_file,
    read_cluster_advice,
    validate_advice,
)

if TYPE_CHECKING:
    from advisor.pipeline.calibration import (
        CalibrateRequest,
        PreparedCalibration,
        calibrate_only,
        prepare_calibration,
    )
    from advisor.pipeline.check import CheckOutcome, check_node
    from advisor.pipeline.run import (
        PreparedRun,
        PublishedRun,
        check_run_request,
        prepare_run,
        run_advisor,
    )
    from advisor.pipeline.run_request import RunRequest
    from advisor.pipeline.status import cluster_status, statuses
    from advisor.pipeline.target import serving_target

#: the names whose module is imported on first use (``__getattr__``): a calibration's, a run's,
#: ``status``'s and ``check``'s modules (the report and heatmap writers, the consumers' fit) are
#: most of what importing every command would cost, and ``plan`` uses none of them. ``cleanup``
#: and ``drift`` are imported at once: each is its module's name too, and a module imported before
#: its name was first used would stand in for the function
_LAZY = {
    "CalibrateRequest": "calibration",
    "PreparedCalibration": "calibration",
    "calibrate_only": "calibration",
    "prepare_calibration": "calibration",
    "CheckOutcome": "check",
    "check_node": "check",
    "PreparedRun": "run",
    "PublishedRun": "run",
    "check_run_request": "run",
    "prepare_run": "run",
    "run_advisor": "run",
    "RunRequest": "run_request",
    "cluster_status": "status",
    "statuses": "status",
    "serving_target": "target",
}


def __getattr__(name: str) -> object:
    """A name of ``_LAZY``, imported from its module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "POD_NAMESPACE_ENV",
    "AdviceStatus",
    "CalibrateRequest",
    "CheckOutcome",
    "Instruments",
    "PreparedCalibration",
    "PreparedRun",
    "PublishedRun",
    "RunRequest",
    "calibrate_only",
    "check_node",
    "check_run_request",
    "cleanup",
    "cluster_status",
    "drift",
    "env_differences",
    "installed_tf_version",
    "prepare_calibration",
    "prepare_run",
    "profile_node",
    "read_advice_file",
    "read_cluster_advice",
    "run_advisor",
    "serving_target",
    "statuses",
    "validate_advice",
]
