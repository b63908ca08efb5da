"""What ``plan --prometheus-url`` does with a regressed advice, through the fake API server and
recorded Prometheus answers: a revert takes the place of a calibration (unless the workload's spec
changed since the advice), one advice read by several workloads is judged from all of them,
``--max-reverts`` bounds a plan's reverts (exit 19), ``tf-thread-advisor.io/revert: "false"``
opts out, and each revert leaves an ``AdviceReverted`` Event with the figures."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from advisor import __version__
from advisor.keys import ANN_REVERT, PREVIOUS_ANNOTATION
from advisor.prometheus.queries import PERIODS, POD_START, THROTTLED
from advisor.recommend import build_recommendation, parse_configmap, render_configmap
from advisor.recommend.previous import keep_previous
from testkit.fakeapi.pods import pod_of
from testkit.fakeapi.samples import calibration_result, node_profile
from testkit.fakeapi.server import FakeApiServer
from testkit.fakeprom import Answer, FakePrometheus, matrix, ranged, vector
from tests.integration.test_plan import NS, PLANNER, advice_fitting, opted_in, plan, server
from tests.integration.test_plan_production import PRODUCTION

NOW = datetime.now(timezone.utc)
STEP_PERIODS = 3000.0
#: shorter than the time since the pods started: a full after-window, not provisional
#: two full windows since the pods started (20 h ago), the two a revert needs
WINDOW = ("--window", "8h")
#: the throttled share (before the advice, after it) of each workload's pods
WORSE, BETTER, SAME = (0.05, 0.40), (0.40, 0.05), (0.10, 0.10)
REVERTS_LIMITED = 19


def answers(shares: Mapping[str, tuple[float, float]], changed: float) -> Any:
    """Prometheus's answers: each workload's throttled share before and after ``changed`` at
    every step (found by the owner the query joins on), nothing throttled for the suggestions;
    kube-state-metrics there, with no pod start times."""

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        query = form["query"]
        if endpoint == "query":
            return vector(({}, 3.0)) if query.startswith("count(kube_pod_owner") else vector()
        found = re.search(r'kube_replicaset_owner\{[^}]*owner_name="([\w-]+)"', query)
        if found is None or found.group(1) not in shares or POD_START in query:
            return matrix()
        share = shares[found.group(1)]

        def value(t: float) -> float:
            if THROTTLED in query:
                return share[t > changed] * STEP_PERIODS
            return STEP_PERIODS if PERIODS in query else 1.0

        return ranged(form, value)

    return answer


def replacing(current: dict[str, Any], name: str) -> dict[str, Any]:
    """``current`` advice written over an older one (intra 4, inter 2), which it keeps."""
    old = build_recommendation(
        calibration_result(4, 2, node=node_profile(quota=2.0)),
        advisor_version=__version__,
        now=NOW - timedelta(days=9),
    )
    return keep_previous(current, render_configmap(old, name, NS))


def hand_written(name: str) -> dict[str, Any]:
    """An advice a hand-written target measured (no workload recorded), as every advice before
    fleet mode was."""
    rec = build_recommendation(
        calibration_result(node=node_profile(quota=2.0)),
        advisor_version=__version__,
        now=NOW - timedelta(days=1),
    )
    return render_configmap(rec, name, NS)


def deploy(api: FakeApiServer, obj: dict[str, Any]) -> None:
    api.put_workload(obj)
    api.put_pod(pod_of(obj, "a1", started=NOW - timedelta(hours=20)))


def worker(name: str, cpu: str = "2", reads: str | None = None, **ann: str) -> dict[str, Any]:
    """An opted-in Deployment ``name`` reading ``advice-<reads or name>``, serving that
    advice's image and model (the same shape as its first reader)."""
    served = reads or name
    container = server(served, cpu)
    model = {"tf-thread-advisor.io/model": f"/models/{served}"}
    return opted_in(name, container, **model, **ann)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(tmp_path, namespaces=(NS,), rules=[*PLANNER, *PRODUCTION]) as fake:
        yield fake


def regressed_advice(api: FakeApiServer, name: str) -> None:
    """``name``'s fitting advice, which replaced an older one."""
    api.put(replacing(advice_fitting(api, name), f"advice-{name}"), manager="tf-thread-advisor")


def changed_at(api: FakeApiServer, name: str) -> float:
    found = api.get(NS, f"advice-{name}")
    assert found is not None
    parsed = parse_configmap(found)
    assert parsed.data_changed_at is not None
    return parsed.data_changed_at.timestamp()


