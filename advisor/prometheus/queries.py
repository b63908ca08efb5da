"""The PromQL the advisor runs for one serving container over one window (docs/deploy.md shows
it for Grafana).

Which pods were the workload's: the pods the API server lists now (``live``, matched by name),
and the ones gone, from kube-state-metrics: ``kube_pod_owner`` names a pod's controller, and for
a Deployment ``kube_replicaset_owner`` names the ReplicaSet's Deployment. Both are taken
``max_over_time`` over the window, so pods that ended inside it count. The container's series
are cAdvisor's: ``container_cpu_cfs_periods_total``, ``container_cpu_cfs_throttled_periods_total``
and ``container_cpu_usage_seconds_total``, with the kubelet's ``namespace``, ``pod`` and
``container`` labels.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.models import WorkloadKind
from advisor.prometheus.promql import duration, inside_string, literal_regex, selector, string

PERIODS = "container_cpu_cfs_periods_total"
THROTTLED = "container_cpu_cfs_throttled_periods_total"
USAGE = "container_cpu_usage_seconds_total"
#: the rate window inside the CPU subquery, and its step
RATE_WINDOW = "5m"
SUBQUERY_STEP = "1m"
_PLACEHOLDER = re.compile(r"\$(namespace|workload|container)\b")


@dataclass(frozen=True)
class Container:
    """One serving container of a workload (``workload``: its name)."""

    namespace: str
    kind: WorkloadKind
    workload: str
    container: str
    #: the workload's pods the API server lists now
    live: Sequence[str] = ()


def workload_pods(target: Container, seconds: float) -> str:
    """A vector with a ``pod`` label, one series (value 1) per pod kube-state-metrics saw owned
    by the workload within the last ``seconds``."""
    window = duration(seconds)
    if target.kind is WorkloadKind.POD:
        pod = string(target.workload)
        return f'label_replace(vector(1), "pod", {pod}, "", "")'
    if target.kind is WorkloadKind.DEPLOYMENT:
        sets = selector(
            "kube_replicaset_owner",
            namespace=target.namespace,
            owner_kind=WorkloadKind.DEPLOYMENT.value,
            owner_name=target.workload,
        )
        owned = selector("kube_pod_owner", namespace=target.namespace, owner_kind="ReplicaSet")
        replicasets = (
            f"max by (owner_name) (label_replace(max_over_time({sets}[{window}]), "
            f'"owner_name", "$1", "replicaset", "(.*)"))'
        )
        return (
            f"max by (pod) (max_over_time({owned}[{window}]) "
            f"* on (owner_name) group_left () {replicasets})"
        )
    owned = selector(
        "kube_pod_owner",
        namespace=target.namespace,
        owner_kind=target.kind.value,
        owner_name=target.workload,
    )
    return f"max by (pod) (max_over_time({owned}[{window}]))"


def _per_pod(function: str, metric: str, target: Container, rng: str, seconds: float) -> str:
    """``function(metric[rng])`` for the container in each of the workload's pods: live pods by
    name, gone ones through kube-state-metrics (``or`` keeps one series per pod)."""
    own = selector(metric, namespace=target.namespace, container=target.container)
    joined = f"{function}({own}[{rng}]) * on (pod) group_left () {workload_pods(target, seconds)}"
    if not target.live:
        return f"({joined})"
    live = own[:-1] + f",pod=~{literal_regex(target.live)}}}"
    return f"({function}({live}[{rng}]) or {joined})"


def throttled_periods(target: Container, seconds: float) -> str:
    """CFS periods the container was throttled in, summed over its pods, within the window."""
    return f"sum({_per_pod('increase', THROTTLED, target, duration(seconds), seconds)})"


def periods(target: Container, seconds: float) -> str:
    """CFS periods the container ran in (had runnable tasks), summed over its pods."""
    return f"sum({_per_pod('increase', PERIODS, target, duration(seconds), seconds)})"


def cpu_per_pod(target: Container, seconds: float) -> str:
    """Cores one pod's container used, averaged over its pods at each minute, then over the
    window: comparable with its CPU limit while replicas come and go."""
    inner = f"avg({_per_pod('rate', USAGE, target, RATE_WINDOW, seconds)})"
    return f"avg_over_time({inner}[{duration(seconds)}:{SUBQUERY_STEP}])"


def latency(template: str, target: Container) -> str:
    """The workload's own latency query with ``$namespace``, ``$workload`` and ``$container``
    replaced by the escaped values (they stand inside the query's string literals)."""
    values = {
        "namespace": target.namespace,
        "workload": target.workload,
        "container": target.container,
    }
    # one pass: a value that itself holds "$workload" is not replaced again
    return _PLACEHOLDER.sub(lambda found: inside_string(values[found.group(1)]), template)


def namespace_by_pod(metric: str, namespace: str, seconds: float) -> str:
    """``metric``'s increase over the window for every container of the namespace, by pod and
    container (the pod-level cgroup, ``container=""``, left out): for the suggestions."""
    own = selector(metric, namespace=namespace)[:-1] + ',container!=""}'
    return f"sum by (pod, container) (increase({own}[{duration(seconds)}]))"
