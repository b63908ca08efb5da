"""The machine a benchmark run measured on, named in its JSON and its printed summary.

Why: the figures are wall-clock measurements, and the machine moves them, even the ratios to TF's
default (a CPU model with another cache, a kernel with another scheduler, cgroup v1 against v2
throttling). A recorded run that does not say where it ran cannot be compared with the next one.
The CPU, its counts and the cgroup version are read by the advisor's own probe, so a run names its
machine in the words the advice's provenance uses; ``report.machine_line`` prints it.
"""

from __future__ import annotations

import os
import platform
import subprocess

from advisor.errors import ProbeError
from advisor.models import NodeProfile
from advisor.pipeline.drift import installed_tf_version
from advisor.probe import probe_node
from benchmarks import REPO
from benchmarks.results import Machine


def describe(node: NodeProfile | None = None) -> Machine:
    """CPU model, counts, kernel, cgroup version, Python, TensorFlow and the checkout's commit."""
    if node is None:
        try:
            node = probe_node()
        except ProbeError:
            node = None
    return Machine(
        cpu_model=None if node is None else node.topology.cpu_model,
        logical_cpus=os.cpu_count() if node is None else node.logical_cpus,
        affinity_cpus=len(os.sched_getaffinity(0)) if node is None else len(node.affinity_cpus),
        physical_cores=None if node is None else node.affinity_physical_cores,
        sockets=None if node is None else node.topology.sockets,
        kernel=platform.release(),
        cgroup_version=None if node is None else node.cgroup.version,
        python=platform.python_version(),
        tensorflow=installed_tf_version(),
        commit=commit(),
    )


def commit() -> str | None:
    """The checkout's commit (``-dirty`` with uncommitted changes), None outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None
