"""The PromQL run for one container: which pods, which window, every value escaped."""

from __future__ import annotations

from advisor.models import WorkloadKind
from advisor.prometheus import queries
from advisor.prometheus.queries import Container

WEB = Container("ml", WorkloadKind.DEPLOYMENT, "web", "server", live=("web-5d8f-a1", "web-5d8f-b2"))


def test_throttled_periods_over_live_and_gone_pods() -> None:
    text = queries.throttled_periods(WEB, 86400)
    assert text == (
        'sum((increase(container_cpu_cfs_throttled_periods_total{namespace="ml",'
        'container="server",pod=~"web-5d8f-a1|web-5d8f-b2"}[86400s]) or '
        'increase(container_cpu_cfs_throttled_periods_total{namespace="ml",'
        'container="server"}[86400s]) * on (pod) group_left () '
        'max by (pod) (max_over_time(kube_pod_owner{namespace="ml",owner_kind="ReplicaSet"}'
        "[86400s]) * on (owner_name) group_left () max by (owner_name) (label_replace("
        'max_over_time(kube_replicaset_owner{namespace="ml",owner_kind="Deployment",'
        'owner_name="web"}[86400s]), "owner_name", "$1", "replicaset", "(.*)")))))'
    )


def test_statefulset_pods_come_from_kube_pod_owner_alone() -> None:
    db = Container("ml", WorkloadKind.STATEFULSET, "db", "server")
    text = queries.periods(db, 3600)
    assert 'kube_pod_owner{namespace="ml",owner_kind="StatefulSet",owner_name="db"}[3600s]' in text
    assert "pod=~" not in text and "kube_replicaset_owner" not in text


def test_a_bare_pod_is_itself() -> None:
    text = queries.workload_pods(Container("ml", WorkloadKind.POD, "one-off", "c"), 60)
    assert text == 'label_replace(vector(1), "pod", "one-off", "", "")'


def test_cpu_per_pod_averages_pods_then_time() -> None:
    text = queries.cpu_per_pod(WEB, 7200)
    assert text.startswith("avg_over_time(avg((rate(container_cpu_usage_seconds_total{")
    assert text.endswith("[7200s:1m])")
    assert "[5m]" in text


def test_values_are_escaped_everywhere() -> None:
    odd = Container('ml"', WorkloadKind.STATEFULSET, "db\\x", 'c"} or vector(1) #', live=("p.1",))
    text = queries.periods(odd, 60)
    assert 'namespace="ml\\""' in text and 'owner_name="db\\\\x"' in text
    assert 'container="c\\"} or vector(1) #"' in text
    assert 'pod=~"p\\\\.1"' in text


def test_latency_placeholders_are_replaced_once_and_escaped() -> None:
    target = Container('n"s', WorkloadKind.DEPLOYMENT, "$container", "srv")
    template = 'histogram_quantile(0.99, rate(x{ns="$namespace",w="$workload",c="$container"}[5m]))'
    assert queries.latency(template, target) == (
        'histogram_quantile(0.99, rate(x{ns="n\\"s",w="$container",c="srv"}[5m]))'
    )
