"""``status --prometheus-url``: each consumer's production verdict, through the real CLI against
the strict fake API server and recorded Prometheus answers on loopback (testkit/fakeprom.py);
and every Prometheus fault leaving the rest of status as it was, with one warning line."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.keys import LATENCY_QUERY_ANNOTATION, LOAD_QUERY_ANNOTATION
from advisor.prometheus.queries import PERIODS, POD_START, THROTTLED, USAGE
from testkit.fakeapi.pods import pod_of
from testkit.fakeapi.server import FakeApiServer, refused_port
from testkit.fakeprom import Answer, FakePrometheus, error, matrix, partial, ranged, vector
from tests.integration.status_cli import json_rows, reader_rules, status
from tests.integration.test_status_consumers import MEASURED, advice_cm, deployment, reads

#: throttled share (before, after) per workload, as the recorded answers give it
THROTTLING = {"web-better": (0.41, 0.03), "web-worse": (0.05, 0.40), "web-same": (0.20, 0.22)}
#: p99 seconds (before points, after points) for the workload with a latency query, in turn
P99 = {"web-slow": ([0.100, 0.110, 0.122], [0.180, 0.190, 0.200])}
#: 100 ms CFS periods in a 5-minute step of a container that always has work
STEP_PERIODS = 3000.0
CHANGED = MEASURED.timestamp()
LATENCY = 'p99_seconds{namespace="$namespace",deployment="$workload"}'
#: shorter than the time since the pods started: a full after-window, not provisional
WINDOW = ("--window", "12h")


def recorded(endpoint: str, form: Mapping[str, str]) -> Answer:
    """Prometheus's answers for the workloads above: by the workload the query names and the
    side of data-changed-at each step falls on; kube-state-metrics is there."""
    query = form["query"]
    if endpoint == "query":
        return (
            vector(({}, 4.0)) if query.startswith("count(kube_pod_owner{namespace=") else vector()
        )
    names = [n for n in (*THROTTLING, *P99) if f'"{n}"' in query]
    if not names or POD_START in query:
        # no start times: the live pods' rollout places the windows
        return matrix()
    name = names[0]

    def value(t: float) -> float:
        after = t > CHANGED
        if query.startswith("p99_seconds"):
            points = P99[name][after]
            return points[int(t // 300) % len(points)]
        if USAGE in query:
            return 1.5 if after else 2.5
        share = THROTTLING.get(name, (0.1, 0.1))[after]
        return share * STEP_PERIODS if THROTTLED in query else STEP_PERIODS

    if not query.startswith("p99_seconds") and not any(
        m in query for m in (USAGE, THROTTLED, PERIODS)
    ):
        return error(400, "bad_data", "unexpected query")
    return ranged(form, value)


def serving(api: FakeApiServer, name: str, **annotations: str) -> None:
    """A Deployment reading the advice, with one pod started an hour after its data changed."""
    obj = deployment(name, reads(cpu="4"), metadata={"annotations": annotations})
    api.put_workload(obj)
    api.put_pod(pod_of(obj, "a1", started=MEASURED + timedelta(hours=1)))


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(
        tmp_path, namespaces=("ml",), rules=reader_rules("Role"), role_namespace="ml"
    ) as server:
        server.put(advice_cm())
        for name in THROTTLING:
            serving(server, name)
        serving(server, "web-slow", **{LATENCY_QUERY_ANNOTATION: LATENCY})
        yield server


def productions(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    (row,) = rows
    return {c["name"]: c["production"] for c in row["consumers"]}


def test_verdicts_and_figures_per_consumer(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakePrometheus(recorded) as prom:
        found = productions(json_rows(capsys, api, "--prometheus-url", prom.url, *WINDOW))
    assert {name: p["verdict"] for name, p in found.items()} == {
        "web-better": "improved",
        "web-worse": "regressed",
        # a steady 2 points: the rank test sees it, the effect size does not count it
        "web-same": "unchanged",
        # throttling barely moved (10% both sides) but its own p99 rose
        "web-slow": "regressed",
    }
    better = found["web-better"]
    assert better["p_value"] <= 0.05
    assert better == {
        "verdict": "improved",
        "throttled_before": 0.41,
        "throttled_after": 0.03,
        "cpu_before": 2.5,
        "cpu_after": 1.5,
        "p99_before_ms": None,
        "p99_after_ms": None,
        "load_before": None,
        "load_after": None,
        "provisional": False,
        "cause": "throttling",
        "p_value": better["p_value"],
        "reason": "throttling 41% -> 3%: fell by more than 10 points",
        # the evidence: every earlier day the same share, so any move lies beyond them
        "test": "day-t",
        "alpha": 0.05,
        "days": 14,
        "window": better["window"],
        "regressed_windows": 0,
    }
    # the pods started 23 h ago: one 12 h window full, the second within the slack of its end
    assert better["window"] == 2
    slow = found["web-slow"]
    assert (slow["p99_before_ms"], slow["p99_after_ms"], slow["cause"]) == (110, 190, "p99")
    assert slow["reason"].startswith("p99 190 ms vs 110 ms before: +73%")
    assert "web-same" in found and "within 10 points" in found["web-same"]["reason"]


def test_a_short_after_window_is_provisional_and_says_so(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pods started 23 hours ago: a 30h window is not full yet (a 24h one is, within the
    slack a nightly plan needs)."""
    with FakePrometheus(recorded) as prom:
        found = productions(json_rows(capsys, api, "--prometheus-url", prom.url, "--window", "30h"))
        code, table, _ = status(
            capsys, api, "--namespace", "ml", "--prometheus-url", prom.url, "--window", "30h"
        )
    worse = found["web-worse"]
    assert (worse["verdict"], worse["provisional"]) == ("regressed", True)
    # 22.8 h when the module was imported; more as the session runs on
    assert re.match(
        r"provisional \(2[23]\.\d h of the 30\.0 h after-window so far\): ", worse["reason"]
    )
    assert code == 0 and "throttled 5% -> 40%: regressed, provisional (2" in table


