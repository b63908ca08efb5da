"""plan's suggestions through the ``ProductionSource`` protocol, with a source that is not
Prometheus: the pods' CFS figures summed per workload and container, the pod-less and opted-in
left out, too few periods no share."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from advisor.consumers.mounts import Mount
from advisor.models import Production, WorkloadKind, WorkloadRef
from advisor.models.kube import KubePod, KubeWorkload, ObjectMeta, PodSpec
from advisor.pipeline.production_source import ProductionSource, Throttling
from advisor.pipeline.suggest import suggested
from advisor.recommend import ParsedAdvice
from advisor.recommend.previous import Previous


class RecordedSource:
    """CFS figures by (pod, container), as any store of serving metrics might hold them."""

    def __init__(self, figures: Throttling | None) -> None:
        self.figures = figures
        self.window = timedelta(hours=24)
        self.now = datetime(2026, 12, 1, tzinfo=timezone.utc)
        self.asked: list[str] = []

    @property
    def unavailable(self) -> str | None:
        return None if self.figures is not None else "gone"

    def judge(
        self, parsed: ParsedAdvice | None, mount: Mount, previous: Previous | None = None
    ) -> Production:
        return Production(verdict="unknown")

    def throttling(self, namespace: str) -> Throttling | None:
        self.asked.append(namespace)
        return self.figures

    def warn(self) -> None:
        pass


def workload(name: str, *pods: str, kind: str = "Deployment") -> KubeWorkload:
    return KubeWorkload(
        ref=WorkloadRef(WorkloadKind(kind), name),
        metadata=ObjectMeta(name=name, namespace="ml"),
        spec={},
        template_metadata=ObjectMeta.read({}),
        pod_spec=PodSpec.read({"containers": [{"name": "server"}]}),
        raw={},
        pods=tuple(KubePod.read(_pod(p)) for p in pods),
    )


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": {"containers": []}}


def test_the_protocol_is_what_plan_takes() -> None:
    source: ProductionSource = RecordedSource({})
    assert suggested(source, 0.25, "ml", [], set()) == []


def test_pods_summed_per_workload_and_the_rest_left_out() -> None:
    figures = {
        ("web-1", "server"): (300.0, 1000.0),
        ("web-2", "server"): (500.0, 1000.0),  # web: 800 of 2000, 40%
        ("api-1", "server"): (900.0, 1000.0),  # opted in: plan decides for it
        ("one", "server"): (50.0, 60.0),  # too few periods for a share
        ("bare", "server"): (900.0, 1000.0),  # a bare pod is never suggested
        ("gone", "server"): (900.0, 1000.0),  # no workload lists it now
    }
    source = RecordedSource(figures)
    found = suggested(
        source,
        0.25,
        "ml",
        [
            workload("web", "web-1", "web-2"),
            workload("api", "api-1"),
            workload("few", "one"),
            workload("bare", "bare", kind="Pod"),
        ],
        {WorkloadRef.parse("deployment/api")},
    )
    assert [(str(d.workload), d.container, d.verdict) for d in found] == [
        ("deployment/web", "server", "suggested")
    ]
    assert source.asked == ["ml"]


def test_a_source_that_answers_nothing_suggests_nothing() -> None:
    assert suggested(RecordedSource(None), 0.25, "ml", [workload("web", "web-1")], set()) == []
