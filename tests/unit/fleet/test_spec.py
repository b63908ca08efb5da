"""One calibration spec feeds both the Job's name and ``fits``: each field of it, changed, is a
new Job name and a ``calibrate`` naming the field; what measures nothing is neither. Advice an
older advisor wrote (no record of its spec) is judged by the comparisons it always was.

The advice a case stores is the one a calibration Job for the workload as it was would have
written (``measured_for``); the case then changes one thing and reads the decision.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from advisor.fleet.decide import Planned, decide
from advisor.fleet.derive import JobSettings, derive_job
from advisor.fleet.optin import read_ask
from advisor.fleet.spec import label_of, spec_changes, spec_record
from advisor.models.kube import KubeWorkload
from advisor.models.plan import SpecChanged
from advisor.recommend.stored import StoredAdvice
from advisor.render.plan_reasons import difference_text, plan_reason_text
from tests.support.fleet_workloads import view
from tests.unit.fleet.test_decide import (
    DEFAULTS,
    NOW,
    SETTINGS,
    deployment,
    measured_for,
    only,
    plan,
)

Edit = Callable[[dict[str, Any]], None]


def _pod(d: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = d["spec"]["template"]["spec"]
    return spec


def _resources(d: dict[str, Any]) -> dict[str, Any]:
    resources: dict[str, Any] = _pod(d)["containers"][0]["resources"]
    return resources


def _annotate(**values: str) -> Edit:
    return lambda d: d["metadata"]["annotations"].update(
        {f"tf-thread-advisor.io/{k.replace('_', '-')}": v for k, v in values.items()}
    )


def _required(value: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": [value]}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def web() -> dict[str, Any]:
    """A Guaranteed server pinned to pool a, with a model on a claim."""
    workload = deployment(
        limits={"cpu": "2", "memory": "2Gi"},
        requests={"cpu": "2", "memory": "2Gi"},
        pod={
            "nodeSelector": {"pool": "a"},
            "affinity": _required("a"),
            "tolerations": [{"key": "cpu-pool", "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "models", "persistentVolumeClaim": {"claimName": "models-a"}}],
        },
    )
    container = _pod(workload)["containers"][0]
    container["volumeMounts"] = [{"name": "models", "mountPath": "/models"}]
    return workload


#: each field of the spec, changed: (the edit, words the reason holds)
FIELDS: dict[str, tuple[Edit, str]] = {
    "node-selector": (lambda d: _pod(d).update(nodeSelector={"pool": "b"}), "pool=b"),
    "node-affinity": (
        lambda d: _pod(d).update(affinity=_required("b")),
        "its required node affinity changed since the advice was measured",
    ),
    "tolerations": (
        lambda d: _pod(d).update(tolerations=[]),
        "its tolerations changed since the advice was measured",
    ),
    "runtime-class": (
        lambda d: _pod(d).update(runtimeClassName="kata"),
        "runtime class changed (none -> kata)",
    ),
    "memory-limit": (
        lambda d: _resources(d)["limits"].update(memory="4Gi"),
        "memory limit changed (2Gi -> 4Gi)",
    ),
    "memory-request": (
        lambda d: _resources(d)["requests"].update(memory="1Gi"),
        "memory request changed (2Gi -> 1Gi)",
    ),
    "cpu-limit": (
        lambda d: _resources(d)["limits"].update(cpu="3"),
        "measured under a CPU limit of 2, the container's is now 3",
    ),
    "cpu-request": (
        lambda d: _resources(d)["requests"].update(cpu="1"),
        "CPU request changed (2 -> 1)",
    ),
    "pod-resources": (
        lambda d: _pod(d).update(resources={"limits": {"memory": "8Gi"}}),
        "pod-level memory limit changed (none -> 8Gi)",
    ),
    "image": (
        lambda d: _pod(d)["containers"][0].update(image="registry.example.com/serving:2"),
        "serving image was registry.example.com/serving:1, is now registry.example.com/serving:2",
    ),
    "model-path": (_annotate(model="/models/other"), "model path was /models/resnet"),
    "model-volume": (
        lambda d: _pod(d)["volumes"][0]["persistentVolumeClaim"].update(claimName="models-b"),
        "its model volume changed since the advice was measured",
    ),
    "objective": (_annotate(objective="throughput"), "objective was latency, is now throughput"),
    "concurrency": (_annotate(concurrency="4"), "concurrency was 1, is now 4"),
    "batch-size": (_annotate(batch_size="8"), "batch size was 1, is now 8"),
    "p99": (
        _annotate(objective="slo", p99_ms="30"),
        "objective was latency, is now slo; p99 bound (ms) was none, is now 30",
    ),
    "budget": (_annotate(budget="600"), "budget (s) changed (300 -> 600)"),
}


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_each_field_of_the_spec_is_calibrate_naming_it(field: str) -> None:
    before = web()
    stored = measured_for(before)
    assert only(plan([before], [stored])).decision == "fits"
    edit, words = FIELDS[field]
    after = copy.deepcopy(before)
    edit(after)
    one = only(plan([after], [stored]))
    assert one.decision == "calibrate", plan_reason_text(one.reason)
    assert words in plan_reason_text(one.reason)
    # one field, one reason: the CPU limit and the pool are not named twice
    assert plan_reason_text(one.reason).count(";") == words.count(";"), plan_reason_text(one.reason)
    assert one.job is not None
    assert one.job.name != only(plan([before])).job_name


def _with(settings: JobSettings, workload: dict[str, Any], stored: dict[str, Any]) -> Planned:
    return only(
        decide(
            [KubeWorkload.read(workload)],
            {"advice-web": StoredAdvice.read(stored, "ConfigMap advice-web")},
            [],
            defaults=DEFAULTS,
            settings=settings,
            now=NOW,
        )
    )


@pytest.mark.parametrize(
    ("extra_args", "words"),
    [
        (("--trial-mode=fork",), "trial mode changed (auto -> fork)"),
        (("--sweep-onednn",), "oneDNN sweep changed (off -> on)"),
    ],
)
def test_plans_flags_that_change_the_measurement_are_calibrate(
    extra_args: tuple[str, ...], words: str
) -> None:
    workload = web()
    stored = measured_for(workload)
    settings = JobSettings(SETTINGS.image, SETTINGS.service_account, extra_args=extra_args)
    one = _with(settings, workload, stored)
    assert one.decision == "calibrate"
    assert plan_reason_text(one.reason) == words


def test_what_measures_nothing_changes_neither_the_job_name_nor_the_decision() -> None:
    before = web()
    stored = measured_for(before)
    after = copy.deepcopy(before)
    after["spec"]["replicas"] = 12
    after["metadata"]["labels"]["team"] = "search"
    _pod(after)["containers"][0]["env"] = [{"name": "LOG_LEVEL", "value": "debug"}]
    after["spec"]["template"]["metadata"]["labels"]["version"] = "2"
    _annotate(restart="true")(after)
    settings = JobSettings(
        "registry.example.com/tfta:2",
        SETTINGS.service_account,
        extra_args=("--configmap-annotation=reloader.stakater.com/match=true",),
    )
    one = _with(settings, after, stored)
    assert one.decision == "fits", plan_reason_text(one.reason)
    ask = read_ask(before["metadata"]["annotations"], DEFAULTS)
    ask_after = read_ask(after["metadata"]["annotations"], DEFAULTS)
    assert ask_after.restart and not ask.restart
    name = derive_job(
        view(before, "Deployment"), ask, configmap="advice-web", settings=SETTINGS
    ).name
    assert (
        derive_job(
            view(after, "Deployment"),
            ask_after,
            configmap="advice-web",
            settings=settings,
        ).name
        == name
    )


def test_advice_without_the_record_is_judged_by_the_comparisons_it_always_was() -> None:
    """An older advisor's advice records no spec: an upgrade does not calibrate every workload
    again, and what those comparisons see still counts."""
    before = web()
    job = derive_job(
        view(before, "Deployment"),
        read_ask(before["metadata"]["annotations"], DEFAULTS),
        configmap="advice-web",
        settings=SETTINGS,
    )
    assert job.target.spec is not None
    older = measured_for(before, target=job.target.model_copy(update={"spec": None}))
    assert '"spec":' not in older["metadata"]["annotations"]["tf-thread-advisor.io/provenance"]
    after = copy.deepcopy(before)
    _resources(after)["limits"].update(memory="4Gi")
    _pod(after).update(tolerations=[])
    assert only(plan([after], [older])).decision == "fits"
    _resources(after)["limits"].update(cpu="3")
    one = only(plan([after], [older]))
    assert one.decision == "calibrate"
    assert (
        plan_reason_text(one.reason) == "measured under a CPU limit of 2, the container's is now 3"
    )


def test_the_record_keeps_short_values_readable_and_long_ones_hashed() -> None:
    record = spec_record(
        {
            "limits.memory": "2Gi",
            "budget": 300.0,
            "p99-ms": 25.5,
            "sweep-onednn": True,
            "node-selector": {"pool": "a", "zone": "b"},
            "tolerations": [{"key": "x"}],
            "runtime-class": "r" * 41,
            "objective": "latency",  # the provenance holds it on its own
        }
    )
    assert record["limits.memory"] == "2Gi"
    assert record["budget"] == "300"
    assert record["sweep-onednn"] == "on"
    assert record["node-selector"] == "pool=a,zone=b"
    assert record["tolerations"].startswith("#") and len(record["tolerations"]) == 11
    assert record["runtime-class"].startswith("#")
    assert "objective" not in record and "p99-ms" not in record


def test_a_change_reads_as_the_field_and_its_values() -> None:
    def words(recorded: dict[str, str], current: dict[str, str]) -> list[tuple[str, str]]:
        return [(c.key, difference_text(c)) for c in spec_changes(recorded, current)]

    assert words({"limits.memory": "2Gi"}, {"limits.memory": "4Gi"}) == [
        ("limits.memory", "memory limit changed (2Gi -> 4Gi)")
    ]
    assert words({"limits.memory": "2Gi"}, {}) == [
        ("limits.memory", "memory limit changed (2Gi -> none)")
    ]
    assert words({"tolerations": "#0123456789"}, {}) == [
        ("tolerations", "its tolerations changed since the advice was measured")
    ]
    assert spec_changes({"limits.memory": "2Gi"}, {"limits.memory": "#0123456789"}) == [
        SpecChanged("limits.memory", "memory limit", "2Gi", "#0123456789", readable=False)
    ]
    assert spec_changes({"budget": "300"}, {"budget": "300"}) == []
    assert label_of("pod.requests.cpu") == "pod-level CPU request"
    assert label_of("limits.nvidia.com/gpu") == "nvidia.com/gpu limit"


def test_fits_says_when_the_advice_was_measured_on_cpus_of_its_own() -> None:
    workload = web()
    own = only(plan([workload], [measured_for(workload, cpus_exclusive=True)]))
    assert own.decision == "fits"
    assert "CPU limit 2, exclusive CPUs, pool=a" in plan_reason_text(own.reason)
    shared = only(plan([workload], [measured_for(workload, cpus_exclusive=False)]))
    assert "exclusive" not in plan_reason_text(shared.reason)


def test_an_advice_measured_on_exclusive_cpus_without_a_quota_fits_their_limit() -> None:
    # 1.34's kubelet gives a Guaranteed container with whole CPUs exclusive CPUs and no CFS
    # quota: the advice records affinity [1], no quota, exclusive; a CPU limit of 1 is its shape
    workload = web()
    job_cpus = only(plan([workload], [measured_for(workload)])).reason
    assert job_cpus is not None
    node = {"quota_cpus": None, "affinity_cpus": [3, 4], "cpus_exclusive": True}
    own = only(plan([workload], [measured_for(workload, **node)]))
    assert own.verdict == "fits", plan_reason_text(own.reason)
    shared = only(plan([workload], [measured_for(workload, **{**node, "cpus_exclusive": None})]))
    assert shared.verdict != "fits"
    assert "measured without a CPU quota" in plan_reason_text(shared.reason)
