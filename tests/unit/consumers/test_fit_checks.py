"""Every problem ``status`` can report about a consumer, and the case where each stays quiet.

The consumers are ``KubeWorkload``/``Mount`` views built here from plain dicts, as the API server
returns them (and with the junk a hand-edited or half-written object can hold); the advice is
built, rendered and parsed back as ``status`` reads it. The advice recorded no serving target, so
the CPU checks compare the consumer's limit (``test_fit.py`` covers the request basis).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from advisor import __version__
from advisor.consumers.fit import consumer, cpu_limit, missing
from advisor.consumers.mounts import Mount, mounts, workloads
from advisor.keys import ADVICE_HASH_ANNOTATION
from advisor.models import Consumer, WorkloadKind, WorkloadRef
from advisor.models.kube import Container, KubePod, KubeWorkload, ObjectMeta, PodSpec
from advisor.recommend import (
    ParsedAdvice,
    build_recommendation,
    content_hash,
    parse_configmap,
    render_configmap,
)
from testkit.fakeapi.samples import FIXED_NOW, calibration_result, node_profile

ADVICE = "tf-advice"
#: the advice's data changed when it was built (render_configmap's data-changed time)
CHANGED = FIXED_NOW
RESTARTS = [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]


def advice(
    quota: float | None = 2.0, *, selector: dict[str, str] | None = None, affinity: int = 8
) -> ParsedAdvice:
    """An advice measured under ``quota`` CPUs with ``affinity`` CPUs usable, by a Job pinned by
    ``selector``."""
    result = calibration_result(2, 1, node=node_profile(affinity=affinity, quota=quota))
    rec = build_recommendation(
        result, advisor_version=__version__, node_selector=selector, now=FIXED_NOW
    )
    return parse_configmap(render_configmap(rec, ADVICE, "ml"))


def container(
    *, limit: Any = None, request: Any = None, resize: Any = RESTARTS, name: str = "server"
) -> dict[str, Any]:
    """The container reading the advice; by default one that restarts on a CPU resize, so only
    the check a test is about can speak."""
    resources: dict[str, Any] = {}
    if limit is not None:
        resources["limits"] = {"cpu": limit}
    if request is not None:
        resources["requests"] = {"cpu": request}
    found: dict[str, Any] = {"name": name, "envFrom": [{"configMapRef": {"name": ADVICE}}]}
    if resources:
        found["resources"] = resources
    if resize is not None:
        found["resizePolicy"] = resize
    return found


def pod(
    name: str,
    *,
    started: datetime | str | None = None,
    phase: str = "Running",
    status_limit: str | None = None,
    spec_limit: str | None = None,
    container_name: str = "server",
) -> dict[str, Any]:
    """A pod of the workload: its container running since ``started``, under ``status_limit``
    as the kubelet reports it and ``spec_limit`` as its spec says."""
    entry: dict[str, Any] = {"name": container_name}
    if started is not None:
        text = started if isinstance(started, str) else started.strftime("%Y-%m-%dT%H:%M:%SZ")
        entry["state"] = {"running": {"startedAt": text}}
    if status_limit is not None:
        entry["resources"] = {"limits": {"cpu": status_limit}}
    spec_container: dict[str, Any] = {"name": container_name}
    if spec_limit is not None:
        spec_container["resources"] = {"limits": {"cpu": spec_limit}}
    return {
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"containers": [spec_container]},
        "status": {"phase": phase, "containerStatuses": [entry]},
    }


def mount(
    box: dict[str, Any] | None = None,
    *,
    kind: str = "Deployment",
    pod_spec: dict[str, Any] | None = None,
    pods: list[dict[str, Any]] | None = None,
    annotations: dict[str, Any] | None = None,
    template_annotations: dict[str, Any] | None = None,
) -> Mount:
    """``box`` (a container) of the workload ``web`` in namespace ml, reading the advice."""
    box = container() if box is None else box
    spec = {"containers": [box], **(pod_spec or {})}
    workload = KubeWorkload(
        ref=WorkloadRef(WorkloadKind(kind), "web"),
        metadata=ObjectMeta(name="web", namespace="ml", annotations=annotations or {}),
        spec={},
        template_metadata=ObjectMeta.read({"annotations": template_annotations or {}}),
        pod_spec=PodSpec.read(spec),
        raw={},
        pods=tuple(KubePod.read(pod) for pod in pods or []),
    )
    return Mount(workload, Container.read(box), ADVICE, optional=False)


def row(parsed: ParsedAdvice | None, found: Mount, *, reloader_match: bool = False) -> Consumer:
    return consumer(parsed, found, reloader_match=reloader_match)


def problems(found: Consumer, code: str) -> list[str]:
    """The messages of ``found``'s problems with ``code``."""
    return [p.message for p in found.problems if p.code == code]


