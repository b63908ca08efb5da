"""Reading a stored advice back, from a file, stdin or the cluster: ``validate`` and ``check``.

Whatever the source, the ConfigMap goes through ``parse_configmap``, the same rules every write
obeys, so a reader never trusts what a writer would have refused.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from advisor.errors import ClusterRejectedError, InvalidAdviceError, UsageError
from advisor.recommend import (
    ParsedAdvice,
    dns1123_label_problem,
    dns1123_subdomain_problem,
    load_configmap_yaml,
    parse_configmap,
)

#: the Downward API env the Job sets (metadata.namespace); the default namespace of every command
POD_NAMESPACE_ENV = "TFTA_POD_NAMESPACE"


def namespace_or_env(namespace: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """``namespace`` if given, else the pod's own namespace from the Downward API env."""
    env = os.environ if env is None else env
    return namespace or env.get(POD_NAMESPACE_ENV) or None


def check_names(**flags: str) -> None:
    """UsageError naming the flag for the first value that is not a valid name:
    ``check_names(configmap=..., namespace=...)`` (ConfigMap names are DNS subdomains,
    namespaces DNS labels)."""
    for flag, value in flags.items():
        problem = (
            dns1123_label_problem(value)
            if flag == "namespace"
            else dns1123_subdomain_problem(value)
        )
        if problem:
            raise UsageError(f"--{flag} {value!r} {problem}")


def check_cluster_timeout(seconds: float) -> None:
    """``--cluster-timeout`` must bound something: a positive, finite number of seconds."""
    if not seconds > 0 or math.isinf(seconds):
        raise UsageError(f"--cluster-timeout must be a positive number, got {seconds}")


def read_advice_file(path: str, flag: str) -> ParsedAdvice:
    """The advice in a ConfigMap YAML file (``-``: stdin)."""
    source = "stdin" if path == "-" else path
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{flag} {source}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise InvalidAdviceError(f"{source}: not UTF-8 text") from None
    return parse_configmap(load_configmap_yaml(text, source), source)


def read_cluster_advice(
    name: str, namespace: str | None, kubeconfig: Path | None = None
) -> ParsedAdvice:
    """The advice in ConfigMap ``name`` (namespace: given, else the pod's own). Someone waits
    on this (``validate``, ``check``, ``helm test``): an API server that cannot be connected to
    is given up after seconds, not retried for a minute."""
    from advisor.cluster import ConfigMapWriter, RetryPolicy, connect

    namespace = namespace_or_env(namespace)
    if not namespace:
        raise UsageError(f"--configmap needs --namespace (or ${POD_NAMESPACE_ENV})")
    check_names(configmap=name, namespace=namespace)
    writer = ConfigMapWriter(connect(kubeconfig), name, namespace, policy=RetryPolicy.interactive())
    obj = writer.read()
    if obj is None:
        raise ClusterRejectedError(f"{writer.where}: not found")
    return parse_configmap(obj, writer.where)
