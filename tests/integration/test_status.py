"""``status``: every advice ConfigMap, through the real CLI against the strict fake API server,
authorized by the read-only Role and ClusterRole of deploy/examples/advice-reader.yaml."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from advisor import __version__, errors
from advisor.keys import PROVENANCE_ANNOTATION
from advisor.models import NearBest, NearBestRange, Recommendation
from advisor.models.times import format_age, parse_duration
from advisor.pipeline.status import advice_status
from advisor.recommend import build_recommendation, render_configmap
from advisor.recommend.stored import StoredAdvice
from advisor.render.status import status_table
from testkit.fakeapi.samples import calibration_result
from testkit.fakeapi.server import FakeApiServer
from tests.integration.status_cli import json_rows, reader_rules, status

NOW = datetime.now(timezone.utc).replace(microsecond=0)


def advice(
    intra: int, inter: int, *, days_old: float = 1, advisor: str = __version__, tf: str = "2.21.0"
) -> Recommendation:
    result = calibration_result(intra, inter).model_copy(update={"tf_version": tf})
    return build_recommendation(
        result,
        advisor_version=advisor,
        node_labels={"pool": "cpu-a"},
        now=NOW - timedelta(days=days_old),
    )


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(
        tmp_path, namespaces=("ml", "web"), rules=reader_rules("Role"), role_namespace="ml"
    ) as server:
        server.put(render_configmap(advice(3, 2), "tf-advice", "ml"))
        server.put(render_configmap(advice(2, 1, days_old=40), "old-advice", "ml"))
        server.put(render_configmap(advice(4, 1, advisor="0.0.9", tf="2.15.0"), "moved", "ml"))
        broken = render_configmap(advice(2, 2), "broken", "ml")
        broken["data"]["TF_NUM_INTRAOP_THREADS"] = "7"  # edited by hand: the hash no longer fits
        server.put(broken)
        server.put(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "unrelated", "namespace": "ml"},
                "data": {"TF_NUM_INTRAOP_THREADS": "1"},
            }
        )
        server.put(render_configmap(advice(1, 1), "elsewhere", "web"))
        yield server


def test_json_lists_every_advice_with_its_stored_values(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = status(
        capsys, api, "--namespace", "ml", "--format", "json", "--max-age", "30d"
    )
    assert (code, err) == (0, "")
    rows = {row["name"]: row for row in json.loads(out)}
    assert sorted(rows) == ["broken", "moved", "old-advice", "tf-advice"]  # by label, not by name
    for name, row in rows.items():
        assert {"name", "namespace", "intra_op_threads", "inter_op_threads", "stale"} <= set(row)
        assert row["namespace"] == "ml"
        if name == "broken":
            continue
        stored = api.get("ml", name)
        assert stored is not None
        assert str(row["intra_op_threads"]) == stored["data"]["TF_NUM_INTRAOP_THREADS"]
        assert str(row["inter_op_threads"]) == stored["data"]["TF_NUM_INTEROP_THREADS"]
        prov = json.loads(stored["metadata"]["annotations"][PROVENANCE_ANNOTATION])
        assert row["trials"] == prov["trials_total"]
        assert row["gain"] == prov["gain"]
        assert row["budget_s"] == prov["budget_s"]
        assert row["cpu_model"] == prov["cpu_model"]
        assert row["node_labels"] == {"pool": "cpu-a"}
    fresh = rows["tf-advice"]
    assert (fresh["stale"], fresh["stale_reasons"], fresh["age"]) == (False, [], "1d")
    assert fresh["within_noise"] is None  # this advice predates the range: tolerated
    assert rows["old-advice"]["stale_reasons"] == ["older than 30d"]
    assert rows["moved"]["stale_reasons"] == [
        f"advisor changed (0.0.9 -> {__version__})",
        "TensorFlow changed (2.15.0 -> 2.21.0)",
    ]
    assert rows["broken"]["stale"] is True
    assert rows["broken"]["intra_op_threads"] is None
    assert "content-hash" in rows["broken"]["stale_reasons"][0]
    # only reads reached the server
    assert {r.method for r in api.requests} == {"GET"}


def test_table_yaml_and_csv_say_the_same(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = json_rows(capsys, api, "--namespace", "ml")
    code, as_csv, _ = status(capsys, api, "--namespace", "ml", "--format", "csv")
    records = list(csv.DictReader(io.StringIO(as_csv)))
    assert [r["name"] for r in records] == [r["name"] for r in rows]
    assert [r["intra_op_threads"] for r in records] == [
        "" if r["intra_op_threads"] is None else str(r["intra_op_threads"]) for r in rows
    ]
    assert [r["stale"] for r in records] == [str(r["stale"]).lower() for r in rows]
    code, table, _ = status(capsys, api, "--namespace", "ml")
    lines = table.splitlines()
    assert code == 0 and lines[0].split()[:4] == ["NAMESPACE", "NAME", "POOL", "CPU"]
    assert len(lines) == 1 + len(rows)
    fresh = next(line for line in lines if " tf-advice " in line)
    assert "pool=cpu-a" in fresh and " 3 " in fresh and " 2 " in fresh
    assert fresh.split()[-2:] == ["no", "unused"]  # STALE, CONSUMERS: nothing here mounts it


def test_all_namespaces_needs_the_cluster_role(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = status(capsys, api, "--all-namespaces", "--format", "json")
    assert (code, out) == (errors.ForbiddenError.exit_code, "")
    (line,) = err.splitlines()
    assert "forbidden: cannot list configmaps" in line and "ClusterRole" in line
    assert "deploy/examples/advice-reader.yaml" in line
    api.cluster_rules = reader_rules("ClusterRole")
    code, out, _ = status(capsys, api, "-A", "--format", "json")
    assert code == 0
    assert {(r["namespace"], r["name"]) for r in json.loads(out)} >= {
        ("ml", "tf-advice"),
        ("web", "elsewhere"),
    }


def test_namespace_comes_from_the_kubeconfig_context(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TFTA_POD_NAMESPACE", raising=False)
    code, out, _ = status(capsys, api, "--format", "json")  # the fake's context says "ml"
    assert code == 0 and "tf-advice" in {r["name"] for r in json.loads(out)}
    code, _, err = status(capsys, api, "--namespace", "web")
    assert code == errors.ForbiddenError.exit_code
    assert "a Role in web allowing verbs get, list on configmaps" in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--namespace", "ml", "-A"], "not allowed with"),
        (["--max-age", "soon"], "--max-age"),
        (["--max-age", "0d"], "longer than zero"),
        (["--format", "xml"], "'xml'"),
        (["--namespace", "Bad_NS"], "--namespace 'Bad_NS'"),
    ],
)
def test_bad_flags_are_one_line_usage_errors(
    argv: list[str], says: str, api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = status(capsys, api, *argv)
    assert (code, out) == (errors.UsageError.exit_code, "")
    (line,) = err.splitlines()
    assert says in line


def test_durations_ages_and_ranges() -> None:
    assert parse_duration("1d12h") == timedelta(hours=36)
    assert parse_duration("90m") == timedelta(minutes=90)
    assert parse_duration("2w") == timedelta(days=14)
    for bad in ("", "12", "1x", "d", "1d 2h"):
        with pytest.raises(ValueError):
            parse_duration(bad)
    assert format_age(timedelta(days=3, hours=4)) == "3d4h"
    assert format_age(timedelta(days=12, hours=4)) == "12d"
    assert format_age(timedelta(seconds=40)) == "40s"
    settings = [NearBest(intra=2, inter=1), NearBest(intra=3, inter=1), NearBest(intra=4, inter=1)]
    span = NearBestRange.of(settings, 0.05)
    assert span is not None
    assert span.describe() == "intra 2-4, inter 1 (3 settings)"
    assert NearBestRange.of([NearBest(intra=2, inter=2, default=True)]) is not None
    assert NearBestRange.of([]) is None


def ranged(intra: int, inter: int) -> Recommendation:
    """Newer advice: the settings within noise of the best recorded, no measurable gain."""
    within = [
        NearBest(intra=intra, inter=inter, p99_ms=9.5, windows=4),
        NearBest(intra=intra + 1, inter=inter + 1, p99_ms=9.6, windows=4),
        NearBest(intra=4, inter=4, default=True, p99_ms=9.7, windows=5),
    ]
    result = calibration_result(intra, inter).model_copy(
        update={"near_best": within, "noise_band": 0.05, "gain": 1.0, "gain_within_noise": True}
    )
    return build_recommendation(result, advisor_version=__version__, now=NOW - timedelta(days=1))


def test_the_range_within_noise_comes_from_the_provenance() -> None:
    row = advice_status(StoredAdvice.read(render_configmap(ranged(2, 1), "ranged", "ml")), now=NOW)
    assert row.range == "intra 2-4, inter 1-4 (3 settings, TF's default among them)"
    assert row.within_noise is not None
    assert row.within_noise.model_dump(mode="json") == {
        "intra": [2, 4],
        "inter": [1, 4],
        "settings": 3,
        "default": True,
        "band": 0.05,
    }
    assert row.gain_within_noise is True
    table = status_table([row])
    header, line = table.splitlines()
    assert "WITHIN NOISE" in header
    assert "intra 2-4, inter 1-4 (3 settings" in line
    assert "none (noise)" in line  # no measurable gain, and the table says so
    # a real gain is said in the objective's terms: 2x for a latency is a p99 half as long
    gained = row.model_copy(
        update={"gain": 2.0, "gain_within_noise": False, "objective": "latency"}
    )
    assert "p99 50% lower" in status_table([gained])
    faster = gained.model_copy(update={"gain": 1.25, "objective": "throughput"})
    assert "req/s 25% higher" in status_table([faster])
    assert "x " not in status_table([gained]).splitlines()[1]
    # older advice records no range: the column is empty, nothing fails
    old = advice_status(StoredAdvice.read(render_configmap(advice(2, 1), "old", "ml")), now=NOW)
    assert (old.range, old.within_noise, old.gain_within_noise) == (None, None, False)