def codes(found: Consumer) -> list[str]:
    return [p.code for p in found.problems]


def ago(**delta: float) -> datetime:
    return CHANGED - timedelta(**delta)


# --------------------------------------------------------------------------------------------------
# cpu-limit-differs and no-cpu-limit


@pytest.mark.parametrize(
    ("limit", "cpus"), [("2", 2.0), ("2000m", 2.0), (2, 2.0), ("1995m", 1.995), ("2005m", 2.005)]
)
def test_a_limit_equal_to_the_quota_within_tolerance_fits(limit: Any, cpus: float) -> None:
    found = row(advice(2.0), mount(container(limit=limit)))
    assert (found.cpu_limit, found.problems) == (pytest.approx(cpus), [])


@pytest.mark.parametrize(("limit", "shown"), [("4", "4"), ("500m", "0.5"), ("2050m", "2.05")])
def test_a_limit_other_than_the_quota_names_both(limit: str, shown: str) -> None:
    (text,) = problems(row(advice(2.0), mount(container(limit=limit))), "cpu-limit-differs")
    assert text == f"its CPU limit is {shown}, the advice was measured under 2"


def test_a_limit_when_the_advice_was_measured_without_a_quota() -> None:
    found = row(advice(None, affinity=6), mount(container(limit="2")))
    (text,) = problems(found, "cpu-limit-differs")
    # what it could use when measured: its affinity, as no quota capped it
    assert "its CPU limit is 2" in text and "measured without one (6 CPUs usable)" in text


def test_no_limit_under_quota_advice_is_no_cpu_limit_and_none_without_quota_is_quiet() -> None:
    found = row(advice(1.5), mount(container()))
    assert found.cpu_limit is None
    (text,) = problems(found, "no-cpu-limit")
    assert "quota of 1.5 CPUs does not apply" in text
    assert codes(row(advice(None), mount(container()))) == []


def test_the_pod_level_limit_caps_the_container_limit() -> None:
    # the smaller of the two is the quota the container runs under
    capped = mount(container(limit="4"), pod_spec={"resources": {"limits": {"cpu": "2"}}})
    assert cpu_limit(capped) == 2.0
    assert codes(row(advice(2.0), capped)) == []
    tighter = mount(container(limit="2"), pod_spec={"resources": {"limits": {"cpu": "1"}}})
    (text,) = problems(row(advice(2.0), tighter), "cpu-limit-differs")
    assert text.startswith("its CPU limit is 1,")
    # a pod-level limit alone is a limit too
    pod_only = mount(container(), pod_spec={"resources": {"limits": {"cpu": "2"}}})
    assert (cpu_limit(pod_only), codes(row(advice(2.0), pod_only))) == (2.0, [])


def test_pods_resized_in_place_are_named_with_what_they_run_under() -> None:
    pods = [
        pod("web-a", status_limit="2"),  # as declared
        pod("web-b", status_limit="1"),  # the kubelet applied a resize
        pod("web-c", spec_limit="3"),  # no status resources (before 1.33): its spec counts
        pod("web-d", status_limit="2", spec_limit="4"),  # status is what was applied
    ]
    found = row(advice(2.0), mount(container(limit="2"), pods=pods))
    (text,) = problems(found, "cpu-limit-differs")
    assert text.startswith("its CPU limit is 2 as measured, but some of its pods run under")
    assert text.endswith(": web-b (1), web-c (3)")
    # the same pods all at the quota: quiet
    same = [pod("web-a", status_limit="2"), pod("web-b", spec_limit="2000m")]
    assert codes(row(advice(2.0), mount(container(limit="2"), pods=same))) == []


def test_pods_of_another_container_do_not_count_as_resized() -> None:
    pods = [pod("web-a", status_limit="1", container_name="sidecar")]
    assert codes(row(advice(2.0), mount(container(limit="2"), pods=pods))) == []


