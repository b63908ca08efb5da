"""``plan``'s suggestions: the containers that are not opted in but whose pods were throttled
above the threshold over the last window (the rule is ``advisor.fleet.production.suggestions``)."""

from __future__ import annotations

from advisor.consumers.production import MIN_PERIODS
from advisor.fleet.decide import Planned
from advisor.fleet.production import Throttled, suggestions
from advisor.models import WorkloadKind, WorkloadRef
from advisor.models.kube import KubeWorkload
from advisor.pipeline.production_source import ProductionSource


def suggested(
    source: ProductionSource,
    threshold: float,
    namespace: str,
    found: list[KubeWorkload],
    opted_in: set[WorkloadRef],
) -> list[Planned]:
    """``found``: the namespace's workloads with the pods the API server lists now, matched by
    name."""
    totals_by_pod = source.throttling(namespace)
    if totals_by_pod is None:
        return []
    owner = {
        pod.metadata.name: workload
        for workload in found
        if workload.kind is not WorkloadKind.POD and workload.ref not in opted_in
        for pod in workload.pods
        if pod.metadata.name
    }
    totals: dict[tuple[WorkloadRef, str], list[float]] = {}
    for (pod, container), (throttled, periods) in totals_by_pod.items():
        workload = owner.get(pod)
        if workload is None:
            continue
        share = totals.setdefault((workload.ref, container), [0.0, 0.0])
        share[0] += throttled
        share[1] += periods
    throttled_above = [
        Throttled(ref, container, share[0] / share[1])
        for (ref, container), share in totals.items()
        if share[1] >= MIN_PERIODS
    ]
    return suggestions(
        throttled_above,
        threshold=threshold,
        window=f"{source.window.total_seconds() / 3600:g}h",
        namespace=namespace,
    )
