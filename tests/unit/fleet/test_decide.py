"""What ``plan`` decides for each opted-in container, from listed objects alone (no cluster).

The advice a test stores is built with the real models and, where it must fit, from the Job the
planner derives for the workload (its target, quota and node pool): what a calibration Job would
have written. Each case then changes one thing about the workload and reads the decision.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from advisor.fleet.decide import Planned, decide, to_create
from advisor.fleet.derive import JobSettings, derive_job
from advisor.fleet.jobs import PlannedJob, planned_job
from advisor.fleet.optin import CalibrationAsk, Defaults, read_ask
from advisor.models import Recommendation
from advisor.models.kube import KubeJob, KubeWorkload
from advisor.models.plan import Calibrate, Waits
from advisor.recommend import build_recommendation, content_hash, parse, render_configmap
from advisor.recommend.stored import by_name
from advisor.render.plan_reasons import differences_text, plan_reason_text
from testkit.fakeapi.samples import FIXED_NOW, calibration_result, node_profile
from tests.support.fleet_workloads import view

SETTINGS = JobSettings(image="registry.example.com/tfta:1", service_account="calib")
DEFAULTS = Defaults()
NOW = FIXED_NOW + timedelta(days=1)
MODEL = "/models/resnet"


def deployment(
    name: str = "web",
    *,
    limits: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    pod: dict[str, Any] | None = None,
    configmap: str | None = "advice-web",
    image: str = "registry.example.com/serving:1",
    kind: str = "Deployment",
) -> dict[str, Any]:
    """An opted-in workload as a list returns it (with ``kind`` set by the lister)."""
    container: dict[str, Any] = {"name": "server", "image": image}
    resources: dict[str, Any] = {}
    if limits is not None:
        resources["limits"] = limits
    if requests is not None:
        resources["requests"] = requests
    if resources:
        container["resources"] = resources
    if configmap:
        container["envFrom"] = [{"configMapRef": {"name": configmap}}]
    return {
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"uid-{name}",
            "labels": {"tf-thread-advisor.io/calibrate": "true"},
            "annotations": {"tf-thread-advisor.io/model": MODEL, **(annotations or {})},
        },
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container], **(pod or {})},
            }
        },
    }


def measured_for(
    obj: dict[str, Any],
    *,
    configmap: str = "advice-web",
    created_days_ago: float = 1.0,
    **prov_changes: Any,
) -> dict[str, Any]:
    """The ConfigMap a calibration Job for ``obj`` (as it is now) would have written."""
    ask = read_ask(obj["metadata"]["annotations"], DEFAULTS)
    job = derive_job(view(obj, obj["kind"]), ask, configmap=configmap, settings=SETTINGS)
    selector = obj["spec"]["template"]["spec"].get("nodeSelector")
    result = calibration_result(node=node_profile(quota=job.cpu))
    rec = build_recommendation(
        result,
        advisor_version="0.1.0",
        node_selector=selector,
        now=NOW - timedelta(days=created_days_ago),
    )
    subject = rec.provenance.subject.model_copy(
        update={
            "concurrency": ask.options.concurrency,
            "batch_size": ask.options.batch_size,
        }
    )
    prov = rec.provenance.model_copy(
        update={
            "target": job.target,
            "subject": subject,
            "objective": ask.options.objective,
            "p99_slo_ms": ask.options.p99_slo_ms,
            **prov_changes,
        }
    )
    stored = Recommendation.model_validate({**rec.model_dump(), "provenance": prov.model_dump()})
    return render_configmap(stored, configmap, "ml")


def plan(
    workloads: list[dict[str, Any]],
    configmaps: list[dict[str, Any]] = (),  # type: ignore[assignment]
    jobs: list[PlannedJob] = (),  # type: ignore[assignment]
    **kw: Any,
) -> list[Planned]:
    stored = by_name(configmaps)
    listed = [KubeWorkload.read(obj) for obj in workloads]
    return decide(listed, stored, jobs, defaults=DEFAULTS, settings=SETTINGS, now=NOW, **kw)


def only(planned: list[Planned]) -> Planned:
    (one,) = planned
    return one


def test_no_configmap_yet_is_calibrate_with_the_job_to_create() -> None:
    one = only(plan([deployment(limits={"cpu": "1"})]))
    assert one.decision == "calibrate"
    assert "ConfigMap advice-web does not exist" in plan_reason_text(one.reason)
    assert one.job is not None and one.job_name == one.job.name
    assert str(one.workload) == "deployment/web"
    assert (one.container, one.configmap) == ("server", "advice-web")


def test_advice_measured_for_the_workload_as_it_is_fits() -> None:
    web = deployment(limits={"cpu": "1"}, pod={"nodeSelector": {"pool": "a"}})
    one = only(plan([web], [measured_for(web)]))
    assert one.decision == "fits", plan_reason_text(one.reason)
    assert one.job_name is None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            lambda d: d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].update(
                cpu="2"
            ),
            "CPU limit",
        ),
        (lambda d: d["spec"]["template"]["spec"].update(nodeSelector={"pool": "b"}), "pool=b"),
        (
            lambda d: d["spec"]["template"]["spec"]["containers"][0].update(
                image="registry.example.com/serving:2"
            ),
            "serving image",
        ),
        (
            lambda d: d["metadata"]["annotations"].update(
                {"tf-thread-advisor.io/model": "/models/other"}
            ),
            "model path",
        ),
        (
            lambda d: d["metadata"]["annotations"].update(
                {"tf-thread-advisor.io/objective": "throughput"}
            ),
            "objective",
        ),
        (
            lambda d: d["metadata"]["annotations"].update(
                {"tf-thread-advisor.io/concurrency": "4"}
            ),
            "concurrency",
        ),
        (
            lambda d: d["metadata"]["annotations"].update({"tf-thread-advisor.io/batch-size": "8"}),
            "batch size",
        ),
    ],
    ids=["cpu", "pool", "image", "model", "objective", "concurrency", "batch"],
)
def test_each_change_of_shape_is_calibrate_naming_it(change: Any, words: str) -> None:
    web = deployment(limits={"cpu": "1"}, pod={"nodeSelector": {"pool": "a"}})
    stored = measured_for(web)
    changed = copy.deepcopy(web)
    change(changed)
    one = only(plan([changed], [stored]))
    assert one.decision == "calibrate"
    assert words in plan_reason_text(one.reason)
    # a change of the workload since the advice: production cannot judge the advice alone
    assert isinstance(one.reason.cause, Calibrate)
    assert one.reason.cause.changed and words in differences_text(one.reason.cause.changed)


def test_older_than_max_age_is_calibrate() -> None:
    web = deployment(limits={"cpu": "1"})
    stored = measured_for(web, created_days_ago=40)
    assert only(plan([web], [stored])).decision == "fits"
    one = only(plan([web], [stored], max_age=timedelta(days=30)))
    assert one.decision == "calibrate"
    assert "older than the maximum age" in plan_reason_text(one.reason)
    assert one.reason.cause == Calibrate(one.reason.cause.differences, ())  # nothing changed


def test_hand_written_target_advice_is_recalibrated_for_the_workload() -> None:
    web = deployment(limits={"cpu": "1"})
    stored = measured_for(web, target=None)
    one = only(plan([web], [stored]))
    assert one.decision == "calibrate"
    assert "hand-written target" in plan_reason_text(one.reason)
    # no spec recorded: nothing is known to have changed since the advice
    assert isinstance(one.reason.cause, Calibrate) and one.reason.cause.changed == ()


@pytest.mark.parametrize(("value", "revert"), [(None, True), ("true", True), ("False", False)])
def test_the_revert_annotation_is_carried_to_the_decision(value: str | None, revert: bool) -> None:
    annotations = {} if value is None else {"tf-thread-advisor.io/revert": value}
    web = deployment(limits={"cpu": "1"}, annotations=annotations)
    one = only(plan([web], [measured_for(web)]))
    assert (one.decision, one.revert) == ("fits", revert)


def test_a_configmap_not_written_by_the_advisor_is_never_taken() -> None:
    web = deployment(limits={"cpu": "1"})
    foreign = {"metadata": {"name": "advice-web", "namespace": "ml"}, "data": {"A": "1"}}
    one = only(plan([web], [foreign]))
    assert one.decision == "skipped"
    assert "reads no advice ConfigMap" in plan_reason_text(one.reason)
    assert "advice-web, not written by tf-thread-advisor" in plan_reason_text(one.reason)
    web["metadata"]["annotations"]["tf-thread-advisor.io/configmap"] = "advice-web"
    named = only(plan([web], [foreign]))
    assert (named.decision, named.job) == ("skipped", None)
    assert "was not written by tf-thread-advisor and is never replaced" in plan_reason_text(
        named.reason
    )


def test_request_only_workload_is_measured_under_its_request() -> None:
    web = deployment(requests={"cpu": "1500m"})
    one = only(plan([web]))
    assert one.decision == "calibrate"
    assert one.job is not None and one.job.cpu_from == "request" and one.job.cpu == 1.5
    stored = measured_for(web)
    assert only(plan([web], [stored])).decision == "fits"
    web_limited = deployment(limits={"cpu": "1500m"}, requests={"cpu": "1500m"})
    again = only(plan([web_limited], [stored]))
    assert again.decision == "calibrate"
    assert "CPU request" in plan_reason_text(again.reason)


def test_neither_limit_nor_request_is_skipped() -> None:
    one = only(plan([deployment()]))
    assert one.decision == "skipped"
    assert "CPU" in plan_reason_text(one.reason)


@pytest.mark.parametrize(
    ("annotations", "named"),
    [
        ({"tf-thread-advisor.io/model": ""}, "tf-thread-advisor.io/model"),
        ({"tf-thread-advisor.io/model": "models/rel"}, "tf-thread-advisor.io/model"),
        ({"tf-thread-advisor.io/concurrency": "many"}, "tf-thread-advisor.io/concurrency"),
        ({"tf-thread-advisor.io/concurrency": "0"}, "tf-thread-advisor.io/concurrency"),
        ({"tf-thread-advisor.io/budget": "5"}, "tf-thread-advisor.io/budget"),
        ({"tf-thread-advisor.io/objective": "fastest"}, "tf-thread-advisor.io/objective"),
        ({"tf-thread-advisor.io/objective": "slo"}, "tf-thread-advisor.io/p99-ms"),
        ({"tf-thread-advisor.io/restart": "yes"}, "tf-thread-advisor.io/restart"),
        ({"tf-thread-advisor.io/revert": "no"}, "tf-thread-advisor.io/revert"),
        ({"tf-thread-advisor.io/configmap": "Not_A_Name"}, "tf-thread-advisor.io/configmap"),
    ],
)
def test_a_bad_annotation_is_skipped_naming_it(annotations: dict[str, str], named: str) -> None:
    web = deployment(limits={"cpu": "1"}, annotations=annotations)
    one = only(plan([web]))
    assert one.decision == "skipped"
    assert named in plan_reason_text(one.reason)


def test_several_containers_need_the_container_annotation() -> None:
    web = deployment(limits={"cpu": "1"})
    sidecar = {"name": "proxy", "image": "envoy", "resources": {"limits": {"cpu": "1"}}}
    web["spec"]["template"]["spec"]["containers"].append(sidecar)
    one = only(plan([web]))
    assert one.decision == "skipped"
    assert "tf-thread-advisor.io/container" in plan_reason_text(one.reason)
    web["metadata"]["annotations"]["tf-thread-advisor.io/container"] = "server"
    assert only(plan([web])).container == "server"


def test_no_mounted_advice_needs_the_configmap_annotation() -> None:
    web = deployment(limits={"cpu": "1"}, configmap=None)
    one = only(plan([web]))
    assert one.decision == "skipped"
    assert "tf-thread-advisor.io/configmap" in plan_reason_text(one.reason)
    web["metadata"]["annotations"]["tf-thread-advisor.io/configmap"] = "advice-new"
    named = only(plan([web]))
    assert (named.decision, named.configmap) == ("calibrate", "advice-new")


def _job(planned: Planned, **status: Any) -> PlannedJob:
    assert planned.job is not None
    return planned_job(KubeJob.read({**copy.deepcopy(planned.job.manifest), "status": status}))


def test_a_running_job_for_the_same_spec_is_pending() -> None:
    web = deployment(limits={"cpu": "1"})
    first = only(plan([web]))
    one = only(plan([web], jobs=[_job(first, active=1)]))
    assert one.decision == "pending"
    assert one.job_name == first.job_name


def test_a_failed_job_is_failed_with_its_reason_and_exit_code() -> None:
    web = deployment(limits={"cpu": "1"})
    first = only(plan([web]))
    failed = {
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "PodFailurePolicy",
                "message": "Container advisor for pod ml/x failed with exit code 4 matching "
                "FailJob rule at index 0",
            }
        ]
    }
    one = only(plan([web], jobs=[_job(first, **failed)]))
    assert one.decision == "failed"
    assert "PodFailurePolicy" in plan_reason_text(one.reason)
    assert "exit 4: model" in plan_reason_text(one.reason)


def test_an_earlier_specs_running_job_makes_the_new_spec_wait() -> None:
    web = deployment(limits={"cpu": "1"})
    earlier = only(plan([web]))
    resized = deployment(limits={"cpu": "2"})
    one = only(plan([resized], jobs=[_job(earlier, active=1)]))
    assert one.decision == "pending"
    assert one.job_name == earlier.job_name
    assert "earlier spec" in plan_reason_text(one.reason)


def test_a_configmap_shared_by_two_shapes_is_calibrated_for_the_first_only() -> None:
    a = deployment("a", limits={"cpu": "1"}, configmap="shared")
    b = deployment("b", limits={"cpu": "2"}, configmap="shared")
    first, second = plan([b, a])
    assert (str(first.workload), first.decision) == ("deployment/a", "calibrate")
    assert second.decision == "skipped"
    assert "shares ConfigMap shared with deployment/a" in plan_reason_text(second.reason)
    twin = deployment("b", limits={"cpu": "1"}, configmap="shared")
    stored = measured_for(a, configmap="shared")
    assert [p.decision for p in plan([a, twin], [stored])] == ["fits", "fits"]


def test_a_configmap_two_containers_read_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    a = deployment("a", limits={"cpu": "1"}, configmap="shared")
    twin = deployment("b", limits={"cpu": "1"}, configmap="shared")
    other = deployment("c", limits={"cpu": "1"}, configmap="advice-c")
    stored = [measured_for(a, configmap="shared"), measured_for(other, configmap="advice-c")]
    hashed: list[object] = []

    def counted(env: object) -> str:
        hashed.append(env)
        return content_hash(env)  # type: ignore[arg-type]

    # every advice that validates is hashed once as it is parsed, whoever parses it
    monkeypatch.setattr(parse, "content_hash", counted)
    assert [p.decision for p in plan([a, twin, other], stored)] == ["fits", "fits", "fits"]
    assert len(hashed) == 2


def test_each_advice_is_let_go_after_its_last_reader_unless_kept() -> None:
    a = deployment("a", limits={"cpu": "1"}, configmap="shared")
    twin = deployment("b", limits={"cpu": "1"}, configmap="shared")
    for keep in (False, True):
        stored = by_name([measured_for(a, configmap="shared")])
        listed = [KubeWorkload.read(obj) for obj in (a, twin)]
        decided = decide(
            listed, stored, [], defaults=DEFAULTS, settings=SETTINGS, now=NOW, keep_advice=keep
        )
        assert [p.decision for p in decided] == ["fits", "fits"]
        assert ("outcome" in vars(stored["shared"])) is keep


def test_max_running_bounds_calibrations_per_node_pool() -> None:
    a = deployment(
        "a", limits={"cpu": "1"}, configmap="advice-a", pod={"nodeSelector": {"pool": "x"}}
    )
    b = deployment(
        "b", limits={"cpu": "1"}, configmap="advice-b", pod={"nodeSelector": {"pool": "x"}}
    )
    c = deployment(
        "c", limits={"cpu": "1"}, configmap="advice-c", pod={"nodeSelector": {"pool": "y"}}
    )
    decided = plan([a, b, c])
    start, shown = to_create(decided, [], max_running=1)
    assert [str(p.workload) for p in start] == ["deployment/a", "deployment/c"]
    waiting = next(p for p in shown if str(p.workload) == "deployment/b")
    assert waiting.decision == "calibrate" and waiting.job is not None
    assert waiting.reason.added == (Waits(busy=1, pool=waiting.job.pool, max_running=1),)
    assert "waits" in plan_reason_text(waiting.reason)
    start, _ = to_create(decided, [], max_running=2)
    assert len(start) == 3
    busy = _job(
        only(
            plan(
                [
                    deployment(
                        "z", limits={"cpu": "3"}, configmap="z", pod={"nodeSelector": {"pool": "y"}}
                    )
                ]
            )
        ),
        active=1,
    )
    start, _ = to_create(decided, [busy], max_running=1)
    assert [str(p.workload) for p in start] == ["deployment/a"]


def test_statefulsets_are_planned_too_and_other_kinds_are_not() -> None:
    sts = deployment("db", limits={"cpu": "1"}, kind="StatefulSet")
    one = only(plan([sts]))
    assert str(one.workload) == "statefulset/db"
    assert one.decision == "calibrate"
    ds = deployment("agent", limits={"cpu": "1"}, kind="DaemonSet")
    assert only(plan([ds])).decision == "skipped"


def test_defaults_are_what_annotations_leave_unsaid() -> None:
    web = deployment(limits={"cpu": "1"})
    ask: CalibrationAsk = read_ask(web["metadata"]["annotations"], Defaults(concurrency=4))
    assert ask.options.concurrency == 4
    stored = measured_for(web)  # measured with concurrency 1
    one = decide(
        [KubeWorkload.read(web)],
        by_name([stored]),
        [],
        defaults=Defaults(concurrency=4),
        settings=SETTINGS,
        now=NOW,
    )[0]
    assert one.decision == "calibrate" and "concurrency was 1, is now 4" in plan_reason_text(
        one.reason
    )


def test_a_key_reference_to_an_advice_key_names_the_configmap_and_others_do_not() -> None:
    web = deployment(limits={"cpu": "1"}, configmap=None)
    server = web["spec"]["template"]["spec"]["containers"][0]
    server["env"] = [
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "X"}}},
        {
            "name": "TF_NUM_INTRAOP_THREADS",
            "valueFrom": {
                "configMapKeyRef": {"name": "advice-keys", "key": "TF_NUM_INTRAOP_THREADS"}
            },
        },
    ]
    one = only(plan([web]))
    assert (one.decision, one.configmap) == ("calibrate", "advice-keys")
