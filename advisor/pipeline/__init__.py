"""What the commands do, callable from Python: a run end to end, reading an advice back, how a
node drifted from it, and the status of every advice in a namespace.

This layer sits between the CLI and the cluster: the CLI parses flags into these calls and prints
their results; everything else (the order of the checks, staging files, what a failure leaves
behind) lives here, so a Python caller gets the same guarantees as ``tf-thread-advisor run``.
"""

from advisor.pipeline.drift import drift, env_differences, installed_tf_version
from advisor.pipeline.run import (
    PreparedRun,
    PublishedRun,
    RunRequest,
    check_request,
    prepare_run,
    run_advisor,
)
from advisor.pipeline.source import read_advice_file, read_cluster_advice
from advisor.pipeline.status import AdviceStatus, cluster_status, statuses

__all__ = [
    "AdviceStatus",
    "PreparedRun",
    "PublishedRun",
    "RunRequest",
    "check_request",
    "cluster_status",
    "drift",
    "env_differences",
    "installed_tf_version",
    "prepare_run",
    "read_advice_file",
    "read_cluster_advice",
    "run_advisor",
    "statuses",
]
