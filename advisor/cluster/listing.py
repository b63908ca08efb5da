"""Finding every advice ConfigMap by the project's labels: what ``status`` lists.

Read-only (``list`` on configmaps, in one namespace or, with a ClusterRole, in all of them): a
person or a dashboard can see every advice without the advisor Job's write permissions.
deploy/examples/advice-reader.yaml holds such a Role.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.cluster.config import Connection
from advisor.cluster.http import PAGE_SIZE, Target, list_all, with_kind
from advisor.cluster.rest import kind_resource, lister
from advisor.keys import ADVICE_SELECTOR
from advisor.retry import Deadline, RetryPolicy

READER_HINT = "deploy/examples/advice-reader.yaml"
#: the service account's own namespace, inside a pod
SA_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def list_advice(
    connection: Connection, namespace: str | None, policy: RetryPolicy | None = None
) -> list[dict[str, Any]]:
    """Every advice ConfigMap in ``namespace`` (None: all namespaces), as full objects."""
    scope = (
        f"a Role in {namespace} allowing verbs get, list on configmaps"
        if namespace
        else "a ClusterRole (bound with a ClusterRoleBinding) allowing verbs get, list on "
        "configmaps"
    )
    rule = f"status needs {scope} ({READER_HINT})"
    return list_core(
        connection, "ConfigMap", namespace, policy, selector=ADVICE_SELECTOR, rule=rule
    )


def list_core(
    connection: Connection,
    kind: str,
    namespace: str | None,
    policy: RetryPolicy | None = None,
    *,
    selector: str | None = None,
    rule: str | tuple[str, ...],
    page_size: int = PAGE_SIZE,
) -> list[dict[str, Any]]:
    """The objects of the core (v1) ``kind`` (``ConfigMap``) in ``namespace`` (None: all
    namespaces) matching the label ``selector``, paged, as full objects: a list's items carry no
    apiVersion/kind, so they are put back (for ``parse_configmap``). A 403 names ``rule``, what
    the caller's Role must allow."""
    policy = policy or RetryPolicy()
    where = f"namespace {namespace}" if namespace else "all namespaces"
    listed = kind_resource("v1", kind)
    resource = listed.resource
    items = list_all(
        connection,
        policy,
        Deadline(policy),
        f"list {resource} in {where}",
        lister(connection.api_client, listed, everywhere=namespace is None),
        *((namespace,) if namespace else ()),
        target=Target(resource, namespace or "(all)", rule),
        page_size=page_size,
        label_selector=selector,
    )
    return with_kind(items, "v1", kind)


def default_namespace(kubeconfig: Path | None = None) -> str | None:
    """The namespace kubectl would use: the pod's own (in a pod), else the kubeconfig's current
    context's; None when neither says."""
    import os

    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            return SA_NAMESPACE_FILE.read_text(encoding="utf-8").strip() or None
        except OSError:
            return None
    import yaml
    from kubernetes import config
    from kubernetes.config.config_exception import ConfigException

    list_contexts: Any = config.list_kube_config_contexts
    try:
        _, active = list_contexts(config_file=str(kubeconfig) if kubeconfig else None)
    except (ConfigException, OSError, ValueError, TypeError, yaml.YAMLError):
        return None  # connect() has already said what is wrong with it, or will
    context = (active or {}).get("context") or {}
    value = context.get("namespace")
    return value if isinstance(value, str) and value else None