def test_the_warm_up_moves_the_windows_after_the_rollout(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pods started 23 hours ago. Warmed up for 10 minutes, two 12h windows followed; for 13
    hours, one (the 10 h since it is within its slack, a quarter of it: full)."""
    with FakePrometheus(recorded) as prom:
        default = productions(json_rows(capsys, api, "--prometheus-url", prom.url, *WINDOW))
        long = productions(
            json_rows(capsys, api, "--prometheus-url", prom.url, *WINDOW, "--warm-up", "13h")
        )
    assert (default["web-better"]["window"], long["web-better"]["window"]) == (2, 1)
    assert long["web-better"]["verdict"] == "improved" and not long["web-better"]["provisional"]


def test_the_queries_name_the_pods_and_the_windows(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakePrometheus(recorded) as prom:
        json_rows(capsys, api, "--prometheus-url", prom.url, "--window", "12h")
    ranges = [r.form for r in prom.requests if r.endpoint == "query_range"]
    assert {f["partial_response"] for f in ranges} == {"false"}
    assert {f["step"] for f in ranges} == {"300"}
    better = [f for f in ranges if "web-better" in f["query"] and THROTTLED in f["query"]]
    # json_rows asks twice (JSON and YAML): the same two spans each time
    before, after = (
        min(better, key=lambda f: float(f["start"])),
        max(better, key=lambda f: float(f["start"])),
    )
    # after: once the pod started (an hour after the change) and warmed up (10 min), two 12 h
    # windows one after the other, the second cut at now (within the slack of its end)
    started = CHANGED + 3600 + 600
    assert float(after["start"]) == pytest.approx(started)
    assert float(after["end"]) == pytest.approx(time.time(), abs=600)
    # before: each window's hours on the 14 days before the change: the first window's two
    # days back is the newest (a day back would end after the change), 15 days back the oldest
    day = 86400
    assert float(before["start"]) == pytest.approx(started + 12 * 3600 - 15 * day)
    assert float(before["end"]) == pytest.approx(started + 12 * 3600 - day)
    assert "[300s]" in before["query"] and "[43200s]" not in before["query"]
    assert 'pod=~"web-better-' in before["query"]  # its live pod, by name
    assert (
        'kube_replicaset_owner{namespace="ml",owner_kind="Deployment",owner_name="web-better"}'
        in before["query"]
    )
    latency = next(f for f in ranges if f["query"].startswith("p99_seconds"))
    assert latency["query"] == 'p99_seconds{namespace="ml",deployment="web-slow"}'
    instant = [r.form["query"] for r in prom.requests if r.endpoint == "query"]
    # kube-state-metrics checked once per run for the namespace
    assert instant == ['count(kube_pod_owner{namespace="ml"})'] * 2


def test_table_gains_a_production_column_only_with_prometheus(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, without, _ = status(capsys, api, "--namespace", "ml")
    assert code == 0 and "PRODUCTION" not in without
    code, as_json, _ = status(capsys, api, "--namespace", "ml", "--format", "json")
    assert "production" not in as_json
    with FakePrometheus(recorded) as prom:
        code, table, err = status(
            capsys, api, "--namespace", "ml", "--prometheus-url", prom.url, *WINDOW
        )
        _, markdown, _ = status(
            capsys, api, "--namespace", "ml", "--prometheus-url", prom.url, "--format", "markdown",
            *WINDOW,
        )  # fmt: skip
    assert (code, err) == (0, "")
    assert "PRODUCTION" in table
    assert "throttled 41% -> 3%: improved (day t-test, 14 days: p<0.001 at level 0.05)" in table
    assert "throttled 10% -> 10%, p99 110 -> 190 ms: regressed" in table
    assert "throttled 41% -\\> 3%: improved" in markdown  # ">" escaped for Markdown


FAULTS = {
    "401": (401, b"Unauthorized"),
    "403": (403, b"Forbidden"),
    "503": error(503, "unavailable", "TSDB not ready"),
    "garbage": (200, b"\x00\xffnot json"),
}


@pytest.mark.parametrize("fault", [*FAULTS, "unreachable", "slow"])
def test_a_prometheus_fault_leaves_status_whole_with_one_warning(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    argv = ["--namespace", "ml", "--format", "json", "--prometheus-timeout", "0.3"]
    if fault == "unreachable":
        code, out, err = status(
            capsys, api, *argv, "--prometheus-url", f"http://127.0.0.1:{refused_port()}"
        )
    else:
        delay = 2.0 if fault == "slow" else 0.0
        answer = FAULTS.get(fault, vector())
        with FakePrometheus(lambda endpoint, form: answer, delay_s=delay) as prom:
            code, out, err = status(capsys, api, *argv, "--prometheus-url", prom.url)
        # asked until it was known to be unavailable, then never again
        assert len({r.form["query"] for r in prom.requests}) == 1
    assert code == 0
    found = productions(json.loads(out))
    assert set(found) == {*THROTTLING, "web-slow"}  # every consumer still listed
    assert {p["verdict"] for p in found.values()} == {"unknown"}
    reasons = {p["reason"] for p in found.values()}
    assert len(reasons) == 1 and "Prometheus unavailable" in reasons.pop()
    warnings = [line for line in err.splitlines() if line.strip()]
    assert len(warnings) == 1, err
    assert "production verdicts are unknown" in warnings[0]


def test_a_refused_latency_query_affects_its_workload_alone(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        if form["query"].startswith("p99_seconds"):
            return error(400, "bad_data", 'parse error: unexpected identifier "deployment"')
        return recorded(endpoint, form)

    with FakePrometheus(answer) as prom:
        code, out, err = status(
            capsys, api, "--namespace", "ml", "--format", "json", "--prometheus-url", prom.url,
            *WINDOW,
        )  # fmt: skip
    assert code == 0
    found = productions(json.loads(out))
    assert found["web-slow"]["verdict"] == "unknown"
    assert re.search(
        r"the latency query failed: .*HTTP 400.*unexpected identifier", found["web-slow"]["reason"]
    )
    # what was read is still shown: the throttling of both windows
    assert (found["web-slow"]["throttled_before"], found["web-slow"]["throttled_after"]) == (
        0.1,
        0.1,
    )
    assert [found[n]["verdict"] for n in THROTTLING] == ["improved", "regressed", "unchanged"]
    assert "deployment/web-slow" in err and len(err.strip().splitlines()) == 1


def test_latency_placeholders_are_escaped(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    obj = deployment("web-q", reads(cpu="4"))
    obj["metadata"]["annotations"] = {LATENCY_QUERY_ANNOTATION: 'x{c="$container",w="$workload"}'}
    obj["spec"]["template"]["spec"]["containers"][0]["name"] = "server"
    api.put_workload(obj)
    api.put_pod(pod_of(obj, "a1", started=MEASURED + timedelta(hours=1)))
    with FakePrometheus(recorded) as prom:
        status(capsys, api, "--namespace", "ml", "--prometheus-url", prom.url)
    asked = [r.form["query"] for r in prom.requests if r.endpoint == "query_range"]
    assert 'x{c="server",w="web-q"}' in asked


def test_bad_prometheus_flags_are_usage_errors(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = status(capsys, api, "--prometheus-url", "prometheus:9090")
    assert code == 2 and "--prometheus-url 'prometheus:9090': must start with http" in err
    code, _, err = status(
        capsys, api, "--prometheus-url", "http://p", "--prometheus-token-file", str(tmp_path / "t")
    )
    assert code == 2 and "--prometheus-token-file" in err and "no such file" in err
    code, _, err = status(capsys, api, "--prometheus-header", "X-Scope-OrgID=a")
    assert code == 2 and "need --prometheus-url" in err
    code, _, err = status(capsys, api, "--no-consumers", "--prometheus-url", "http://p:9090")
    assert code == 2 and "--no-consumers and --prometheus-url exclude each other" in err
    code, _, err = status(capsys, api, "--prometheus-url", "http://p:9090", "--window", "4m")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--window 4m: must be at least 5m, the queries' step" in err


def test_csv_gains_the_production_figures_only_with_prometheus(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    import csv
    import io

    _, without, _ = status(capsys, api, "--namespace", "ml", "--format", "csv")
    assert "production_verdict" not in without
    with FakePrometheus(recorded) as prom:
        code, out, _ = status(
            capsys, api, "--namespace", "ml", "--format", "csv", "--prometheus-url", prom.url,
            *WINDOW,
        )  # fmt: skip
    assert code == 0
    lines = {r["consumer_name"]: r for r in csv.DictReader(io.StringIO(out))}
    assert lines["web-better"]["production_verdict"] == "improved"
    assert (lines["web-better"]["throttled_before"], lines["web-better"]["throttled_after"]) == (
        "0.41",
        "0.03",
    )
    assert lines["web-better"]["p99_before_ms"] == ""
    assert lines["web-slow"]["p99_after_ms"] == "190.0"
    assert (
        lines["web-better"]["production_cause"],
        lines["web-better"]["production_provisional"],
    ) == (
        "throttling",
        "False",
    )
    # the evidence, as the JSON has it
    better = lines["web-better"]
    assert [better[f"production_{k}"] for k in ("test", "alpha", "days", "regressed_windows")] == [
        "day-t",
        "0.05",
        "14",
        "0",
    ]


def test_the_environment_names_prometheus_when_the_flags_do_not(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakePrometheus(recorded) as prom:
        monkeypatch.setenv("TFTA_PROMETHEUS_URL", prom.url)
        monkeypatch.setenv("TFTA_PROMETHEUS_HEADERS", "X-Scope-OrgID=team-a,X-Extra=1")
        monkeypatch.setenv("TFTA_PROMETHEUS_SELECTOR", 'cluster="prod-eu"')
        found = productions(json_rows(capsys, api, "--namespace", "ml", *WINDOW))
    assert found["web-better"]["verdict"] == "improved"
    # every query the advisor writes; the latency query is the workload's own
    assert all(
        'cluster="prod-eu"' in r.form["query"]
        for r in prom.requests
        if not r.form["query"].startswith("p99_seconds")
    )
    assert {r.headers["x-scope-orgid"] for r in prom.requests} == {"team-a"}
    assert {r.headers["x-extra"] for r in prom.requests} == {"1"}


@pytest.mark.parametrize("how", ["warnings", "isPartial"])
def test_a_partial_answer_is_that_consumers_unknown(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """Thanos with a store down answers with ``warnings``, VictoriaMetrics with ``isPartial``:
    the consumer whose query got such an answer is unknown, saying so; the rest are judged."""

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        whole = recorded(endpoint, form)
        if '"web-worse"' not in form["query"]:
            return whole
        if how == "warnings":
            return partial(whole, warnings=["No StoreAPIs matched for this query"])
        return partial(whole, is_partial=True)

    with FakePrometheus(answer) as prom:
        code, out, err = status(
            capsys, api, "--namespace", "ml", "--format", "json", "--prometheus-url", prom.url,
            *WINDOW,
        )  # fmt: skip
    assert (code, err) == (0, "")
    found = productions(json.loads(out))
    worse = found["web-worse"]
    assert (worse["verdict"], worse["cause"]) == ("unknown", "partial-answer")
    said = "No StoreAPIs matched" if how == "warnings" else "isPartial"
    assert (
        worse["reason"].startswith("Prometheus answered part of the data only")
        and said in (worse["reason"])
    )
    assert found["web-better"]["verdict"] == "improved"


def test_a_refused_or_timed_out_query_is_that_consumers_unknown(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """422 for one workload's queries, Prometheus' own timeout (503 ``timeout``) for another's:
    those two are unknown, the others judged, Prometheus asked on."""

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        if '"web-worse"' in form["query"]:
            return error(422, "execution", "query processing would load too many samples")
        if '"web-same"' in form["query"]:
            return error(503, "timeout", "query timed out in expression evaluation")
        return recorded(endpoint, form)

    with FakePrometheus(answer) as prom:
        code, out, err = status(
            capsys, api, "--namespace", "ml", "--format", "json", "--prometheus-url", prom.url,
            *WINDOW,
        )  # fmt: skip
    assert (code, err) == (0, "")
    found = productions(json.loads(out))
    assert (found["web-worse"]["verdict"], found["web-worse"]["cause"]) == (
        "unknown",
        "query-failed",
    )
    assert (
        "HTTP 422" in found["web-worse"]["reason"]
        and "too many samples" in found["web-worse"]["reason"]
    )
    assert (found["web-same"]["verdict"], found["web-same"]["cause"]) == ("unknown", "query-failed")
    assert "timed out" in found["web-same"]["reason"]
    assert (found["web-better"]["verdict"], found["web-slow"]["verdict"]) == (
        "improved",
        "regressed",
    )


def test_load_that_doubled_is_unknown_naming_it(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    obj = deployment("web-busy", reads(cpu="4"))
    obj["metadata"]["annotations"] = {
        LOAD_QUERY_ANNOTATION: 'sum(rate(requests{w="$workload"}[5m]))'
    }
    api.put_workload(obj)
    api.put_pod(pod_of(obj, "a1", started=MEASURED + timedelta(hours=1)))

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        if form["query"].startswith("sum(rate(requests"):
            return ranged(form, lambda t: 200.0 if t > CHANGED else 100.0)
        if '"web-busy"' in form["query"]:
            return recorded(
                endpoint, {**form, "query": form["query"].replace("web-busy", "web-worse")}
            )
        return recorded(endpoint, form)

    with FakePrometheus(answer) as prom:
        found = productions(json_rows(capsys, api, "--prometheus-url", prom.url, *WINDOW))
        _, table, _ = status(
            capsys, api, "--namespace", "ml", "--prometheus-url", prom.url, *WINDOW
        )
    busy = found["web-busy"]
    assert (busy["verdict"], busy["cause"]) == ("unknown", "load-changed")
    assert busy["reason"].startswith("load changed: 100 -> 200 req/s")
    assert (busy["load_before"], busy["load_after"]) == (100.0, 200.0)
    assert busy["throttled_after"] == 0.4  # shown, not judged
    assert "throttled 5% -> 40%, load 100 -> 200 req/s: unknown (load changed" in table


@pytest.mark.parametrize(
    ("answers", "words"),
    [
        ({}, "no kube_pod_owner series"),
        ({"exported_namespace": 3.0}, "renamed exported_namespace"),
    ],
)
def test_kube_state_metrics_that_do_not_join_are_named_once(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], answers: dict[str, float], words: str
) -> None:
    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        query = form["query"]
        if endpoint == "query":
            hit = [v for label, v in answers.items() if f"{{{label}=" in query]
            return vector(({}, hit[0])) if hit else vector()
        # no gone pods can be found: before the advice there is nothing
        return recorded(endpoint, form) if float(form["start"]) > CHANGED else matrix()

    with FakePrometheus(answer) as prom:
        code, out, err = status(
            capsys, api, "--namespace", "ml", "--format", "json", "--prometheus-url", prom.url,
            *WINDOW,
        )  # fmt: skip
    assert code == 0
    (line,) = err.strip().splitlines()
    assert "kube-state-metrics" in line and words in line and "namespace ml" in line
    found = productions(json.loads(out))
    assert found["web-better"]["cause"] == "too-little-data"
    assert words in found["web-better"]["reason"]


def test_a_bad_selector_is_a_usage_error(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = status(
        capsys, api, "--prometheus-url", "http://p:9090", "--prometheus-selector", "cluster=prod-eu"
    )
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--prometheus-selector 'cluster=prod-eu': not a label matcher" in err
    code, _, err = status(capsys, api, "--prometheus-selector", 'cluster="a"')
    assert code == 2 and "need --prometheus-url" in err


def test_one_consumers_slow_query_is_its_unknown_alone(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Prometheus answers every query but web-same's in time (a heavy query, not a stalled
    server): web-same is unknown, the others judged, and no warning says Prometheus is down."""

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        if '"web-same"' in form["query"]:
            time.sleep(1.0)
        return recorded(endpoint, form)

    with FakePrometheus(answer) as prom:
        code, out, err = status(
            capsys, api, "--namespace", "ml", "--format", "json", "--prometheus-url", prom.url,
            "--prometheus-timeout", "0.3", *WINDOW,
        )  # fmt: skip
    assert (code, err) == (0, "")
    found = productions(json.loads(out))
    same = found["web-same"]
    assert (same["verdict"], same["cause"]) == ("unknown", "query-failed")
    assert same["reason"].startswith("a query timed out: ")
    assert (found["web-better"]["verdict"], found["web-worse"]["verdict"]) == (
        "improved",
        "regressed",
    )


def _latency_only(series: int, negative: bool = False) -> Any:
    """``recorded``, web-slow's latency query answering ``series`` series (``negative``: every
    fourth step below zero, as a deriv() may give), its container without a CPU limit (no CFS
    periods)."""

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        query = form["query"]
        if '"web-slow"' in query and not query.startswith("p99_seconds"):
            return matrix() if endpoint == "query_range" else recorded(endpoint, form)
        found = recorded(endpoint, form)
        if not query.startswith("p99_seconds"):
            return found
        one = json.loads(found[1])["data"]["result"][0]["values"]
        points = [
            (float(t), -0.5 if negative and int(float(t)) // 300 % 4 == 0 else float(v))
            for t, v in one
        ]
        return matrix(*(({"pod": f"p{i}"}, points) for i in range(series)))

    return answer


def test_a_latency_query_giving_several_series_is_unknown(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Latencies do not add up: two series (one per pod) summed would double the p99."""
    with FakePrometheus(_latency_only(2)) as prom:
        code, out, err = status(
            capsys, api, "--namespace", "ml", "--format", "json", "--prometheus-url", prom.url,
            *WINDOW,
        )  # fmt: skip
    slow = productions(json.loads(out))["web-slow"]
    assert (code, slow["verdict"]) == (0, "unknown")
    assert "the latency query failed: the query gave 2 series; it must give one" in slow["reason"]
    assert "web-slow: the query gave 2 series" in err and len(err.strip().splitlines()) == 1


def test_negative_samples_are_dropped_and_no_cpu_limit_needs_none(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """No CFS periods (no CPU limit): the latency samples decide; a negative one is no sample."""
    with FakePrometheus(_latency_only(1, negative=True)) as prom:
        found = productions(json_rows(capsys, api, "--prometheus-url", prom.url, *WINDOW))
    slow = found["web-slow"]
    assert (slow["verdict"], slow["cause"]) == ("regressed", "p99")
    asked = [r.form for r in prom.requests if r.form.get("query", "").startswith("p99_seconds")]
    # json_rows runs status twice (json, yaml): each reads the earlier days and the after span
    starts = sorted({float(f["start"]) for f in asked})
    assert (len(asked), len(starts)) == (4, 2)
    assert starts[1] - starts[0] == pytest.approx(timedelta(days=15, hours=-12).total_seconds())


def test_a_load_query_giving_negative_values_leaves_them_out(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deriv() load query below zero throughout: no samples (the figures are >= 0), so the
    load is missing, never a validation traceback."""
    serving(api, "web-load", **{LOAD_QUERY_ANNOTATION: 'rps{deployment="$workload"}'})

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        if form["query"].startswith("rps{"):
            return ranged(form, lambda t: -1.0)
        return recorded(endpoint, form)

    with FakePrometheus(answer) as prom:
        found = productions(json_rows(capsys, api, "--prometheus-url", prom.url, *WINDOW))
    load = found["web-load"]
    assert (load["verdict"], load["cause"], load["load_before"]) == (
        "unknown",
        "load-missing",
        None,
    )
