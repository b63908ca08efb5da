"""How ``status`` compares a consumer's CPU with the quota an advice was measured under: against
its limit (the advice's default), or, when the advice says it was measured for a container
without a limit (``provenance.target.cpu_from == "request"``), against its CPU request.

The consumers are containers as the API server holds them, read through ``mounts`` as ``status``
reads them; the advice is rendered and parsed back as ``status`` reads it.
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor import __version__
from advisor.consumers.fit import consumer, cpu_request, missing
from advisor.consumers.mounts import Mount, mounts, workloads
from advisor.models import Consumer, CpuFrom, ServingTarget
from advisor.models.kube import KubeWorkload
from advisor.recommend import ParsedAdvice, build_recommendation, parse_configmap, render_configmap
from testkit.fakeapi.samples import FIXED_NOW, calibration_result, node_profile

ADVICE = "tf-advice"
CPU_CODES = {"cpu-limit-differs", "no-cpu-limit", "cpu-request-differs"}


def advice(quota: float | None = 2.0, cpu_from: CpuFrom | None = "request") -> ParsedAdvice:
    """An advice measured under ``quota`` CPUs on an 8-CPU node, for a serving container whose
    ``cpu_from`` says what the quota stands for (None: no target recorded, as older advice)."""
    target = (
        None
        if cpu_from is None
        else ServingTarget(workload="deployment/web", container="server", cpu_from=cpu_from)
    )
    result = calibration_result(2, 1, node=node_profile(affinity=8, quota=quota))
    rec = build_recommendation(result, advisor_version=__version__, target=target, now=FIXED_NOW)
    return parse_configmap(render_configmap(rec, ADVICE, "ml"))


def mount(
    *, limit: str | None = None, request: str | None = None, pod: dict[str, Any] | None = None
) -> Mount:
    """The one container of a Deployment that reads the advice, with these CPU resources (and
    ``pod`` as its pod-level resources)."""
    resources: dict[str, Any] = {}
    if limit is not None:
        resources["limits"] = {"cpu": limit}
    if request is not None:
        resources["requests"] = {"cpu": request}
    container = {
        "name": "server",
        "envFrom": [{"configMapRef": {"name": ADVICE}}],
        "resources": resources,
        "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}],
    }
    spec: dict[str, Any] = {"containers": [container]}
    if pod is not None:
        spec["resources"] = pod
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"template": {"spec": spec}},
    }
    ((found,),) = mounts(workloads([KubeWorkload.read(deployment)], [])).values()
    return found


def row(advice_: ParsedAdvice, mount_: Mount) -> Consumer:
    return consumer(advice_, mount_, reloader_match=False)


def cpu_problems(found: Consumer) -> list[tuple[str, str]]:
    return [(p.code, p.message) for p in found.problems if p.code in CPU_CODES]


# --------------------------------------------------------------------------------------------------
# advice measured for a CPU request


@pytest.mark.parametrize(("request_", "cpus"), [("2", 2.0), ("2000m", 2.0), ("2.004", 2.004)])
def test_a_request_equal_to_the_quota_fits_without_a_limit(request_: str, cpus: float) -> None:
    found = row(advice(2.0), mount(request=request_))
    assert (found.cpu_limit, found.problems) == (None, [])
    assert found.cpu_request == pytest.approx(cpus)


def test_a_request_other_than_the_quota_is_cpu_request_differs_naming_both() -> None:
    found = row(advice(2.0), mount(request="500m"))
    ((code, text),) = cpu_problems(found)
    assert code == "cpu-request-differs"
    assert "its CPU request is 0.5" in text and "request of 2" in text
    assert found.problems == [p for p in found.problems if p.code == code]  # nothing else


def test_no_request_at_all_is_cpu_request_differs_saying_it_has_none() -> None:
    found = row(advice(2.0), mount())
    ((code, text),) = cpu_problems(found)
    assert code == "cpu-request-differs"
    assert "neither a CPU limit nor a CPU request" in text and "2 CPUs" in text
    assert found.cpu_request is None


def test_the_pod_level_request_counts_when_the_container_has_none() -> None:
    pod_level = {"requests": {"cpu": "2"}}
    assert cpu_problems(row(advice(2.0), mount(pod=pod_level))) == []
    assert cpu_request(mount(pod=pod_level)) == 2.0
    # the container's own request comes first
    own = mount(request="1", pod=pod_level)
    assert cpu_request(own) == 1.0
    assert [c for c, _ in cpu_problems(row(advice(2.0), own))] == ["cpu-request-differs"]


def test_a_limit_other_than_the_quota_is_cpu_limit_differs_an_equal_one_fits() -> None:
    differs = row(advice(2.0), mount(limit="4", request="2"))
    ((code, text),) = cpu_problems(differs)
    assert code == "cpu-limit-differs"
    assert "its CPU limit is 4" in text and "without one" in text and "request of 2" in text
    # the limit is the quota it runs under: equal to what was measured, it fits (whatever the
    # request says, since the quota is the limit)
    assert cpu_problems(row(advice(2.0), mount(limit="2", request="1"))) == []
    assert cpu_problems(row(advice(2.0), mount(limit="2000m"))) == []


def test_measured_without_a_quota_a_consumer_without_a_limit_runs_as_measured() -> None:
    assert cpu_problems(row(advice(None), mount(request="2"))) == []
    assert cpu_problems(row(advice(None), mount())) == []
    ((code, _),) = cpu_problems(row(advice(None), mount(limit="2")))
    assert code == "cpu-limit-differs"


# --------------------------------------------------------------------------------------------------
# advice measured for a CPU limit, or recording no target: as it always was


@pytest.mark.parametrize("cpu_from", ["limit", None])
def test_limit_advice_reads_a_request_only_consumer_as_having_no_limit(
    cpu_from: CpuFrom | None,
) -> None:
    found = row(advice(2.0, cpu_from), mount(request="2"))
    ((code, text),) = cpu_problems(found)
    assert code == "no-cpu-limit" and "quota of 2 CPUs" in text
    assert found.cpu_request == 2.0  # filled, though not compared
    ((code, _),) = cpu_problems(row(advice(2.0, cpu_from), mount(limit="4", request="2")))
    assert code == "cpu-limit-differs"
    assert cpu_problems(row(advice(2.0, cpu_from), mount(limit="2", request="1"))) == []


def test_a_missing_advice_row_carries_the_request_too() -> None:
    found = missing(mount(request="750m"))
    assert (found.cpu_request, [p.code for p in found.problems]) == (0.75, ["advice-missing"])


def test_a_zero_request_is_no_request_for_status_as_for_plan() -> None:
    """A container requesting 0 CPUs is guaranteed nothing: ``plan`` measures such a container
    under its pod's request, and ``status`` checks it against that same request."""
    pod_level = {"requests": {"cpu": "2"}}
    zero = mount(request="0", pod=pod_level)
    assert cpu_request(zero) == 2.0
    assert cpu_problems(row(advice(2.0), zero)) == []
    alone = mount(request="0")
    assert cpu_request(alone) is None
    ((code, text),) = cpu_problems(row(advice(2.0), alone))
    assert code == "cpu-request-differs" and "neither a CPU limit nor a CPU request" in text


def test_measured_on_exclusive_cpus_without_a_quota_a_consumer_with_that_limit_fits() -> None:
    # 1.34's kubelet: a Guaranteed container given 2 exclusive CPUs runs with no CFS quota
    result = calibration_result(2, 1, node=node_profile(affinity=2, quota=None, logical=8))
    rec = build_recommendation(result, advisor_version=__version__, now=FIXED_NOW)
    prov = rec.provenance.model_copy(update={"cpus_exclusive": True})
    own = parse_configmap(
        render_configmap(rec.model_copy(update={"provenance": prov}), ADVICE, "ml")
    )
    assert cpu_problems(row(own, mount(limit="2", request="2"))) == []
    ((code, text),) = cpu_problems(row(own, mount(limit="4", request="4")))
    assert code == "cpu-limit-differs" and "4" in text
