"""The cluster writer through the real kubernetes client, over real HTTP, against the strict fake
API server whose authorization comes from the shipped deploy/rbac.yaml."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from advisor.cluster import ConfigMapWriter, RetryPolicy, connect
from advisor.errors import (
    AdviceKeptError,
    ClusterRejectedError,
    ClusterUnreachableError,
    ConflictError,
    ForbiddenError,
    UsageError,
)
from advisor.recommend import DEFAULT_CONFIGMAP_NAME, render_configmap
from testkit.fakeapi.rbac import role_rules, without_verb
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer, refused_port

NAME, NS = "tf-advice", "ml"


def fast_policy(sleeps: list[float] | None = None, **kw: Any) -> RetryPolicy:
    import time

    def sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)
        time.sleep(seconds)

    defaults: dict[str, Any] = {
        "total_s": 5.0,
        "request_timeout_s": 1.0,
        "base_delay_s": 0.02,
        "max_delay_s": 0.1,
        "sleep": sleep,
    }
    return RetryPolicy(**{**defaults, **kw})


def advice(
    intra: int = 2, inter: int = 1, budget_s: float = 60.0, name: str = NAME
) -> dict[str, Any]:
    return render_configmap(recommendation(intra, inter, budget_s=budget_s), name, NS)


def writer(api: FakeApiServer, name: str = NAME, **kw: Any) -> ConfigMapWriter:
    return ConfigMapWriter(connect(api.kubeconfig), name, NS, policy=fast_policy(**kw))


@pytest.fixture
def api(tmp_path: Path) -> Any:
    with FakeApiServer(tmp_path, configmap_name=NAME) as server:
        yield server


def test_create_then_update_in_place_then_unchanged(api: FakeApiServer) -> None:
    w = writer(api)
    assert w.preflight(budget_s=60, force=False) is None
    assert api.get(NS, NAME) is None  # the dry run stored nothing
    first = w.publish(advice(2, 1), budget_s=60, force=False)
    created = api.get(NS, NAME)
    assert first.action == "created" and created is not None
    assert created["data"]["TF_NUM_INTRAOP_THREADS"] == "2"

    second = w.publish(advice(3, 1), budget_s=60, force=False)
    updated = api.get(NS, NAME)
    assert second.action == "updated" and updated is not None
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert updated["data"]["TF_NUM_INTRAOP_THREADS"] == "3"

    third = w.publish(advice(3, 1), budget_s=60, force=False)
    assert third.action == "unchanged"
    assert api.get(NS, NAME) == updated

    methods = {(r.method, r.content_type) for r in api.requests}
    assert methods == {("GET", None), ("PATCH", "application/apply-patch+yaml")}
    patches = [r for r in api.requests if r.method == "PATCH"]
    assert all(r.query["fieldManager"] == "tf-thread-advisor" for r in patches)
    assert patches[0].query.get("dryRun") == "All"
    # optimistic concurrency: an update carries the resourceVersion that was read
    assert patches[2].body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_the_shipped_role_with_its_own_name_suffices(tmp_path: Path) -> None:
    with FakeApiServer(tmp_path) as api:  # rules exactly as in deploy/rbac.yaml
        w = writer(api, name=DEFAULT_CONFIGMAP_NAME)
        w.preflight(budget_s=60, force=False)
        assert w.publish(advice(name=DEFAULT_CONFIGMAP_NAME), budget_s=60, force=False).action == (
            "created"
        )
        # and the same Role does not cover another name
        with pytest.raises(ForbiddenError, match="cannot get configmaps/other"):
            writer(api, name="other").preflight(budget_s=60, force=False)


def test_role_without_create_cannot_create(tmp_path: Path) -> None:
    rules = without_verb(role_rules(configmap_name=NAME), "create")
    with FakeApiServer(tmp_path, rules=rules) as api:
        with pytest.raises(ForbiddenError) as info:
            writer(api).preflight(budget_s=60, force=False)
        message = str(info.value)
        assert "cannot create configmaps/tf-advice in namespace ml" in message
        assert "Role tf-thread-advisor" in message and "resourceNames [tf-advice]" in message
        assert api.get(NS, NAME) is None


def test_403_leaves_the_stored_configmap_untouched(tmp_path: Path) -> None:
    rules = without_verb(role_rules(configmap_name=NAME), "patch")
    with FakeApiServer(tmp_path, rules=rules) as api:
        before = api.put(advice(1, 1))
        with pytest.raises(ForbiddenError, match="cannot patch configmaps/tf-advice"):
            writer(api).publish(advice(4, 2), budget_s=60, force=False)
        assert api.get(NS, NAME) == before


def test_wrong_token_is_forbidden_with_401(api: FakeApiServer, tmp_path: Path) -> None:
    bad = api.write_kubeconfig(tmp_path / "bad", token="nope")
    w = ConfigMapWriter(connect(bad), NAME, NS, policy=fast_policy())
    with pytest.raises(ForbiddenError, match="401 Unauthorized"):
        w.read()


def test_transient_503_is_retried(api: FakeApiServer) -> None:
    api.inject(503, times=2, method="PATCH")
    outcome = writer(api).publish(advice(), budget_s=60, force=False)
    assert outcome.action == "created"
    assert [r.status for r in api.requests if r.method == "PATCH"] == [503, 503, 201]


def test_persistent_500_gives_up_and_changes_nothing(api: FakeApiServer) -> None:
    before = api.put(advice(1, 1))
    api.inject(500, times=10_000, method="PATCH")
    with pytest.raises(ClusterUnreachableError, match=r"gave up after .* last: HTTP 500"):
        writer(api, total_s=1.0).publish(advice(4, 2), budget_s=60, force=False)
    assert api.get(NS, NAME) == before


def test_429_retry_after_is_honoured(api: FakeApiServer) -> None:
    sleeps: list[float] = []
    api.inject(429, times=1, retry_after="1")
    w = ConfigMapWriter(connect(api.kubeconfig), NAME, NS, policy=fast_policy(sleeps))
    assert w.read() is None
    assert sleeps == [1.0]  # the server's number, not our 0.02 s backoff
    assert [r.status for r in api.requests] == [429, 404]


def test_retry_after_beyond_the_deadline_gives_up_at_once(api: FakeApiServer) -> None:
    sleeps: list[float] = []
    api.inject(429, times=1, retry_after="120")
    w = ConfigMapWriter(connect(api.kubeconfig), NAME, NS, policy=fast_policy(sleeps))
    with pytest.raises(ClusterUnreachableError, match="server asked to retry after 120s"):
        w.read()
    assert sleeps == []


def test_a_retry_after_that_is_not_a_number_falls_back_to_our_backoff(
    api: FakeApiServer,
) -> None:
    sleeps: list[float] = []
    api.inject(429, times=1, retry_after="\u00b2")  # str.isdigit() says yes, float() says no
    w = ConfigMapWriter(connect(api.kubeconfig), NAME, NS, policy=fast_policy(sleeps))
    assert w.read() is None
    assert sleeps == [fast_policy([]).backoff(0)]


def test_conflict_from_a_concurrent_writer_is_retried(api: FakeApiServer) -> None:
    api.put(advice(1, 1))
    raced = []

    def race(server: FakeApiServer) -> None:
        if not raced:  # another client updates the object between our GET and our apply
            raced.append(True)
            other = server.get(NS, NAME)
            assert other is not None
            other["metadata"].setdefault("labels", {})["team"] = "search"
            server.put(other)

    api.before_write = race
    outcome = writer(api).publish(advice(4, 2), budget_s=60, force=False)
    stored = api.get(NS, NAME)
    assert outcome.conflicts_retried == 1 and stored is not None
    assert stored["data"]["TF_NUM_INTRAOP_THREADS"] == "4"
    assert stored["metadata"]["labels"]["team"] == "search"  # the other writer's field is kept
    assert [r.status for r in api.requests if r.method == "PATCH"] == [409, 200]


def test_endless_conflicts_end_in_conflict_error(api: FakeApiServer) -> None:
    api.put(advice(1, 1))
    bump = iter(range(1000))

    def race(server: FakeApiServer) -> None:
        other = server.get(NS, NAME)
        assert other is not None
        other["metadata"]["annotations"]["note"] = str(next(bump))
        server.put(other)

    api.before_write = race
    with pytest.raises(ConflictError, match="kept changing while writing"):
        writer(api, max_conflicts=2).publish(advice(4, 2), budget_s=60, force=False)
    stored = api.get(NS, NAME)
    assert stored is not None and stored["data"]["TF_NUM_INTRAOP_THREADS"] == "1"


def test_a_server_that_never_answers_does_not_hang(api: FakeApiServer) -> None:
    api.hang(times=1000)
    w = writer(api, total_s=1.5, request_timeout_s=0.4)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            w.publish(advice(), budget_s=60, force=False)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)  # a liveness bound 40x the policy, not a performance claim
    assert not thread.is_alive(), "publish hung on a server that never answers"
    assert len(errors) == 1 and isinstance(errors[0], ClusterUnreachableError)
    assert "no answer within" in str(errors[0])
    assert api.get(NS, NAME) is None


def test_connection_refused_is_unreachable(tmp_path: Path) -> None:
    port = refused_port()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    w = ConfigMapWriter(connect(kubeconfig), NAME, NS, policy=fast_policy(total_s=0.5))
    with pytest.raises(ClusterUnreachableError, match="cannot connect"):
        w.preflight(budget_s=60, force=False)


def test_missing_namespace_is_rejected_before_anything_runs(tmp_path: Path) -> None:
    with FakeApiServer(tmp_path, namespaces=("other",), configmap_name=NAME) as api:
        with pytest.raises(ClusterRejectedError, match="namespace ml not found"):
            writer(api).preflight(budget_s=60, force=False)


def test_invalid_object_is_rejected_with_422(api: FakeApiServer) -> None:
    bad = advice()
    bad["data"]["not a key"] = "1"
    with pytest.raises(ClusterRejectedError, match="HTTP 422"):
        writer(api).publish(bad, budget_s=60, force=False)
    assert api.get(NS, NAME) is None


def test_guard_keeps_advice_measured_with_a_bigger_budget(api: FakeApiServer) -> None:
    before = api.put(advice(1, 1, budget_s=300))
    w = writer(api)
    with pytest.raises(AdviceKeptError, match="300s budget, more than this run's 60s"):
        w.preflight(budget_s=60, force=False)
    with pytest.raises(AdviceKeptError, match=r"\(pass force=True to replace it\)"):
        w.publish(advice(4, 2), budget_s=60, force=False)
    assert api.get(NS, NAME) == before
    assert w.publish(advice(4, 2), budget_s=60, force=True).action == "updated"


def test_guard_keeps_a_configmap_not_written_by_the_advisor(api: FakeApiServer) -> None:
    foreign = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME, "namespace": NS}}
    foreign["data"] = {"TF_NUM_INTRAOP_THREADS": "8"}
    before = api.put(foreign)
    with pytest.raises(AdviceKeptError, match="not written by tf-thread-advisor"):
        writer(api).publish(advice(), budget_s=60, force=False)
    assert api.get(NS, NAME) == before
    assert writer(api).publish(advice(), budget_s=60, force=True).action == "updated"
    stored = api.get(NS, NAME)
    # forced apply takes over the key; the advisor's data wins
    assert stored is not None and stored["data"]["TF_NUM_INTRAOP_THREADS"] == "2"


def test_kubeconfig_problems_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        connect(tmp_path / "missing")
    broken = tmp_path / "broken"
    broken.write_text("apiVersion: v1\nkind: Config\n")
    with pytest.raises(UsageError, match="cannot load it"):
        connect(broken)


def test_the_data_changed_time_stays_while_the_values_do(api: FakeApiServer) -> None:
    """Re-measuring the same values must not make running pods look out of date; new values
    must. The time comes from the advice written, not from the clock of the writer."""
    from datetime import timedelta

    from advisor.keys import DATA_CHANGED_ANNOTATION
    from advisor.recommend import build_recommendation
    from testkit.fakeapi.samples import FIXED_NOW, calibration_result

    def at(intra: int, hours: int) -> dict[str, Any]:
        rec = build_recommendation(
            calibration_result(intra, 1),
            advisor_version="0.1.0",
            now=FIXED_NOW + timedelta(hours=hours),
        )
        return render_configmap(rec, NAME, NS)

    def stored_time() -> str:
        stored = api.get(NS, NAME)
        assert stored is not None
        return str(stored["metadata"]["annotations"][DATA_CHANGED_ANNOTATION])

    w = writer(api)
    w.publish(at(2, 0), budget_s=60, force=False)
    assert stored_time() == "2026-11-21T08:00:00Z"
    assert w.publish(at(2, 5), budget_s=60, force=False).action == "updated"  # provenance moved
    assert stored_time() == "2026-11-21T08:00:00Z"
    w.publish(at(3, 7), budget_s=60, force=False)
    assert stored_time() == "2026-11-21T15:00:00Z"
    # a stored time that does not parse is not carried over
    broken = api.get(NS, NAME)
    assert broken is not None
    broken["metadata"]["annotations"][DATA_CHANGED_ANNOTATION] = "yesterday"
    api.put(broken, manager="tf-thread-advisor")
    w.publish(at(3, 9), budget_s=60, force=True)
    assert stored_time() == "2026-11-21T17:00:00Z"
