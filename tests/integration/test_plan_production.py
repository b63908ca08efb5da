"""``plan --prometheus-url``: a fitting advice whose serving pods did worse is reverted (with
``--apply``, written back through the fake API server), containers not opted in but throttled
are suggested; and no revert is ever made on missing data. The planner runs with the Roles of
deploy/components/fleet and deploy/components/production; Prometheus answers are recorded
(testkit/fakeprom.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from advisor import __version__
from advisor.keys import PREVIOUS_ANNOTATION
from advisor.prometheus.queries import PERIODS, THROTTLED
from advisor.recommend import build_recommendation, parse_configmap, render_configmap
from advisor.recommend.previous import keep_previous, previous_advice, rejected_settings
from testkit.fakeapi.pods import pod_of
from testkit.fakeapi.rbac import load_documents, parse_rules
from testkit.fakeapi.samples import calibration_result, node_profile
from testkit.fakeapi.server import FakeApiServer, refused_port
from testkit.fakeprom import Answer, FakePrometheus, error, matrix, ranged, vector
from tests.integration.status_cli import status
from tests.integration.test_plan import NS, PLANNER, advice_fitting, plan, scene
from tests.support import REPO

PRODUCTION = parse_rules(
    next(
        d["rules"]
        for d in load_documents(REPO / "deploy/components/production/rbac.yaml")
        if d["kind"] == "Role"
    )
)
NOW = datetime.now(timezone.utc)
#: the throttled share (before, after) of each opted-in workload's pods
THROTTLING = {"a": (0.1, 0.1), "b": (0.1, 0.1), "c": (0.05, 0.40)}
#: per pod over the last window, for the suggestions: (throttled share)
BY_POD = {"d-5d8f7c9b6-a1": 0.50, "c-5d8f7c9b6-a1": 0.60, "gone-pod": 0.90}
PERIODS_PER_WINDOW = 86400.0
#: when the advice c's advice replaced had changed
PREVIOUS_CHANGED = NOW - timedelta(days=9)
STEP_PERIODS = 3000.0
#: shorter than the time since the pods started: a full after-window, not provisional
#: two full windows since the pods started (20 h ago), the two a revert needs
WINDOW = ("--window", "8h")


def recorded(changed: float, pods_started: float | None = None) -> Any:
    """Prometheus' answers for the planned namespace; ``pods_started``: when the pods of the
    before-window started (None: kube-state-metrics keeps no start times)."""
    if pods_started is None:
        pods_started = PREVIOUS_CHANGED.timestamp() + 60

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        query = form["query"]
        if query.startswith("sum by (pod, container)"):
            share = 1.0 if THROTTLED in query else 0.0
            return vector(
                *(
                    ({"pod": pod, "container": "server"}, PERIODS_PER_WINDOW * (t if share else 1))
                    for pod, t in BY_POD.items()
                )
            )
        if endpoint == "query":
            return vector(({}, 3.0)) if query.startswith("count(kube_pod_owner") else vector()
        if query.startswith("min(kube_pod_start_time"):
            # the pods of the before-window started when the previous advice took effect
            return ranged(form, lambda t: pods_started)
        found = re.search(r'kube_replicaset_owner\{[^}]*owner_name="(\w+)"', query)
        if found is None or found.group(1) not in THROTTLING:
            return matrix()
        shares = THROTTLING[found.group(1)]

        def value(t: float) -> float:
            share = shares[t > changed]
            if THROTTLED in query:
                return share * STEP_PERIODS
            return STEP_PERIODS if PERIODS in query else 1.0

        return ranged(form, value)

    return answer


def replaced_advice(api: FakeApiServer) -> dict[str, Any]:
    """c's fitting advice, written over an older one (intra 4, inter 2) that it keeps."""
    current = advice_fitting(api, "c")
    old_rec = build_recommendation(
        calibration_result(4, 2, node=node_profile(quota=2.0)),
        advisor_version=__version__,
        now=PREVIOUS_CHANGED,
    )
    return keep_previous(current, render_configmap(old_rec, "advice-c", NS))


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(tmp_path, namespaces=(NS,), rules=[*PLANNER, *PRODUCTION]) as fake:
        for obj in scene().values():
            fake.put_workload(obj)
            fake.put_pod(pod_of(obj, "a1", started=NOW - timedelta(hours=20)))
        fake.put(replaced_advice(fake), manager="tf-thread-advisor")
        yield fake


