"""One workload reference: kubectl's names parsed and printed in one place, the table of kinds
the cluster client and the fake API server share, and the text the models store."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.models import (
    CALIBRATED_KINDS,
    KINDS,
    POD_OWNER_KINDS,
    Consumer,
    PlanDecision,
    ServingTarget,
    WorkloadKind,
    WorkloadRef,
)
from advisor.models.kube import KubeWorkload
from testkit.fakeapi import apps, lists

# --------------------------------------------------------------------------------------------------
# --restart and --for-workload names


@pytest.mark.parametrize(
    ("text", "kind", "name"),
    [
        ("deployment/web", "deployment", "web"),
        ("deployments/web", "deployment", "web"),
        ("deploy/web", "deployment", "web"),
        ("Deployment/web", "deployment", "web"),
        ("statefulset/db-0.a", "statefulset", "db-0.a"),
        ("statefulsets/db", "statefulset", "db"),
        ("STS/db", "statefulset", "db"),
    ],
)
def test_parse_workload_accepts_kubectls_names(text: str, kind: str, name: str) -> None:
    ref = WorkloadRef.parse(text)
    assert (ref.kind.value.lower(), ref.name, str(ref)) == (kind, name, f"{kind}/{name}")
    assert ref.resource == f"{kind}s"


@pytest.mark.parametrize("text", ["web", "daemonset/web", "pod/web", "/web", "deployment:web"])
def test_parse_workload_refuses_other_kinds_and_shapes(text: str) -> None:
    with pytest.raises(ValueError, match=r"^must be deployment/NAME or statefulset/NAME$"):
        WorkloadRef.parse(text)


@pytest.mark.parametrize("name", ["", "Web", "web_1", "-web", "a" * 254, "web/x"])
def test_parse_workload_refuses_names_kubernetes_refuses(name: str) -> None:
    with pytest.raises(ValueError, match=rf"^name {name!r} "):
        WorkloadRef.parse(f"deployment/{name}")


def test_workload_refs_sort_by_kind_then_name() -> None:
    refs = [WorkloadRef.parse(t) for t in ("sts/a", "deploy/b", "deploy/a")]
    assert [str(r) for r in sorted(refs)] == ["deployment/a", "deployment/b", "statefulset/a"]


# --------------------------------------------------------------------------------------------------
# the kinds


def test_the_kinds_and_their_facts() -> None:
    assert set(KINDS) == set(WorkloadKind)
    assert CALIBRATED_KINDS == (WorkloadKind.DEPLOYMENT, WorkloadKind.STATEFULSET)
    assert WorkloadKind.POD not in POD_OWNER_KINDS and len(POD_OWNER_KINDS) == 3
    assert (WorkloadKind.STATEFULSET.resource, WorkloadKind.STATEFULSET.group) == (
        "statefulsets",
        "apps",
    )
    assert (WorkloadKind.POD.api_version, WorkloadKind.POD.group) == ("v1", "")


def test_the_fake_api_server_serves_the_kinds_of_the_table() -> None:
    for kind, facts in KINDS.items():
        prefix = "api/v1" if facts.api_version == "v1" else f"apis/{facts.api_version}"
        assert lists.RESOURCES[prefix][facts.resource] == kind.value
    assert {k.resource: k.value for k in POD_OWNER_KINDS} == apps.KINDS


def test_a_listed_object_names_its_workload() -> None:
    """The view of a listed object holds its identity (the one place it is read)."""

    def ref(obj: dict[str, Any]) -> WorkloadRef | None:
        view = KubeWorkload.read(obj)
        return None if view is None else view.ref

    obj = {"kind": "StatefulSet", "metadata": {"name": "db"}}
    assert ref(obj) == WorkloadRef(WorkloadKind.STATEFULSET, "db")
    assert str(ref({"kind": "Pod", "metadata": {"name": "p"}})) == "pod/p"
    for other in ({"kind": "CronJob", "metadata": {"name": "c"}}, {"metadata": {"name": "x"}}):
        assert ref(other) is None
    assert ref({"kind": "Deployment", "metadata": {}}) == WorkloadRef(WorkloadKind.DEPLOYMENT, "")


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("deployment/web", "deployment/web"),
        ("daemonset/agent", "daemonset/agent"),
        ("pod/p", "pod/p"),
        ("sts/db", "statefulset/db"),
        ("deployment/", None),
        ("web", None),
        ("cronjob/c", None),
        ("", None),
    ],
)
def test_read_takes_what_the_advisor_wrote_and_nothing_else(text: str, read: str | None) -> None:
    ref = WorkloadRef.read(text)
    assert (str(ref) if ref else None) == read


# --------------------------------------------------------------------------------------------------
# the models store the text


def test_a_model_stores_the_reference_as_the_text_it_stored_before() -> None:
    target = ServingTarget.model_validate({"workload": "deployment/web", "container": "s"})
    assert target.workload == WorkloadRef(WorkloadKind.DEPLOYMENT, "web")
    assert target.model_dump(mode="json")["workload"] == "deployment/web"
    assert '"workload":"deployment/web"' in target.model_dump_json()
    decision = PlanDecision(
        workload=WorkloadRef(WorkloadKind.DAEMONSET, "a"), decision="suggested", reason="r"
    )
    assert decision.model_dump(mode="json")["workload"] == "daemonset/a"
    assert PlanDecision.model_validate_json(decision.model_dump_json()) == decision


def test_a_model_refuses_text_that_names_no_workload() -> None:
    for bad in ("web", "", "cronjob/x", 3):
        with pytest.raises(ValueError, match="must be kind/NAME"):
            ServingTarget.model_validate({"workload": bad, "container": "s"})


def test_the_schema_still_says_a_string() -> None:
    schema = ServingTarget.model_json_schema()["properties"]["workload"]
    assert schema["type"] == "string" and schema["minLength"] == 1


def test_a_consumer_row_names_its_workload() -> None:
    consumer = Consumer(kind="StatefulSet", name="db", container="c")
    assert str(consumer.ref) == "statefulset/db"
    assert consumer.model_dump(mode="json")["kind"] == "StatefulSet"