def test_without_a_declared_limit_the_limit_its_pods_were_admitted_with_counts() -> None:
    # a LimitRange default: the template declares nothing, admission wrote 2 into the pods
    pods = [pod("web-a"), pod("web-b", spec_limit="2")]
    found = row(advice(2.0), mount(container(), pods=pods))
    assert (found.cpu_limit, codes(found)) == (2.0, [])
    admitted_other = row(advice(2.0), mount(container(), pods=[pod("web-a", spec_limit="3")]))
    assert codes(admitted_other) == ["cpu-limit-differs"]


# --------------------------------------------------------------------------------------------------
# node-pool-differs

POOL = {"pool": "cpu-large"}


def affinity(*terms: list[dict[str, Any]], preferred: bool = False) -> dict[str, Any]:
    """A pod spec's node affinity with these nodeSelectorTerms (each a list of expressions)."""
    node_terms = [{"matchExpressions": expressions} for expressions in terms]
    if preferred:
        rules = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": term} for term in node_terms
            ]
        }
    else:
        rules = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": node_terms}
        }
    return {"affinity": {"nodeAffinity": rules}}


def pins(key: str, *values: str, operator: str = "In") -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def pool_problems(pod_spec: dict[str, Any], selector: dict[str, str] | None = None) -> list[str]:
    found = row(advice(selector=POOL if selector is None else selector), mount(pod_spec=pod_spec))
    return problems(found, "node-pool-differs")


def test_the_same_node_selector_fits() -> None:
    assert pool_problems({"nodeSelector": {"pool": "cpu-large", "zone": "a"}}) == []


def test_no_pinning_at_all_says_nothing_pins_the_key() -> None:
    (text,) = pool_problems({})
    assert text.endswith("pool=cpu-large (nothing it requires pins pool)")


def test_another_value_in_the_node_selector_is_named() -> None:
    (text,) = pool_problems({"nodeSelector": {"pool": "gpu"}})
    assert text.endswith("pool=cpu-large (its nodeSelector says pool=gpu)")


def test_a_required_affinity_term_with_in_and_that_one_value_fits() -> None:
    assert pool_problems(affinity([pins("pool", "cpu-large")])) == []
    # every term pins it (terms are ORed: each one must)
    assert pool_problems(affinity([pins("pool", "cpu-large")], [pins("pool", "cpu-large")])) == []


@pytest.mark.parametrize(
    "pod_spec",
    [
        pytest.param(affinity([pins("pool", "cpu-large", "cpu-small")]), id="in-two-values"),
        pytest.param(affinity([pins("pool", "cpu-large")], [pins("zone", "a")]), id="ored-term"),
        pytest.param(affinity([pins("pool", "gpu", operator="NotIn")]), id="not-in"),
        pytest.param(affinity([pins("pool", "cpu-large")], preferred=True), id="preferred"),
        pytest.param(affinity(), id="no-terms"),
    ],
)
def test_affinity_that_lets_pods_elsewhere_is_node_pool_differs(pod_spec: dict[str, Any]) -> None:
    (text,) = pool_problems(pod_spec)
    assert "pool=cpu-large (nothing it requires pins pool)" in text


def test_each_pair_is_met_by_either_and_unmet_pairs_are_listed_in_key_order() -> None:
    selector = {"pool": "cpu-large", "zone": "a"}
    both = {"nodeSelector": {"zone": "a"}, **affinity([pins("pool", "cpu-large")])}
    assert pool_problems(both, selector) == []
    (text,) = pool_problems({"nodeSelector": {"zone": "b"}}, selector)
    assert text.endswith(
        "pool=cpu-large (nothing it requires pins pool), zone=a (its nodeSelector says zone=b)"
    )


def test_an_advice_measured_without_a_node_selector_fits_any_pool() -> None:
    assert pool_problems({"nodeSelector": {"pool": "gpu"}}, selector={}) == []


def test_junk_in_the_affinity_is_not_a_pin() -> None:
    junk = affinity(["not a dict", None, pins("pool", "cpu-large")])  # type: ignore[list-item]
    assert pool_problems(junk) == []  # the one valid expression pins it
    spec = affinity([pins("pool", "cpu-large")])
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ].append("junk")
    assert pool_problems(spec) == []  # a non-dict term is no term
    values_missing = affinity([{"key": "pool", "operator": "In"}])
    assert len(pool_problems(values_missing)) == 1


