"""The PromQL run for one container: which pods, over one step, every value escaped, every
selector scoped by ``--prometheus-selector``."""

from __future__ import annotations

import re

from advisor.models import WorkloadKind
from advisor.prometheus import queries
from advisor.prometheus.promql import parse_matchers
from advisor.prometheus.queries import Container

WEB = Container("ml", WorkloadKind.DEPLOYMENT, "web", "server", live=("web-5d8f-a1", "web-5d8f-b2"))


def test_throttled_periods_over_live_and_gone_pods_per_step() -> None:
    text = queries.throttled_periods(WEB)
    assert text == (
        'sum((increase(container_cpu_cfs_throttled_periods_total{namespace="ml",'
        'container="server",pod=~"web-5d8f-a1|web-5d8f-b2"}[300s]) or '
        'increase(container_cpu_cfs_throttled_periods_total{namespace="ml",'
        'container="server"}[300s]) * on (pod) group_left () '
        'max by (pod) (max_over_time(kube_pod_owner{namespace="ml",owner_kind="ReplicaSet"}'
        "[300s]) * on (owner_name) group_left () max by (owner_name) (label_replace("
        'max_over_time(kube_replicaset_owner{namespace="ml",owner_kind="Deployment",'
        'owner_name="web"}[300s]), "owner_name", "$1", "replicaset", "(.*)")))))'
    )


def test_no_range_reaches_further_back_than_one_step() -> None:
    """The ownership join's cost is bounded: no window-long range, no subquery."""
    for text in (queries.throttled_periods(WEB), queries.periods(WEB), queries.cpu_per_pod(WEB)):
        assert set(re.findall(r"\[([^\]]+)\]", text)) == {queries.STEP}
        assert ":" not in "".join(re.findall(r"\[([^\]]+)\]", text))


def test_statefulset_pods_come_from_kube_pod_owner_alone() -> None:
    db = Container("ml", WorkloadKind.STATEFULSET, "db", "server")
    text = queries.periods(db)
    assert 'kube_pod_owner{namespace="ml",owner_kind="StatefulSet",owner_name="db"}[300s]' in text
    assert "pod=~" not in text and "kube_replicaset_owner" not in text


def test_a_bare_pod_is_itself() -> None:
    text = queries.workload_pods(Container("ml", WorkloadKind.POD, "one-off", "c"))
    assert text == 'label_replace(vector(1), "pod", "one-off", "", "")'


def test_cpu_per_pod_averages_pods() -> None:
    text = queries.cpu_per_pod(WEB)
    assert text.startswith("avg((rate(container_cpu_usage_seconds_total{")
    assert "avg_over_time" not in text


def test_values_are_escaped_everywhere() -> None:
    odd = Container('ml"', WorkloadKind.STATEFULSET, "db\\x", 'c"} or vector(1) #', live=("p.1",))
    text = queries.periods(odd)
    assert 'namespace="ml\\""' in text and 'owner_name="db\\\\x"' in text
    assert 'container="c\\"} or vector(1) #"' in text
    assert 'pod=~"p\\\\.1"' in text


def test_the_scope_is_added_to_every_selector() -> None:
    scope = parse_matchers('cluster="prod-eu",region=~"eu-.*"')
    scoped = Container("ml", WorkloadKind.DEPLOYMENT, "web", "server", live=("web-1",), scope=scope)
    for text in (
        queries.throttled_periods(scoped),
        queries.cpu_per_pod(scoped),
        queries.namespace_by_pod(queries.PERIODS, "ml", 3600, scope),
        queries.owner_series("ml", scope),
    ):
        selectors = re.findall(r"\b[a-z_]+\{[^}]*\}", text)
        assert selectors, text
        for found in selectors:
            assert 'cluster="prod-eu",region=~"eu-.*"' in found, found


def test_own_query_placeholders_are_replaced_once_and_escaped() -> None:
    target = Container('n"s', WorkloadKind.DEPLOYMENT, "$container", "srv")
    template = 'histogram_quantile(0.99, rate(x{ns="$namespace",w="$workload",c="$container"}[5m]))'
    assert queries.templated(template, target) == (
        'histogram_quantile(0.99, rate(x{ns="n\\"s",w="$container",c="srv"}[5m]))'
    )


def test_owner_series_under_either_label() -> None:
    assert queries.owner_series("ml") == 'count(kube_pod_owner{namespace="ml"})'
    assert queries.owner_series("ml", (), "exported_namespace") == (
        'count(kube_pod_owner{exported_namespace="ml"})'
    )


def test_earliest_start_of_the_workloads_pods_per_step() -> None:
    text = queries.earliest_start(WEB)
    assert text.startswith('min(kube_pod_start_time{namespace="ml"} * on (pod) group_left () ')
    assert text.endswith(f"{queries.workload_pods(WEB)})")
