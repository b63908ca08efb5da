"""Finding every advice ConfigMap by the project's labels: what ``status`` lists.

Read-only (``list`` on configmaps, in one namespace or, with a ClusterRole, in all of them): a
person or a dashboard can see every advice without the advisor Job's write permissions.
deploy/examples/advice-reader.yaml holds such a Role.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.cluster.config import Connection
from advisor.cluster.http import Target, final_error, request
from advisor.cluster.retry import Deadline, RetryPolicy
from advisor.errors import AdvisorError
from advisor.recommend import APP_NAME, COMPONENT, LABEL_COMPONENT, LABEL_NAME

#: what every advice ConfigMap carries (recommend.render_configmap sets both)
ADVICE_SELECTOR = f"{LABEL_NAME}={APP_NAME},{LABEL_COMPONENT}={COMPONENT}"
READER_HINT = "deploy/examples/advice-reader.yaml"
#: the service account's own namespace, inside a pod
SA_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def list_advice(
    connection: Connection, namespace: str | None, policy: RetryPolicy | None = None
) -> list[dict[str, Any]]:
    """Every advice ConfigMap in ``namespace`` (None: all namespaces), as full objects: a list's
    items carry no apiVersion/kind, so they are put back for ``parse_configmap``."""
    from kubernetes import client

    core = client.CoreV1Api(connection.api_client)
    policy = policy or RetryPolicy()
    where = f"namespace {namespace}" if namespace else "all namespaces"
    if namespace is None:

        def call(timeout: float) -> Any:
            return core.list_config_map_for_all_namespaces(
                label_selector=ADVICE_SELECTOR, _preload_content=False, _request_timeout=timeout
            )
    else:

        def call(timeout: float) -> Any:
            return core.list_namespaced_config_map(
                namespace,
                label_selector=ADVICE_SELECTOR,
                _preload_content=False,
                _request_timeout=timeout,
            )

    attempt = f"list configmaps in {where}"
    resp = request(connection, policy, Deadline(policy), attempt, call)
    if resp.status != 200:
        raise _list_error(resp, attempt, connection, namespace)
    items = (resp.body or {}).get("items") or []
    return [{"apiVersion": "v1", "kind": "ConfigMap", **i} for i in items if isinstance(i, dict)]


def _list_error(
    resp: Any, attempt: str, connection: Connection, namespace: str | None
) -> AdvisorError:
    scope = (
        f"a Role in {namespace} allowing verbs get, list on configmaps"
        if namespace
        else "a ClusterRole (bound with a ClusterRoleBinding) allowing verbs get, list on "
        "configmaps"
    )
    target = Target(
        "configmaps",
        namespace or "(all)",
        f"status needs {scope} ({READER_HINT})",
    )
    return final_error(resp, "list", attempt, connection, target)


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
