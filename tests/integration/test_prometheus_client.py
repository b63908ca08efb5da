"""The Prometheus client over real HTTP against recorded answers (testkit/fakeprom.py): what it
sends, what it reads, and every fault ending in the error the callers tell apart."""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

import pytest

from advisor.prometheus import (
    PartialAnswer,
    PrometheusClient,
    PrometheusUnavailable,
    QueryRefused,
    QueryTimedOut,
    Settings,
)
from advisor.retry import RetryPolicy
from testkit.fakeapi.server import refused_port
from testkit.fakeprom import Answer, FakePrometheus, error, matrix, partial, vector

AT = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)


def fast(total_s: float = 1.0) -> RetryPolicy:
    return RetryPolicy(total_s=total_s, base_delay_s=0.01, max_delay_s=0.05, unreachable_s=0.5)


def client(url: str, **settings: object) -> PrometheusClient:
    return PrometheusClient(Settings(url=url, **settings), fast())  # type: ignore[arg-type]


def test_instant_query_sends_the_form_and_the_auth_and_reads_the_vector(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        return vector(({"pod": "web-1"}, 0.25), ({"pod": "web-2"}, float("nan")))

    with FakePrometheus(answer) as prom:
        got = client(
            prom.url + "/prefix/", token_file=token, headers={"X-Scope-OrgID": "team-a"}
        ).query('up{job="x"}', AT)
    (request,) = prom.requests
    assert request.path == "/prefix/api/v1/query"
    assert request.form == {
        "query": 'up{job="x"}',
        "time": f"{AT.timestamp():.3f}",
        "partial_response": "false",  # Thanos: an error rather than part of the stores
    }
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["x-scope-orgid"] == "team-a"
    assert [(s.labels, s.value) for s in got[:1]] == [({"pod": "web-1"}, 0.25)]
    assert got[1].value != got[1].value  # NaN read as NaN


def test_range_query_reads_the_matrix() -> None:
    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        assert endpoint == "query_range"
        assert form["step"] == "600"
        return matrix(({"le": "x"}, [(1.0, 0.1), (601.0, float("inf")), (1201.0, 0.3)]))

    with FakePrometheus(answer) as prom:
        (series,) = client(prom.url).query_range("q", AT, AT, 600)
    assert series.points[0] == (1.0, 0.1)
    assert series.points[1] == (601.0, float("inf"))  # as answered: the reader filters
    assert [at for at, _ in series.points] == [1.0, 601.0, 1201.0]


def test_a_busy_server_is_retried_until_it_answers() -> None:
    answers = [error(503, "unavailable", "overloaded"), (429, b"slow down")]

    def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
        return answers.pop(0) if answers else vector(({}, 1.0))

    with FakePrometheus(answer) as prom:
        got = client(prom.url).query("q", AT)
    assert [s.value for s in got] == [1.0]
    assert len(prom.requests) == 3


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ((401, b"Unauthorized"), "rejected the credentials (HTTP 401)"),
        ((403, b"Forbidden"), "refused access (HTTP 403)"),
        (error(503, "unavailable", "down for maintenance"), "HTTP 503: down for maintenance"),
        ((200, b"<html>login page</html>"), "did not answer as the Prometheus API does"),
        ((200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}'), "matrix"),
        ((404, b"404 page not found"), "HTTP 404"),
    ],
)
def test_what_makes_every_query_fail_is_unavailable(answer: Answer, words: str) -> None:
    with FakePrometheus(lambda endpoint, form: answer) as prom:
        with pytest.raises(
            PrometheusUnavailable, match=words.replace("(", r"\(").replace(")", r"\)")
        ):
            client(prom.url).query("q", AT)


