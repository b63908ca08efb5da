"""The PromQL the advisor runs for one serving container (docs/deploy.md shows it for Grafana).

Every figure is a range query evaluated every ``STEP`` over a window, each point covering the
``STEP`` before it, so a window's samples give its figure for the day test
(``advisor.consumers.daytest``) and no point reaches further back than one step.

Which pods were the workload's: the pods the API server lists now (``live``, matched by name),
and the ones gone, from kube-state-metrics: ``kube_pod_owner`` names a pod's controller, and for
a Deployment ``kube_replicaset_owner`` names the ReplicaSet's Deployment. Both are taken
``max_over_time`` over one step, so a pod that ended inside the step counts and the join costs
the same whatever the window's length. The container's series are cAdvisor's:
``container_cpu_cfs_periods_total``, ``container_cpu_cfs_throttled_periods_total`` and
``container_cpu_usage_seconds_total``, with the kubelet's ``namespace``, ``pod`` and
``container`` labels. ``scope`` (``--prometheus-selector``) is added to every selector written
here: one Prometheus may hold several clusters with the same namespaces and names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from advisor.models import WorkloadKind
from advisor.prometheus.promql import (
    Matcher,
    duration,
    inside_string,
    literal_regex,
    selector,
    string,
)

PERIODS = "container_cpu_cfs_periods_total"
THROTTLED = "container_cpu_cfs_throttled_periods_total"
USAGE = "container_cpu_usage_seconds_total"
POD_OWNER = "kube_pod_owner"
POD_START = "kube_pod_start_time"
#: seconds between the points of a window, and what each point covers
STEP_S = 300
STEP = duration(STEP_S)
STEP_SPAN = timedelta(seconds=STEP_S)
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
    #: label matchers added to every selector (``--prometheus-selector``)
    scope: Sequence[Matcher] = ()


def workload_pods(target: Container) -> str:
    """A vector with a ``pod`` label, one series (value 1) per pod kube-state-metrics saw owned
    by the workload within the last step."""
    scope = target.scope
    if target.kind is WorkloadKind.POD:
        pod = string(target.workload)
        return f'label_replace(vector(1), "pod", {pod}, "", "")'
    if target.kind is WorkloadKind.DEPLOYMENT:
        sets = selector(
            "kube_replicaset_owner",
            scope,
            namespace=target.namespace,
            owner_kind=WorkloadKind.DEPLOYMENT.value,
            owner_name=target.workload,
        )
        owned = selector(POD_OWNER, scope, namespace=target.namespace, owner_kind="ReplicaSet")
        replicasets = (
            f"max by (owner_name) (label_replace(max_over_time({sets}[{STEP}]), "
            f'"owner_name", "$1", "replicaset", "(.*)"))'
        )
        return (
            f"max by (pod) (max_over_time({owned}[{STEP}]) "
            f"* on (owner_name) group_left () {replicasets})"
        )
    owned = selector(
        POD_OWNER,
        scope,
        namespace=target.namespace,
        owner_kind=target.kind.value,
        owner_name=target.workload,
    )
    return f"max by (pod) (max_over_time({owned}[{STEP}]))"


def _per_pod(function: str, metric: str, target: Container) -> str:
    """``function(metric[STEP])`` for the container in each of the workload's pods: live pods
    by name, gone ones through kube-state-metrics (``or`` keeps one series per pod)."""
    own = selector(metric, target.scope, namespace=target.namespace, container=target.container)
    joined = f"{function}({own}[{STEP}]) * on (pod) group_left () {workload_pods(target)}"
    if not target.live:
        return f"({joined})"
    live = own[:-1] + f",pod=~{literal_regex(target.live)}}}"
    return f"({function}({live}[{STEP}]) or {joined})"


def throttled_periods(target: Container) -> str:
    """CFS periods the container was throttled in during each step, summed over its pods."""
    return f"sum({_per_pod('increase', THROTTLED, target)})"


def periods(target: Container) -> str:
    """CFS periods the container ran in (had runnable tasks) during each step, over its pods."""
    return f"sum({_per_pod('increase', PERIODS, target)})"


def cpu_per_pod(target: Container) -> str:
    """Cores one pod's container used during each step, averaged over its pods: comparable with
    its CPU limit while replicas come and go."""
    return f"avg({_per_pod('rate', USAGE, target)})"


def templated(template: str, target: Container) -> str:
    """The workload's own query (latency, load) with ``$namespace``, ``$workload`` and
    ``$container`` replaced by the escaped values (they stand inside the query's string
    literals). The query is the workload's: ``scope`` is not added to it."""
    values = {
        "namespace": target.namespace,
        "workload": target.workload,
        "container": target.container,
    }
    # one pass: a value that itself holds "$workload" is not replaced again
    return _PLACEHOLDER.sub(lambda found: inside_string(values[found.group(1)]), template)


def namespace_by_pod(
    metric: str, namespace: str, seconds: float, scope: Sequence[Matcher] = ()
) -> str:
    """``metric``'s increase over the window for every container of the namespace, by pod and
    container (the pod-level cgroup, ``container=""``, left out): for the suggestions."""
    own = selector(metric, scope, namespace=namespace)[:-1] + ',container!=""}'
    return f"sum by (pod, container) (increase({own}[{duration(seconds)}]))"


def earliest_start(target: Container) -> str:
    """When the earliest of the workload's pods in each step started (unix seconds), from
    kube-state-metrics: were they all started after the advice they should run?"""
    starts = selector(POD_START, target.scope, namespace=target.namespace)
    return f"min({starts} * on (pod) group_left () {workload_pods(target)})"


def owner_series(namespace: str, scope: Sequence[Matcher] = (), label: str = "namespace") -> str:
    """How many ``kube_pod_owner`` series name ``namespace`` under ``label`` (``namespace``, or
    ``exported_namespace`` where a scrape without ``honor_labels`` renamed it)."""
    return f"count({selector(POD_OWNER, scope, **{label: namespace})})"
