"""``check``: how this node (and this process's advice env) differs from where an advice was
measured.

The advice comes from a ConfigMap YAML file, the cluster, or, with neither, the advice env of
this process alone (``drift`` compares what it can). Differences are findings for the caller to
show; with ``strict`` they are a CheckMismatchError (exit 11), for a consumer's init container
that must not start on a node the advice was not measured for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import CheckMismatchError, Opt, UsageError
from advisor.models import TENSORFLOW
from advisor.pipeline.drift import drift, has_advice_env
from advisor.pipeline.instruments import Instruments
from advisor.pipeline.source import only_with_configmap, read_advice_file, read_cluster_advice
from advisor.recommend import describe


@dataclass(frozen=True)
class CheckOutcome:
    """What was checked (``subject``, for people) and every difference found."""

    subject: str
    differences: tuple[str, ...]


def check_node(
    *,
    configmap_file: str | None = None,
    configmap: str | None = None,
    namespace: str | None = None,
    kubeconfig: Path | None = None,
    strict: bool = False,
    host_root: Path = Path("/"),
    env: Mapping[str, str] | None = None,
    instruments: Instruments | None = None,
) -> CheckOutcome:
    """Probe this node and compare it with the advice in ``configmap_file`` (``-``: stdin) or
    ``configmap``, and with the advice env (default: this process's)."""
    env = os.environ if env is None else env
    if configmap is None and (namespace or kubeconfig):
        raise only_with_configmap()
    parsed = None
    if configmap is not None:
        parsed = read_cluster_advice(configmap, namespace, kubeconfig)
    elif configmap_file is not None:
        parsed = read_advice_file(configmap_file, "configmap_file")
    elif not has_advice_env(env):
        raise UsageError(
            "nothing to check: give ",
            Opt("configmap_file"),
            ", ",
            Opt("configmap"),
            f", or run with the advice env ({', '.join(TENSORFLOW.thread_names)})",
        )
    node = (instruments or Instruments()).probe(host_root)
    differences = tuple(drift(parsed, node, env))
    subject = describe(parsed) if parsed is not None else "the advice env of this process"
    if differences and strict:
        raise CheckMismatchError(
            f"{len(differences)} difference(s) from {subject}: " + "; ".join(differences)
        )
    return CheckOutcome(subject, differences)
