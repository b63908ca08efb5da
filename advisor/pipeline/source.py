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

from advisor.errors import ClusterRejectedError, InvalidAdviceError, Opt, UsageError
from advisor.kubenames import dns1123_label_problem, dns1123_subdomain_problem
from advisor.recommend import ParsedAdvice, describe, load_configmap_yaml, parse_configmap

#: the Downward API env the Job sets (metadata.namespace); the default namespace of every command
POD_NAMESPACE_ENV = "TFTA_POD_NAMESPACE"

#: the default bound on all API retries of one cluster operation, seconds
CLUSTER_TIMEOUT_S = 60.0


def namespace_or_env(namespace: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """``namespace`` if given, else the pod's own namespace from the Downward API env."""
    env = os.environ if env is None else env
    return namespace or env.get(POD_NAMESPACE_ENV) or None


def namespace_to_list(namespace: str | None, kubeconfig: Path | None) -> str:
    """Where a command that reads a namespace looks: ``namespace``, else the pod's own, else the
    kubeconfig context's, else ``default``; UsageError when it is not a valid name."""
    from advisor.cluster.listing import default_namespace

    where = namespace_or_env(namespace) or default_namespace(kubeconfig) or "default"
    check_names(namespace=where)
    return where


def namespace_needed() -> UsageError:
    """A ConfigMap target without a namespace (none given, none in the pod's env)."""
    return UsageError(Opt("configmap"), " needs ", Opt("namespace"), f" (or ${POD_NAMESPACE_ENV})")


def check_names(**names: str) -> None:
    """UsageError naming the option for the first value that is not a valid name:
    ``check_names(configmap=..., namespace=...)`` (ConfigMap names are DNS subdomains,
    namespaces DNS labels)."""
    for option, value in names.items():
        problem = (
            dns1123_label_problem(value)
            if option == "namespace"
            else dns1123_subdomain_problem(value)
        )
        if problem:
            raise UsageError(Opt(option), f" {value!r} {problem}")


def check_cluster_timeout(seconds: float) -> None:
    """``cluster_timeout_s`` must bound something: a positive, finite number of seconds."""
    if not seconds > 0 or math.isinf(seconds):
        raise UsageError(Opt("cluster_timeout_s"), f" must be a positive number, got {seconds}")


def read_advice_file(path: str, option: str | None) -> ParsedAdvice:
    """The advice in a ConfigMap YAML file (``-``: stdin); ``option`` is the one that named it
    (None: a positional path, which the message names by itself)."""
    source = "stdin" if path == "-" else path
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        problem = f"{source}: cannot read it ({exc.strerror or exc})"
        raise (UsageError(Opt(option), " ", problem) if option else UsageError(problem)) from None
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
        raise namespace_needed()
    check_names(configmap=name, namespace=namespace)
    writer = ConfigMapWriter(connect(kubeconfig), name, namespace, policy=RetryPolicy.interactive())
    obj = writer.read()
    if obj is None:
        raise ClusterRejectedError(f"{writer.where}: not found")
    return parse_configmap(obj, writer.where)


def only_with_configmap() -> UsageError:
    """Where the advice is read from a file: the options that pick a cluster's would be ignored."""
    return UsageError(
        Opt("namespace"), " and ", Opt("kubeconfig"), " only apply with ", Opt("configmap")
    )


def validate_advice(
    path: str | None = None,
    *,
    configmap: str | None = None,
    namespace: str | None = None,
    kubeconfig: Path | None = None,
) -> str:
    """One line describing the valid advice in the file at ``path`` (``-``: stdin) or in
    ``configmap`` (exactly one of them); InvalidAdviceError (exit 6) when it does not validate."""
    if (path is None) == (configmap is None):
        raise UsageError("validate needs exactly one of ", Opt("file"), " or ", Opt("configmap"))
    if configmap is not None:
        return describe(read_cluster_advice(configmap, namespace, kubeconfig))
    if namespace or kubeconfig:
        raise only_with_configmap()
    assert path is not None
    return describe(read_advice_file(path, None))
