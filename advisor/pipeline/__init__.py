"""What the commands do, callable from Python: a run end to end, a calibration alone, reading an
advice back, how a node drifted from it, the status of every advice in a namespace, the cleanup.

This layer sits between the CLI and the cluster: the CLI parses flags into these calls and prints
their results; everything else (the order of the checks, staging files, what a failure leaves
behind) lives here, so a Python caller gets the same guarantees as ``tf-thread-advisor run``.
What the commands measure with (the node probe, the sweep) is passed in as ``Instruments``.
"""

from advisor.models import AdviceStatus
from advisor.pipeline.calibration import (
    CalibrateRequest,
    PreparedCalibration,
    calibrate_only,
    prepare_calibration,
)
from advisor.pipeline.check import CheckOutcome, check_node
from advisor.pipeline.cleanup import cleanup
from advisor.pipeline.drift import drift, env_differences, installed_tf_version
from advisor.pipeline.instruments import Instruments
from advisor.pipeline.node import profile_node
from advisor.pipeline.run import (
    PreparedRun,
    PublishedRun,
    RunRequest,
    check_run_request,
    parse_workload,
    prepare_run,
    run_advisor,
)
from advisor.pipeline.source import (
    POD_NAMESPACE_ENV,
    read_advice_file,
    read_cluster_advice,
    validate_advice,
)
from advisor.pipeline.status import cluster_status, statuses
from advisor.pipeline.target import serving_target

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
    "parse_workload",
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
