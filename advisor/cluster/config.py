"""Finding the cluster: ``--kubeconfig``, in-cluster (the Job), then KUBECONFIG/~/.kube/config."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import Opt, UsageError


@dataclass(frozen=True)
class Connection:
    """A kubernetes ``ApiClient``, the API server URL and where both came from."""

    api_client: Any
    host: str
    source: str


def connect(kubeconfig: Path | None = None, env: Mapping[str, str] | None = None) -> Connection:
    """A client for the cluster, with the client's own retries off (ours are bounded).

    Order: an explicit kubeconfig; the pod's ServiceAccount when KUBERNETES_SERVICE_HOST is set
    (what a Job sees); otherwise the kubeconfig the kubernetes client finds (KUBECONFIG or
    ~/.kube/config). A config that cannot be loaded is a usage problem: retrying will not help.
    """
    import yaml
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    # the loaders are untyped; name them once as Any so strict mypy stays on everywhere else
    load_kube: Any = config.load_kube_config
    load_incluster: Any = config.load_incluster_config
    env = os.environ if env is None else env
    configuration = client.Configuration()
    try:
        if kubeconfig is not None:
            if not kubeconfig.is_file():
                raise UsageError(Opt("kubeconfig"), f" {kubeconfig}: no such file")
            load_kube(config_file=str(kubeconfig), client_configuration=configuration)
            source = str(kubeconfig)
        elif env.get("KUBERNETES_SERVICE_HOST"):
            load_incluster(client_configuration=configuration)
            source = "in-cluster ServiceAccount"
        else:
            # the client reads $KUBECONFIG once, when it is imported; name it here so the file
            # loaded is the one the environment names now (and the one an error message names)
            load_kube(config_file=env.get("KUBECONFIG") or None, client_configuration=configuration)
            source = env.get("KUBECONFIG") or "~/.kube/config"
    except (ConfigException, OSError, ValueError, TypeError, yaml.YAMLError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        if kubeconfig is not None:
            raise UsageError(
                Opt("kubeconfig"), f" {kubeconfig}: cannot load it ({message})"
            ) from None
        raise UsageError(*_no_config_message(env, message)) from None
    # our retry loop owns retries and their time bound; urllib3's own would hide both
    configuration.retries = False
    api_client = client.ApiClient(configuration)
    api_client.user_agent = "tf-thread-advisor"
    return Connection(api_client=api_client, host=str(configuration.host), source=source)


def _no_config_message(env: Mapping[str, str], problem: str) -> tuple[str, ...]:
    """What was tried, why it failed, and the three ways to give a cluster config.

    Someone running ``run --configmap`` on a laptop or in CI often has no kubeconfig at all, and
    the client's own "Invalid kube-config file. No configuration found." does not say where one
    could come from.
    """
    if env.get("KUBERNETES_SERVICE_HOST"):
        tried = "in-cluster config, as KUBERNETES_SERVICE_HOST is set"
    elif env.get("KUBECONFIG"):
        tried = f"KUBECONFIG={env['KUBECONFIG']}"
    else:
        tried = "~/.kube/config, as KUBECONFIG is not set"
    return (
        f"no usable cluster config (tried {tried}: {problem.rstrip('.')}): give ",
        Opt("kubeconfig"),
        " PATH, set KUBECONFIG, or run in a pod whose ServiceAccount token is mounted "
        "(in-cluster config)",
    )