def json_plan(
    capsys: pytest.CaptureFixture[str],
    api: FakeApiServer,
    shares: Mapping[str, tuple[float, float]],
    changed: float,
    *argv: str,
) -> tuple[int, dict[str, dict[str, Any]], str]:
    with FakePrometheus(answers(shares, changed)) as prom:
        code, out, err = plan(
            capsys, api, "--format", "json", "--prometheus-url", prom.url, *WINDOW, *argv
        )
    return code, {row["workload"]: row for row in json.loads(out)["decisions"]}, err


def puts(api: FakeApiServer) -> list[Any]:
    return [r for r in api.requests if r.method == "PUT"]


def posted_jobs(api: FakeApiServer) -> list[str]:
    return [
        str(r.body["metadata"]["annotations"]["tf-thread-advisor.io/workload"])
        for r in api.requests
        if r.method == "POST" and r.path.endswith("/jobs") and r.status == 201
    ]


def test_a_revert_leaves_an_event_with_the_figures(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    deploy(api, worker("web"))
    regressed_advice(api, "web")
    changed = changed_at(api, "web")
    code, found, _ = json_plan(capsys, api, {"web": WORSE}, changed)
    assert (code, found["deployment/web"]["decision"]) == (0, "revert")
    assert api.events() == []  # nothing written, nothing told, without --apply
    code, found, err = json_plan(capsys, api, {"web": WORSE}, changed, "--apply")
    assert (code, err) == (0, "")
    assert found["deployment/web"]["reason"].endswith("; written back")
    (event,) = api.events()
    web = api.workload("deployments", NS, "web")
    assert web is not None
    assert event["reason"] == "AdviceReverted" and event["type"] == "Warning"
    assert event["involvedObject"]["uid"] == web["metadata"]["uid"]
    assert event["involvedObject"]["kind"] == "Deployment"
    assert event["message"].startswith(
        "advice reverted to the previous one (intra=4 inter=2, objective latency"
    )
    assert (
        "deployment/web (server): throttled 5% -> 40%, CPU 1.00 -> 1.00 cores per pod: "
        in (event["message"])
    )
    assert (
        "regressed (throttling 5% -> 40%: rose by more than 10 points; day t-test, 8 days: "
        "p<0.001 at level 0.05, 2/2 windows regressed)" in event["message"]
    )


def test_no_events_reverts_without_telling(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    deploy(api, worker("web"))
    regressed_advice(api, "web")
    code, found, _ = json_plan(
        capsys, api, {"web": WORSE}, changed_at(api, "web"), "--apply", "--no-events"
    )
    assert (code, found["deployment/web"]["decision"], len(puts(api))) == (0, "revert", 1)
    assert api.events() == []


def test_max_reverts_one_reverts_one_of_two_and_exits_19(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("one", "two"):
        deploy(api, worker(name))
        regressed_advice(api, name)
    shares = {"one": WORSE, "two": WORSE}
    code, found, err = json_plan(capsys, api, shares, changed_at(api, "one"), "--apply")
    assert code == REVERTS_LIMITED
    (line,) = err.strip().splitlines()
    assert "1 regressed advice not reverted: --max-reverts reached (ml/advice-two)" in line
    assert found["deployment/one"]["decision"] == "revert"
    two = found["deployment/two"]
    assert two["decision"] == "fits"
    assert two["reason"].endswith("not reverted: --max-reverts 1 reached")
    assert [r.path.rsplit("/", 1)[1] for r in puts(api)] == ["advice-one"]
    assert [e["involvedObject"]["name"] for e in api.events()] == ["one"]
    # the next plan: one has nothing left to go back to, two is reverted
    code, found, _ = json_plan(capsys, api, shares, changed_at(api, "two"), "--apply")
    assert (code, found["deployment/two"]["decision"], len(puts(api))) == (0, "revert", 2)


def test_a_preview_counts_the_limit_as_apply_would(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("one", "two", "three"):
        deploy(api, worker(name))
        regressed_advice(api, name)
    shares = {"one": WORSE, "two": WORSE, "three": WORSE}
    with FakePrometheus(answers(shares, changed_at(api, "one"))) as prom:
        code, table, _ = plan(
            capsys, api, "--prometheus-url", prom.url, "--max-reverts", "2", *WINDOW
        )
    assert code == REVERTS_LIMITED
    assert table.count("revert ") >= 2
    assert "1 regressed advice not reverted: --max-reverts reached (ml/advice-two)" in table
    assert "nothing was reverted: run again with --apply" in table
    assert puts(api) == []
    with FakePrometheus(answers(shares, changed_at(api, "one"))) as prom:
        code, _, _ = plan(capsys, api, "--prometheus-url", prom.url, "--max-reverts", "0", *WINDOW)
    assert code == REVERTS_LIMITED  # 0: none reverted, every regression shown


def test_a_workload_that_opts_out_keeps_its_advice_and_sees_the_verdict(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    deploy(api, worker("web", **{ANN_REVERT: "false"}))
    regressed_advice(api, "web")
    code, found, _ = json_plan(capsys, api, {"web": WORSE}, changed_at(api, "web"), "--apply")
    web = found["deployment/web"]
    assert (code, web["decision"]) == (0, "fits")
    assert "throttling 5% -> 40%: rose by more than 10 points" in web["reason"]
    assert web["reason"].endswith(
        'deployment/web opts out with annotation tf-thread-advisor.io/revert: "false"'
    )
    assert puts(api) == [] and api.events() == []


def test_a_bad_revert_annotation_is_skipped_naming_it(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    deploy(api, worker("web"))
    regressed_advice(api, "web")
    api.put_workload(worker("web", **{ANN_REVERT: "never"}))
    code, found, _ = json_plan(capsys, api, {"web": WORSE}, changed_at(api, "web"), "--apply")
    web = found["deployment/web"]
    assert (code, web["decision"]) == (0, "skipped")
    assert (
        'annotation tf-thread-advisor.io/revert=\'never\' must be "true" or "false"'
        in (web["reason"])
    )
    assert puts(api) == []


def test_a_hand_written_targets_regressed_advice_is_reverted_before_calibrating(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """plan would calibrate it (no workload recorded); the revert comes first, and the Job waits
    for the next plan, which calibrates."""
    deploy(api, worker("web"))
    api.put(replacing(hand_written("advice-web"), "advice-web"), manager="tf-thread-advisor")
    changed = changed_at(api, "web")
    code, found, _ = json_plan(capsys, api, {"web": WORSE}, changed, "--apply")
    web = found["deployment/web"]
    assert (code, web["decision"], web["job"]) == (0, "revert", None)
    assert (
        "calibrated by the next plan (the advice in advice-web was measured by a "
        in (web["reason"])
    )
    assert web["reason"].endswith("written back")
    assert posted_jobs(api) == [] and len(puts(api)) == 1
    code, found, _ = json_plan(capsys, api, {"web": WORSE}, changed, "--apply")
    assert (code, found["deployment/web"]["decision"]) == (0, "calibrate")
    assert posted_jobs(api) == ["deployment/web"] and len(puts(api)) == 1


def test_a_spec_changed_since_the_advice_is_calibrated_not_reverted(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    deploy(api, worker("web", cpu="2"))
    regressed_advice(api, "web")
    api.put_workload(worker("web", cpu="4"))  # its CPU limit changed after the advice
    code, found, _ = json_plan(capsys, api, {"web": WORSE}, changed_at(api, "web"), "--apply")
    web = found["deployment/web"]
    assert (code, web["decision"]) == (0, "calibrate")
    assert (
        "not reverted: its calibration spec changed since the advice (measured under a CPU "
        in (web["reason"])
    )
    assert "so before and after are not comparable: it is calibrated instead" in web["reason"]
    assert posted_jobs(api) == ["deployment/web"] and puts(api) == []


def test_a_shared_advice_is_judged_from_all_its_consumers(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """advice-web is read by web (opted in), api (opted in, same shape) and batch (not opted
    in): kept while any of them improved, reverted once (one write, an Event on each opted-in
    workload) when none did."""
    deploy(api, worker("alpha"))
    deploy(api, worker("beta", reads="alpha"))
    gamma = worker("gamma", reads="alpha")
    gamma["metadata"]["labels"] = {}
    deploy(api, gamma)
    regressed_advice(api, "alpha")
    changed = changed_at(api, "alpha")
    code, found, _ = json_plan(
        capsys, api, {"alpha": WORSE, "beta": SAME, "gamma": BETTER}, changed, "--apply"
    )
    alpha = found["deployment/alpha"]
    assert (code, alpha["decision"], found["deployment/beta"]["decision"]) == (0, "fits", "fits")
    assert (
        "production regressed on this advice for deployment/alpha (server) of its 3 "
        in (alpha["reason"])
    )
    assert alpha["reason"].endswith("kept: it improved for deployment/gamma (server)")
    assert puts(api) == []
    code, found, _ = json_plan(
        capsys, api, {"alpha": WORSE, "beta": SAME, "gamma": SAME}, changed, "--apply"
    )
    assert code == 0
    assert {found[w]["decision"] for w in ("deployment/alpha", "deployment/beta")} == {"revert"}
    assert "deployment/beta (server) unchanged" in found["deployment/alpha"]["reason"]
    assert len(puts(api)) == 1  # one ConfigMap, one write, one revert of the budget
    assert sorted(e["involvedObject"]["name"] for e in api.events()) == ["alpha", "beta"]


def test_a_negative_max_reverts_is_a_usage_error(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = plan(
        capsys, api, "--prometheus-url", "http://127.0.0.1:9", "--max-reverts", "-1"
    )
    assert code == 2
    assert "--max-reverts must be 0 or more" in err and len(err.strip().splitlines()) == 1
    assert api.requests == []


def test_a_calibration_written_meanwhile_wins_and_the_decision_stays_as_it_was(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The revert carries the resourceVersion plan read: a Job's advice written in between is
    kept (409), the decision is what it was, and its calibration is still started."""
    deploy(api, worker("web"))
    api.put(replacing(hand_written("advice-web"), "advice-web"), manager="tf-thread-advisor")
    changed = changed_at(api, "web")

    def a_job_writes_first(server: FakeApiServer) -> None:
        server.before_write = None
        newer = server.get(NS, "advice-web")
        assert newer is not None
        newer["metadata"]["annotations"]["note"] = "written by a calibration meanwhile"
        server.put(newer, manager="tf-thread-advisor")

    api.before_write = a_job_writes_first
    code, found, _ = json_plan(capsys, api, {"web": WORSE}, changed, "--apply")
    web = found["deployment/web"]
    assert (code, web["decision"]) == (0, "calibrate")
    said = "; not written: the ConfigMap changed since it was read (the next plan judges the "
    assert f"{said}new advice); created Job tfta-web-" in web["reason"]
    assert web["job"] is not None and posted_jobs(api) == ["deployment/web"]
    stored = api.get(NS, "advice-web")
    assert stored is not None and stored["metadata"]["annotations"]["note"]
    assert api.events()[0]["reason"] == "CalibrationStarted" and len(api.events()) == 1


def test_a_refused_write_back_keeps_the_advice_frees_its_slot_and_the_plan_goes_on(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API server refuses the first revert (422; 403 without update on configmaps is the
    same path): that decision says so, one warning line, and the --max-reverts slot it took goes
    to the next regressed advice, which is written back."""
    for name in ("one", "two"):
        deploy(api, worker(name))
        regressed_advice(api, name)
    api.inject(422, method="PUT")
    shares = {"one": WORSE, "two": WORSE}
    code, found, err = json_plan(capsys, api, shares, changed_at(api, "one"), "--apply")
    one, two = found["deployment/one"], found["deployment/two"]
    assert (code, one["decision"], two["decision"]) == (0, "fits", "revert")
    assert "; not written: " in one["reason"] and "the advice is kept" in one["reason"]
    assert two["reason"].endswith("; written back")
    (line,) = err.strip().splitlines()
    assert "not written back to ConfigMap advice-one" in line
    assert [r.path.rsplit("/", 1)[1] for r in puts(api) if r.status == 200] == ["advice-two"]


def test_a_kept_previous_advice_without_its_start_is_never_reverted_to(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing bounds the before-window without the previous advice's data-changed time: its
    pods may not have run it, so the verdict is unknown, saying so."""
    deploy(api, worker("web"))
    obj = replacing(advice_fitting(api, "web"), "advice-web")
    notes = obj["metadata"]["annotations"]
    kept = json.loads(notes[PREVIOUS_ANNOTATION])
    kept["data_changed_at"] = None
    notes[PREVIOUS_ANNOTATION] = json.dumps(kept)
    api.put(obj, manager="tf-thread-advisor")
    code, found, _ = json_plan(capsys, api, {"web": WORSE}, changed_at(api, "web"), "--apply")
    assert (code, found["deployment/web"]["decision"], puts(api)) == (0, "fits", [])