def stored(api: FakeApiServer) -> dict[str, Any]:
    found = api.get(NS, "advice-c")
    assert found is not None
    return found


def changed_at(api: FakeApiServer) -> float:
    parsed = parse_configmap(stored(api))
    assert parsed.data_changed_at is not None
    return parsed.data_changed_at.timestamp()


def json_plan(
    capsys: pytest.CaptureFixture[str], api: FakeApiServer, *argv: str
) -> tuple[dict[str, dict[str, Any]], str]:
    code, out, err = plan(capsys, api, "--format", "json", *WINDOW, *argv)
    assert code == 0, err
    return {row["workload"]: row for row in json.loads(out)["decisions"]}, err


def puts(api: FakeApiServer) -> list[Any]:
    return [r for r in api.requests if r.method == "PUT"]


def test_a_regressed_advice_is_reverted_and_throttled_containers_suggested(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakePrometheus(recorded(changed_at(api))) as prom:
        found, err = json_plan(capsys, api, "--prometheus-url", prom.url)
    assert err == ""
    c = found["deployment/c"]
    assert c["decision"] == "revert"
    assert "throttling 5% -> 40%: rose by more than 10 points" in c["reason"]
    assert "back to the previous advice (intra=4 inter=2" in c["reason"]
    d = found["deployment/d"]  # not opted in, throttled 50% > 25%
    assert (d["decision"], d["container"]) == ("suggested", "server")
    assert "throttled in 50% of its CFS periods over the last 8h" in d["reason"]
    assert [row["decision"] for row in found.values()].count("suggested") == 1  # not c, not gone
    assert puts(api) == []  # nothing written without --apply
    with FakePrometheus(recorded(changed_at(api))) as prom:
        code, table, _ = plan(capsys, api, "--prometheus-url", prom.url, *WINDOW)
    assert code == 0
    assert "nothing was reverted: run again with --apply" in table
    assert re.search(r"deployment/d\s+server\s+-\s+suggested", table)


def test_a_refused_suggestions_query_costs_the_suggestions_alone(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 422 (too many samples, say) on the namespace's throttling query is that query's
    failure: no suggestions there, one warning, and Prometheus is not called unavailable."""
    judged = recorded(changed_at(api))

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        if form["query"].startswith("sum by (pod, container)"):
            return error(422, "execution", "query processing would load too many samples")
        return judged(endpoint, form)

    with FakePrometheus(answer) as prom:
        found, err = json_plan(capsys, api, "--prometheus-url", prom.url)
    assert found["deployment/c"]["decision"] == "revert"
    assert "suggested" not in {row["decision"] for row in found.values()}
    (line,) = err.strip().splitlines()
    assert "no suggestions in namespace ml: " in line and "too many samples" in line
    assert "unavailable" not in err


def test_no_revert_where_the_before_window_did_not_run_the_previous_advice(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod of the before-window started before the previous advice took effect (no restart
    when it was written): what was measured is not what a revert restores."""
    stale = PREVIOUS_CHANGED.timestamp() - 3600
    with FakePrometheus(recorded(changed_at(api), pods_started=stale)) as prom:
        found, _ = json_plan(capsys, api, "--apply", "--prometheus-url", prom.url)
        code, out, _ = status(capsys, api, "--namespace", NS, "--format", "json",
                              "--prometheus-url", prom.url, *WINDOW)  # fmt: skip
    assert found["deployment/c"]["decision"] == "fits"
    assert puts(api) == []
    assert code == 0
    (production,) = [
        c["production"] for row in json.loads(out) for c in row["consumers"] if c["name"] == "c"
    ]
    assert (production["verdict"], production["cause"]) == ("unknown", "not-previous")
    assert "before the previous advice took effect" in production["reason"]


def test_apply_writes_the_previous_advice_back_once(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    regressed = stored(api)
    kept = previous_advice(regressed)
    assert kept is not None
    with FakePrometheus(recorded(changed_at(api))) as prom:
        found, _ = json_plan(capsys, api, "--prometheus-url", prom.url, "--apply")
        assert found["deployment/c"]["decision"] == "revert"
        assert found["deployment/c"]["reason"].endswith("; written back")
        back = stored(api)
        assert back["data"] == dict(kept.data)
        assert parse_configmap(back).recommendation.intra_op_threads == 4
        assert PREVIOUS_ANNOTATION not in back["metadata"]["annotations"]
        (rejected,) = rejected_settings(back)
        assert rejected["env"] == regressed["data"]
        assert rejected["target"]["workload"] == "deployment/c"
        # the next plan: nothing to go back to, and the pods predate the reverted advice
        again, _ = json_plan(capsys, api, "--prometheus-url", prom.url, "--apply")
    assert again["deployment/c"]["decision"] != "revert"
    assert len(puts(api)) == 1


@pytest.mark.parametrize("fault", ["unreachable", "no-data"])
def test_no_revert_on_missing_data(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    if fault == "unreachable":
        found, err = json_plan(
            capsys, api, "--apply", "--prometheus-url", f"http://127.0.0.1:{refused_port()}"
        )
        assert len(err.strip().splitlines()) == 1 and "cannot reach Prometheus" in err
    else:
        with FakePrometheus(lambda endpoint, form: vector()) as prom:
            found, err = json_plan(capsys, api, "--apply", "--prometheus-url", prom.url)
    assert found["deployment/c"]["decision"] == "fits"
    assert "suggested" not in {row["decision"] for row in found.values()}
    assert puts(api) == []


def test_a_regression_without_a_previous_advice_is_named_not_reverted(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put(advice_fitting(api, "c"), manager="tf-thread-advisor")
    with FakePrometheus(recorded(changed_at(api))) as prom:
        found, _ = json_plan(capsys, api, "--apply", "--prometheus-url", prom.url)
    c = found["deployment/c"]
    assert c["decision"] == "fits"
    assert c["reason"].endswith("but no previous advice is kept")
    assert puts(api) == []


def test_without_the_production_role_plan_goes_on_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeApiServer(tmp_path, namespaces=(NS,), rules=PLANNER) as fake:
        for obj in scene().values():
            fake.put_workload(obj)
        fake.put(replaced_advice(fake), manager="tf-thread-advisor")
        with FakePrometheus(recorded(changed_at(fake))) as prom:
            found, err = json_plan(capsys, fake, "--apply", "--prometheus-url", prom.url)
        assert found["deployment/c"]["decision"] == "fits"
        assert len(err.strip().splitlines()) == 1 and "production not judged" in err
        assert prom.requests == []


@pytest.mark.parametrize("value", ["0", "101", "lots"])
def test_a_bad_suggest_threshold_is_a_usage_error(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code, _, err = plan(
        capsys, api, "--prometheus-url", "http://127.0.0.1:9", "--suggest-throttled", value
    )
    assert code == 2
    assert "--suggest-throttled" in err and len(err.strip().splitlines()) == 1
    assert api.requests == []  # refused before the cluster is asked anything


def test_all_namespaces_judges_each_and_warns_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """plan -A under the cluster-scope ClusterRole without the production rules: every
    namespace's decisions as without Prometheus, one warning naming them all, no write."""
    from tests.integration import test_plan_all_namespaces as cluster

    with FakeApiServer(
        tmp_path,
        namespaces=(cluster.HOME, *cluster.SERVING),
        role_namespace=cluster.HOME,
        rules=PLANNER,
        cluster_rules=cluster.CLUSTER_PLANNER,
        service_account=cluster.PLANNER_SERVICE_ACCOUNT,
    ) as fake:
        for namespace in ("team-a", "team-b"):
            fake.put_namespace(namespace, cluster.OPT_IN)
            fake.put_service_account(namespace, cluster.DEFAULT_SERVICE_ACCOUNT)
            fake.put_workload(cluster.opted_in(namespace, cluster.SERVING[namespace]))
        with FakePrometheus(lambda endpoint, form: vector()) as prom:
            code, out, err = cluster.plan(
                capsys, fake, "-A", "--format", "json", "--prometheus-url", prom.url
            )
        assert code == 0, err
        rows = json.loads(out)["decisions"]
        assert {(d["namespace"], d["decision"]) for d in rows} == {
            ("team-a", "calibrate"),
            ("team-b", "calibrate"),
        }
        (line,) = err.strip().splitlines()
        assert "production not judged in team-a, team-b" in line
        assert prom.requests == []
        assert puts(fake) == []