def test_a_bad_query_is_refused_alone() -> None:
    refusal = error(400, "bad_data", 'parse error: unexpected "}"')
    with FakePrometheus(lambda endpoint, form: refusal) as prom:
        with pytest.raises(QueryRefused, match=r'HTTP 400.*unexpected "}"'):
            client(prom.url).query("q{", AT)
    assert len(prom.requests) == 1


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (
            partial(vector(), warnings=["No StoreAPIs matched"]),
            r"part of the data only \(No StoreAPIs",
        ),
        (partial(vector(), is_partial=True), r"part of the data only \(isPartial\)"),
    ],
)
def test_a_partial_answer_is_no_answer(answer: Answer, words: str) -> None:
    with FakePrometheus(lambda endpoint, form: answer) as prom:
        with pytest.raises(PartialAnswer, match=words):
            client(prom.url).query("q", AT)
        with pytest.raises(PartialAnswer):
            client(prom.url).query_range("q", AT, AT, 60)
    assert [r.form["partial_response"] for r in prom.requests] == ["false", "false"]


def test_promql_notes_in_warnings_are_not_a_partial_answer(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a CLI test earlier in the session may have configured the advisor's logger not to
    # propagate (advisor.cli._logging): caplog listens at the root
    monkeypatch.setattr(logging.getLogger("advisor"), "propagate", True)
    notes = [
        'PromQL info: metric might not be a counter, name does not end in _total: "x"',
        "PromQL warning: encountered a mix of histograms and floats",
    ]
    answer = partial(vector(({}, 1.0)), warnings=notes)
    with FakePrometheus(lambda endpoint, form: answer) as prom:
        with caplog.at_level(logging.DEBUG, logger="advisor.prometheus.client"):
            (sample,) = client(prom.url).query("x", AT)
    assert sample.value == 1.0
    assert "PromQL info: metric might not be a counter" in caplog.text
    both = partial(vector(), warnings=[notes[0], "No StoreAPIs matched"])
    with FakePrometheus(lambda endpoint, form: both) as prom:
        with pytest.raises(PartialAnswer, match=r"\(No StoreAPIs matched\)"):
            client(prom.url).query("x", AT)


def test_prometheus_own_timeout_is_this_querys_failure() -> None:
    timeout = error(503, "timeout", "query timed out in expression evaluation")
    with FakePrometheus(lambda endpoint, form: timeout) as prom:
        with pytest.raises(QueryTimedOut, match="timed out the query"):
            client(prom.url).query("q", AT)
    assert len(prom.requests) == 1  # not retried: it would time out again


def test_nothing_listening_is_given_up_within_the_unreachable_bound() -> None:
    started = time.monotonic()
    with pytest.raises(PrometheusUnavailable, match="cannot reach Prometheus"):
        client(f"http://127.0.0.1:{refused_port()}").query("q", AT)
    assert time.monotonic() - started < 3


def test_a_slow_server_costs_the_total_bound_not_forever() -> None:
    """Timed out: this query's failure (the reader tells a stalled server from a heavy query)."""
    with FakePrometheus(lambda endpoint, form: vector(), delay_s=1.0) as prom:
        started = time.monotonic()
        slow = PrometheusClient(Settings(url=prom.url, timeout_s=0.2), fast(total_s=0.6))
        with pytest.raises(QueryTimedOut, match="no answer within"):
            slow.query("q", AT)
    assert time.monotonic() - started < 2.5


def test_an_unreadable_token_file_is_unavailable(tmp_path: Path) -> None:
    with FakePrometheus(lambda endpoint, form: vector()) as prom:
        with pytest.raises(PrometheusUnavailable, match="cannot read the Prometheus token file"):
            client(prom.url, token_file=tmp_path / "nope").query("q", AT)
    assert prom.requests == []


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1, its own CA (openssl, as every Debian has it)."""
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("openssl is missing: it ships with every Debian the tests run on")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def test_https_is_trusted_through_the_ca_file_and_refused_without_it(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    with FakePrometheus(lambda endpoint, form: vector(({}, 2.0)), tls=(cert, key)) as prom:
        assert prom.url.startswith("https://")
        assert [s.value for s in client(prom.url, ca_file=cert).query("q", AT)] == [2.0]
        assert len(prom.requests) == 1
        with pytest.raises(PrometheusUnavailable, match="TLS certificate not trusted"):
            client(prom.url).query("q", AT)
    assert len(prom.requests) == 1  # the untrusted one never got as far as a request, once
