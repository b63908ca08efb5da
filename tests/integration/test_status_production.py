"""``status --prometheus-url``: each consumer's production verdict, through the real CLI against
the strict fake API server and recorded Prometheus answers on loopback (testkit/fakeprom.py);
and every Prometheus fault leaving the rest of status as it was, with one warning line."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from advisor.keys import LATENCY_QUERY_ANNOTATION
from advisor.prometheus.queries import PERIODS, THROTTLED, USAGE
from testkit.fakeapi.pods import pod_of
from testkit.fakeapi.server import FakeApiServer, refused_port
from testkit.fakeprom import Answer, FakePrometheus, error, matrix, vector
from tests.integration.status_cli import json_rows, reader_rules, status
from tests.integration.test_status_consumers import MEASURED, advice_cm, deployment, reads

#: throttled share (before, after) per workload, as the recorded answers give it
THROTTLING = {"web-better": (0.41, 0.03), "web-worse": (0.05, 0.40), "web-same": (0.20, 0.22)}
#: p99 seconds (before points, after points) for the workload with a latency query
P99 = {"web-slow": ([0.100, 0.110, 0.122], [0.180, 0.190, 0.200])}
PERIODS_PER_WINDOW = 86400.0
CHANGED = MEASURED.timestamp()
LATENCY = 'p99_seconds{namespace="$namespace",deployment="$workload"}'


def recorded(endpoint: str, form: Mapping[str, str]) -> Answer:
    """Prometheus's answers for the workloads above: by the workload the query names and the
    side of data-changed-at it is evaluated at."""
    query = form["query"]
    if endpoint == "query_range":
        (name,) = [n for n in P99 if f'"{n}"' in query]
        points = P99[name][float(form["start"]) >= CHANGED]
        start = float(form["start"])
        return matrix(({}, [(start + 600 * i, v) for i, v in enumerate(points)]))
    names = [n for n in (*THROTTLING, *P99) if n in query]
    if not names:
        return vector()
    after = float(form["time"]) > CHANGED
    share = THROTTLING.get(names[0], (0.1, 0.1))[after]
    if query.startswith("avg_over_time") and USAGE in query:
        return vector(({}, 1.5 if after else 2.5))
    if THROTTLED in query:
        return vector(({}, share * PERIODS_PER_WINDOW))
    if PERIODS in query:
        return vector(({}, PERIODS_PER_WINDOW))
    return error(400, "bad_data", "unexpected query")


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
        found = productions(json_rows(capsys, api, "--prometheus-url", prom.url))
    assert {name: p["verdict"] for name, p in found.items()} == {
        "web-better": "improved",
        "web-worse": "regressed",
        "web-same": "unchanged",
        # throttling barely moved (10% both sides) but its own p99 rose beyond its spread
        "web-slow": "regressed",
    }
    assert found["web-better"] == {
        "verdict": "improved",
        "throttled_before": 0.41,
        "throttled_after": 0.03,
        "cpu_before": 2.5,
        "cpu_after": 1.5,
        "p99_before_ms": None,
        "p99_after_ms": None,
        "reason": "throttling 41% -> 3%: fell by more than 10 points",
    }
    assert (found["web-slow"]["p99_before_ms"], found["web-slow"]["p99_after_ms"]) == (110, 190)
    assert "above before 100-122 ms" in found["web-slow"]["reason"]


def test_the_queries_name_the_pods_and_the_windows(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakePrometheus(recorded) as prom:
        json_rows(capsys, api, "--prometheus-url", prom.url, "--window", "12h")
    instant = [r.form for r in prom.requests if r.endpoint == "query"]
    better = [f for f in instant if "web-better" in f["query"] and THROTTLED in f["query"]]
    # json_rows asks twice (JSON and YAML): the same two windows each time
    before, after = (
        min(better, key=lambda f: float(f["time"])),
        max(better, key=lambda f: float(f["time"])),
    )
    assert float(before["time"]) == pytest.approx(CHANGED)
    assert "[43200s]" in before["query"]  # the window asked for
    assert 'pod=~"web-better-' in before["query"]  # its live pod, by name
    assert (
        'kube_replicaset_owner{namespace="ml",owner_kind="Deployment",owner_name="web-better"}'
        in before["query"]
    )
    # after: once the pod started (an hour after the change) and warmed up (10 min)
    started = CHANGED + 3600 + 600
    assert float(after["time"]) == pytest.approx(started + 12 * 3600)
    latency = next(r.form for r in prom.requests if r.endpoint == "query_range")
    assert latency["query"] == 'p99_seconds{namespace="ml",deployment="web-slow"}'


def test_table_gains_a_production_column_only_with_prometheus(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, without, _ = status(capsys, api, "--namespace", "ml")
    assert code == 0 and "PRODUCTION" not in without
    code, as_json, _ = status(capsys, api, "--namespace", "ml", "--format", "json")
    assert "production" not in as_json
    with FakePrometheus(recorded) as prom:
        code, table, err = status(capsys, api, "--namespace", "ml", "--prometheus-url", prom.url)
        _, markdown, _ = status(
            capsys, api, "--namespace", "ml", "--prometheus-url", prom.url, "--format", "markdown"
        )
    assert (code, err) == (0, "")
    assert "PRODUCTION" in table
    assert "throttled 41% -> 3%: improved" in table
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
        if endpoint == "query_range":
            return error(400, "bad_data", 'parse error: unexpected identifier "deployment"')
        return recorded(endpoint, form)

    with FakePrometheus(answer) as prom:
        code, out, err = status(
            capsys, api, "--namespace", "ml", "--format", "json", "--prometheus-url", prom.url
        )
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


def test_csv_gains_the_production_figures_only_with_prometheus(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    import csv
    import io

    _, without, _ = status(capsys, api, "--namespace", "ml", "--format", "csv")
    assert "production_verdict" not in without
    with FakePrometheus(recorded) as prom:
        code, out, _ = status(
            capsys, api, "--namespace", "ml", "--format", "csv", "--prometheus-url", prom.url
        )
    assert code == 0
    lines = {r["consumer_name"]: r for r in csv.DictReader(io.StringIO(out))}
    assert lines["web-better"]["production_verdict"] == "improved"
    assert (lines["web-better"]["throttled_before"], lines["web-better"]["throttled_after"]) == (
        "0.41",
        "0.03",
    )
    assert lines["web-better"]["p99_before_ms"] == ""
    assert lines["web-slow"]["p99_after_ms"] == "190.0"


def test_the_environment_names_prometheus_when_the_flags_do_not(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakePrometheus(recorded) as prom:
        monkeypatch.setenv("TFTA_PROMETHEUS_URL", prom.url)
        monkeypatch.setenv("TFTA_PROMETHEUS_HEADERS", "X-Scope-OrgID=team-a,X-Extra=1")
        found = productions(json_rows(capsys, api, "--namespace", "ml"))
    assert found["web-better"]["verdict"] == "improved"
    assert {r.headers["x-scope-orgid"] for r in prom.requests} == {"team-a"}
    assert {r.headers["x-extra"] for r in prom.requests} == {"1"}
