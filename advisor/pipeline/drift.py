"""How a node (and a process's env) differs from the one an advice was measured on: ``check``.

Pure comparisons of a Provenance with a NodeProfile, in the terms that change the advice (CPUs,
quota, CPU model, TF version, thread counts), so a Python caller gets the same findings the CLI
prints as warnings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version

from advisor.consumers.quota import same_quota
from advisor.models import (
    TENSORFLOW,
    NodeProfile,
    Provenance,
    thread_cap,
)
from advisor.recommend import ParsedAdvice

#: TF distributions whose version ``check`` compares, first installed wins
TF_DISTRIBUTIONS = ("tensorflow-cpu", "tensorflow", "tensorflow-intel", "tf-nightly-cpu")


def installed_tf_version() -> str | None:
    """The installed TensorFlow's version from package metadata (importing TF takes seconds)."""
    for dist in TF_DISTRIBUTIONS:
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return None


def tf_version_changed(measured: str | None, installed: str | None) -> bool:
    """Whether the TensorFlow an advice was measured with is not the one installed here: both
    known and different (an unknown version on either side is no evidence of a change)."""
    return bool(measured and installed and measured != installed)


def provenance_differences(
    prov: Provenance, node: NodeProfile, tf_version: str | None
) -> list[str]:
    """How this node differs from the calibrated one, in the terms that change the advice."""
    found = []
    if len(prov.affinity_cpus) != len(node.affinity_cpus):
        found.append(
            f"affinity: calibrated with {len(prov.affinity_cpus)} CPUs, "
            f"this process has {len(node.affinity_cpus)}"
        )
    if not same_quota(prov.quota_cpus, node.quota_cpus):
        found.append(
            f"CPU quota: calibrated {_quota(prov.quota_cpus)}, here {_quota(node.quota_cpus)}"
        )
    here_model = node.topology.cpu_model
    if prov.cpu_model and here_model and prov.cpu_model != here_model:
        found.append(f"CPU model: calibrated on {prov.cpu_model!r}, here {here_model!r}")
    if tf_version_changed(prov.tf_version, tf_version):
        found.append(f"TensorFlow: calibrated with {prov.tf_version}, installed {tf_version}")
    return found


def env_differences(
    env: Mapping[str, str], node: NodeProfile, advice: Mapping[str, str] | None
) -> list[str]:
    """The advice env of this process against the advice (if given) and against this node."""
    found = []
    cap = thread_cap(len(node.affinity_cpus))
    usable = max(1, math.ceil(node.effective_cpus))
    for name in TENSORFLOW.thread_names:
        value = env.get(name)
        if value is None:
            if advice is not None:
                found.append(f"{name} is not set in this process (the advice says {advice[name]})")
            continue
        if advice is not None and value != advice[name]:
            found.append(f"{name}={value} in this process, but the advice says {advice[name]}")
        problem = TENSORFLOW.thread_value_problem(name, value, cap, "this process's CPUs")
        if problem is not None:
            found.append(problem)
        elif name == TENSORFLOW.intra_op and int(value) > usable:
            found.append(
                f"{name}={value} is more than the {usable} CPU(s) this container can use "
                f"(effective {node.effective_cpus:g}): expect throttling"
            )
    for knob in TENSORFLOW.knobs:
        wanted = None if advice is None else advice.get(knob.name)
        have = env.get(knob.name)
        if wanted is not None and have != wanted:
            found.append(
                f"{knob.name}={have or '(unset)'} in this process, but the advice says {wanted}"
            )
        elif have is not None and have not in knob.values:
            found.append(f"{knob.name}={have!r} is not {' or '.join(knob.values)}")
    return found


def has_advice_env(env: Mapping[str, str]) -> bool:
    return any(name in env for name in TENSORFLOW.thread_names)


def drift(parsed: ParsedAdvice | None, node: NodeProfile, env: Mapping[str, str]) -> list[str]:
    """Everything ``check`` reports: the node against the advice's provenance (when there is an
    advice), and the advice env of this process (when it has one, or when there is no advice)."""
    found: list[str] = []
    if parsed is not None:
        found += provenance_differences(
            parsed.recommendation.provenance, node, installed_tf_version()
        )
    if has_advice_env(env) or parsed is None:
        advice = parsed.recommendation.env if parsed is not None else None
        found += env_differences(env, node, advice)
    return found


def _quota(value: float | None) -> str:
    return "none" if value is None else f"{value:g} CPUs"