# --------------------------------------------------------------------------------------------------
# resize-restarts-nothing


@pytest.mark.parametrize(
    "resize",
    [
        pytest.param(None, id="no-policy"),
        pytest.param([], id="empty"),
        pytest.param([{"resourceName": "cpu", "restartPolicy": "NotRequired"}], id="not-required"),
        pytest.param(
            [{"resourceName": "memory", "restartPolicy": "RestartContainer"}], id="memory-only"
        ),
        pytest.param(["junk", None, 3], id="junk"),
    ],
)
def test_a_cpu_resize_without_restart_is_reported(resize: Any) -> None:
    found = row(advice(2.0), mount(container(limit="2", resize=resize)))
    assert codes(found) == ["resize-restarts-nothing"]
    assert "restartPolicy RestartContainer for cpu" in found.problems[0].message


def test_a_restart_on_cpu_resize_among_other_entries_is_quiet() -> None:
    resize = ["junk", {"resourceName": "memory", "restartPolicy": "NotRequired"}, *RESTARTS]
    assert codes(row(advice(2.0), mount(container(limit="2", resize=resize)))) == []


def test_without_a_valid_advice_only_the_resize_check_runs() -> None:
    # an advice that does not validate: no quota, pool or time to compare with
    bare = container(resize=None)
    assert codes(row(None, mount(bare, pods=[pod("web-a", started=ago(days=1))]))) == [
        "resize-restarts-nothing"
    ]
    assert codes(row(None, mount(container()))) == []


# --------------------------------------------------------------------------------------------------
# pods-predate-advice


def test_pods_started_before_the_data_changed_are_named_with_the_fix() -> None:
    pods = [
        pod("web-new", started=CHANGED + timedelta(minutes=1)),
        pod("web-old", started=ago(hours=1)),
        pod("web-pending", phase="Pending"),
    ]
    found = row(advice(2.0), mount(container(limit="2"), pods=pods))
    (text,) = problems(found, "pods-predate-advice")
    assert text == (
        "1 of its 2 running pod(s) started before the advice's data changed at "
        "2026-11-21T08:00:00Z and still run the old values (web-old): kubectl rollout restart "
        "deployment/web, or let run --restart or Reloader do it"
    )


def test_all_pods_started_since_the_data_changed_is_quiet() -> None:
    pods = [pod("web-a", started=CHANGED), pod("web-b", started=CHANGED + timedelta(hours=2))]
    assert codes(row(advice(2.0), mount(container(limit="2"), pods=pods))) == []


def test_three_old_pods_are_named_the_rest_counted() -> None:
    pods = [pod(f"web-{n}", started=ago(minutes=n + 1)) for n in (4, 0, 3, 1, 2)]
    (text,) = problems(
        row(advice(2.0), mount(container(limit="2"), pods=pods)), "pods-predate-advice"
    )
    assert text.startswith("5 of its 5 running pod(s)")
    assert "(web-0, web-1, web-2 and 2 more)" in text


def test_a_bare_pod_is_told_to_be_recreated() -> None:
    found = row(
        advice(2.0), mount(container(limit="2"), kind="Pod", pods=[pod("web", started=ago(days=2))])
    )
    (text,) = problems(found, "pods-predate-advice")
    assert text.endswith("(web): recreate the pod")


def test_start_times_with_an_offset_or_without_a_zone_compare_as_utc() -> None:
    # 09:00 at +01:00 is the moment the data changed (08:00Z): not before it
    same_moment = [pod("web-a", started="2026-11-21T09:00:00+01:00")]
    assert codes(row(advice(2.0), mount(container(limit="2"), pods=same_moment))) == []
    # a time without a zone is read as UTC: 07:59 is before 08:00Z
    naive = [pod("web-a", started="2026-11-21T07:59:00")]
    assert codes(row(advice(2.0), mount(container(limit="2"), pods=naive))) == [
        "pods-predate-advice"
    ]


def test_an_advice_without_a_data_changed_time_never_predates() -> None:
    older = replace(advice(2.0), data_changed_at=None)
    pods = [pod("web-a", started=ago(days=30))]
    assert codes(row(older, mount(container(limit="2"), pods=pods))) == []


def test_the_built_in_restart_for_this_advice_covers_old_pods() -> None:
    parsed = advice(2.0)
    pods = [pod("web-a", started=ago(hours=1))]
    # run --restart sets the hash of the advice's data on the pod template
    current = {ADVICE_HASH_ANNOTATION: content_hash(parsed.recommendation.env)}
    done = mount(container(limit="2"), pods=pods, template_annotations=current)
    assert codes(row(parsed, done)) == []
    # the hash of other data is a restart for another advice: the pods are still old
    stale = {ADVICE_HASH_ANNOTATION: content_hash({"TF_NUM_INTRAOP_THREADS": "7"})}
    before = mount(container(limit="2"), pods=pods, template_annotations=stale)
    assert codes(row(parsed, before)) == ["pods-predate-advice"]
    # on the workload's own annotations it is not a rollout of the template
    elsewhere = mount(container(limit="2"), pods=pods, annotations=current)
    assert codes(row(parsed, elsewhere)) == ["pods-predate-advice"]


@pytest.mark.parametrize("where", ["annotations", "template_annotations"])
@pytest.mark.parametrize(
    ("marks", "match", "reloads"),
    [
        pytest.param({"configmap.reloader.stakater.com/reload": ADVICE}, False, True, id="named"),
        pytest.param(
            {"configmap.reloader.stakater.com/reload": f"other, {ADVICE}"}, False, True, id="list"
        ),
        pytest.param({"configmap.reloader.stakater.com/reload": "other"}, False, False, id="other"),
        pytest.param({"reloader.stakater.com/auto": "true"}, False, True, id="auto"),
        pytest.param({"configmap.reloader.stakater.com/auto": "True"}, False, True, id="cm-auto"),
        pytest.param({"reloader.stakater.com/auto": "false"}, False, False, id="auto-off"),
        pytest.param({"reloader.stakater.com/search": "true"}, True, True, id="search-match"),
        pytest.param({"reloader.stakater.com/search": "true"}, False, False, id="search-no-match"),
        pytest.param({"reloader.stakater.com/match": "true"}, True, False, id="match-on-workload"),
    ],
)
def test_reloader_set_up_for_this_advice_covers_old_pods(
    where: str, marks: dict[str, str], match: bool, reloads: bool
) -> None:
    pods = [pod("web-a", started=ago(hours=1))]
    found = row(
        advice(2.0), mount(container(limit="2"), pods=pods, **{where: marks}), reloader_match=match
    )
    assert codes(found) == ([] if reloads else ["pods-predate-advice"])


def test_reloader_restarts_no_bare_pod() -> None:
    marks = {"reloader.stakater.com/auto": "true"}
    found = row(
        advice(2.0),
        mount(
            container(limit="2"),
            kind="Pod",
            pods=[pod("web", started=ago(hours=1))],
            annotations=marks,
            template_annotations=marks,
        ),
    )
    assert codes(found) == ["pods-predate-advice"]


# --------------------------------------------------------------------------------------------------
# advice-missing


def test_a_missing_advice_names_the_configmap_and_namespace_and_nothing_else() -> None:
    found = missing(
        mount(container(limit="500m", resize=None), pods=[pod("web-a", started=ago(days=1))])
    )
    assert codes(found) == ["advice-missing"]
    assert found.problems[0].message.startswith(
        f"it requires ConfigMap {ADVICE}, which does not exist in namespace ml"
    )
    assert (found.kind, found.name, found.container, found.cpu_limit) == (
        "Deployment",
        "web",
        "server",
        0.5,
    )


# --------------------------------------------------------------------------------------------------
# junk and missing fields


def test_malformed_resources_read_as_none_declared() -> None:
    for resources in ("junk", {"limits": "junk"}, {"limits": {"cpu": "two"}}, {"limits": None}):
        box = {**container(), "resources": resources}
        found = row(advice(None), mount(box))
        assert (found.cpu_limit, found.cpu_request, codes(found)) == (None, None, [])


def test_pods_with_missing_or_junk_status_are_neither_resized_nor_old() -> None:
    pods: list[dict[str, Any]] = [
        {"metadata": {"name": "web-nostatus"}},
        {"metadata": {"name": "web-junk"}, "status": "junk", "spec": "junk"},
        {
            "metadata": {"name": "web-list-junk"},
            "status": {"phase": "Running", "containerStatuses": ["x", None]},
            "spec": {"containers": [None, "x"]},
        },
        {"status": {"phase": "Running", "containerStatuses": "junk"}},
        pod("web-bad-time", started="yesterday"),
        pod("web-bad-limit", status_limit="lots"),
    ]
    found = row(advice(2.0), mount(container(limit="2"), pods=pods))
    assert codes(found) == []


def test_a_pod_without_a_name_is_named_by_a_question_mark() -> None:
    nameless = pod("x", status_limit="1")
    del nameless["metadata"]
    (text,) = problems(
        row(advice(2.0), mount(container(limit="2"), pods=[nameless])), "cpu-limit-differs"
    )
    assert text.endswith(": ? (1)")


def test_a_container_without_a_name_matches_no_pod_and_reads_as_a_question_mark() -> None:
    box = container(limit="2")
    del box["name"]
    pods = [pod("web-a", status_limit="1", started=ago(hours=1))]
    found = row(advice(2.0), mount(box, pods=pods))
    assert (found.container, codes(found)) == ("?", [])


# --------------------------------------------------------------------------------------------------
# containers that read the ConfigMap but whose TensorFlow never sees the advice


def fits_silently(box: dict[str, Any]) -> bool:
    """``status`` counts ``box`` as reading the advice and reports nothing wrong with it."""
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"template": {"spec": {"containers": [box]}}},
    }
    found = mounts(workloads([KubeWorkload.read(deployment)], [])).get(("ml", ADVICE), [])
    return bool(found) and all(row(advice(2.0), m).problems == [] for m in found)


def test_a_plain_reader_fits_silently() -> None:
    # the control for the two cases below: the same container without the twist
    assert fits_silently(container(limit="2"))


def test_an_envfrom_prefix_hides_the_advice_and_is_not_a_silent_fit() -> None:
    box = container(limit="2")
    box["envFrom"] = [{"prefix": "X_", "configMapRef": {"name": ADVICE}}]
    assert not fits_silently(box)


def test_an_env_value_that_overrides_the_advice_is_not_a_silent_fit() -> None:
    box = container(limit="2")
    box["env"] = [{"name": "TF_NUM_INTRAOP_THREADS", "value": "4"}]
    assert not fits_silently(box)


def test_a_key_reference_to_the_advice_itself_is_no_override() -> None:
    box = container(limit="2")
    box["env"] = [
        {
            "name": "TF_NUM_INTRAOP_THREADS",
            "valueFrom": {"configMapKeyRef": {"name": ADVICE, "key": "TF_NUM_INTRAOP_THREADS"}},
        }
    ]
    assert fits_silently(box)


def test_an_override_names_the_variables_and_the_prefix() -> None:
    box = container(limit="2")
    box["envFrom"] = [{"prefix": "X_", "configMapRef": {"name": ADVICE}}]
    box["env"] = [{"name": "OMP_NUM_THREADS", "value": "8"}, {"name": "OTHER", "value": "1"}]
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"template": {"spec": {"containers": [box]}}},
    }
    (mount,) = mounts(workloads([KubeWorkload.read(deployment)], [])).get(("ml", ADVICE), [])
    problems = [p for p in row(advice(2.0), mount).problems if p.code == "advice-overridden"]
    assert len(problems) == 2
    assert "'X_'" in problems[0].message and "X_TF_NUM_INTRAOP_THREADS" in problems[0].message
    assert "OMP_NUM_THREADS" in problems[1].message and "OTHER" not in problems[1].message


def test_tf_servings_own_thread_flags_override_the_advice() -> None:
    box = container(limit="2")
    box["args"] = ["--port=8500", "--tensorflow_intra_op_parallelism=2"]
    assert not fits_silently(box)
    box["args"] = ["--tensorflow_intra_op_parallelism=$(TF_NUM_INTRAOP_THREADS)"]
    assert fits_silently(box)
    box["command"] = [
        "sh",
        "-c",
        "exec tensorflow_model_server --tensorflow_inter_op_parallelism=3",
    ]
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"template": {"spec": {"containers": [box]}}},
    }
    (mount,) = mounts(workloads([KubeWorkload.read(deployment)], [])).get(("ml", ADVICE), [])
    (problem,) = [p for p in row(advice(2.0), mount).problems if p.code == "advice-overridden"]
    assert problem.message.startswith(
        "its command line sets --tensorflow_inter_op_parallelism=3 itself"
    )
