"""``status``'s view in every format: the rows dumped key for key, the aligned table with its
sentences, an empty result, one CSV record per consumer, exclusive CPUs."""

from __future__ import annotations

import csv
import io
import json

import yaml

from advisor.models import (
    AdviceStatus,
    StatusResult,
)
from advisor.render import formats
from advisor.render.status import StatusView, status_table
from tests.unit.render.samples import HOSTILE, advice

#: the keys of a ``status --format json`` row, in order: what scripts and dashboards read
STATUS_KEYS = [
    "name",
    "namespace",
    "intra_op_threads",
    "inter_op_threads",
    "stale",
    "stale_reasons",
    "node",
    "node_labels",
    "cpu_model",
    "effective_cpus",
    "quota_cpus",
    "cpus_exclusive",
    "within_noise",
    "range",
    "objective",
    "gain",
    "gain_within_noise",
    "trials",
    "budget_s",
    "elapsed_s",
    "stopped",
    "took",
    "tf_version",
    "advisor_version",
    "created_at",
    "age",
    "age_s",
    "error",
    "node_selector",
    "data_changed_at",
    "target",
    "consumers",
    "unused",
    "missing",
    "calibration_job",
    "calibration_state",
    "calibration_reason",
]


# --------------------------------------------------------------------------------------------------
# status


def test_json_and_yaml_are_the_rows_dump_key_for_key(result: StatusResult) -> None:
    view = StatusView(result)
    printed = json.loads(formats.render(view, "json"))
    assert printed == [row.model_dump(mode="json") for row in result.rows]
    assert all(list(row) == STATUS_KEYS for row in printed)
    assert yaml.safe_load(formats.render(view, "yaml")) == printed
    # the printed rows are the model's wire form: they validate back to the same result
    assert StatusResult(rows=[AdviceStatus.model_validate(r) for r in printed]) == result
    assert printed[1]["within_noise"] == {
        "intra": [2, 3],
        "inter": [1, 1],
        "settings": 2,
        "default": False,
        "band": 0.05,
    }
    assert printed[1]["consumers"][1]["problems"][0]["code"] == "cpu-limit-differs"


def test_the_table_aligns_the_advice_then_the_consumers_then_every_sentence(
    result: StatusResult,
) -> None:
    text = formats.render(StatusView(result), "table")
    assert text == status_table(result.rows)
    advice_part, consumer_part, sentences = text.rstrip("\n").split("\n\n")
    header, *lines = advice_part.splitlines()
    assert header.split()[-1] == "CALIBRATION"  # plan calibrated one of them
    # every column starts where its header does
    for column in ("NAME", "POOL", "GAIN", "STALE"):
        start = header.index(f"  {column} ") + 2
        assert {line[start - 1] for line in lines} == {" "}
        assert all(line[start] != " " for line in lines)
    rows = {line.split()[1]: line for line in lines}
    assert rows["spare"].split()[-2:] == ["unused", "-"]
    assert "2 (2 problems)" in rows["tf-advice"]
    assert "p99 50% lower" in rows["tf-advice"]  # a gain of 2 for a latency, in its terms
    assert "intra 2-3, inter 1 (2 settings)" in rows["tf-advice"]
    assert rows["wanted"].split()[-3:] == ["missing", "tfta-web-new-0a1b2c3d4e", "(failed)"]
    assert consumer_part.splitlines()[2].split()[:5] == [
        "ml",
        "tf-advice",
        "deployment/web-small",
        "server",
        "2",
    ]
    assert sentences.splitlines() == [
        "ml/deployment/web-small (server) reads tf-advice: cpu-limit-differs: its CPU limit is "
        "2, the advice was measured under 4",
        "ml/deployment/web-small (server) reads tf-advice: resize-restarts-nothing: no "
        "resizePolicy restarts it on a CPU resize",
        f"ml/deployment/web-new (server) reads wanted: advice-missing: {HOSTILE}",
        f"ml/wanted: calibration Job tfta-web-new-0a1b2c3d4e failed: {HOSTILE}",
    ]


def test_an_empty_result_says_so_in_every_people_format() -> None:
    view = StatusView(StatusResult())
    assert formats.render(view, "table") == "no advice ConfigMaps found\n"
    assert "- no advice ConfigMaps found" in formats.render(view, "markdown")
    assert "<li>no advice ConfigMaps found</li>" in formats.render(view, "html")
    assert formats.render(view, "json") == "[]\n"
    assert formats.render(view, "csv").count("\n") == 1  # the header alone


def test_csv_has_one_record_per_consumer_with_raw_values(result: StatusResult) -> None:
    records = list(csv.DictReader(io.StringIO(formats.render(StatusView(result), "csv"))))
    assert [(r["name"], r["consumer_name"]) for r in records] == [
        ("spare", ""),
        ("tf-advice", "web-ok"),
        ("tf-advice", "web-small"),
        ("wanted", "web-new"),
    ]
    spare, ok, small, wanted = records
    assert (spare["gain"], spare["effective_cpus"], spare["pool"]) == ("2.0", "4.0", "pool=cpu-a")
    assert (spare["unused"], spare["missing"], spare["stale"]) == ("true", "false", "false")
    assert (ok["cpu_limit"], ok["problems"]) == ("4.0", "")
    assert small["problems"] == (
        "cpu-limit-differs: its CPU limit is 2, the advice was measured under 4; "
        "resize-restarts-nothing: no resizePolicy restarts it on a CPU resize"
    )
    assert (wanted["intra_op_threads"], wanted["calibration_reason"]) == ("", HOSTILE)


def test_exclusive_cpus_show_by_the_quota_and_in_csv_and_json() -> None:
    rows = [advice("own", cpus_exclusive=True), advice("shared", cpus_exclusive=False)]
    view = StatusView(StatusResult(rows=rows))
    lines = {line.split()[1]: line for line in formats.render(view, "table").splitlines()[1:]}
    assert " 4 excl " in lines["own"]
    assert "excl" not in lines["shared"]
    records = list(csv.DictReader(io.StringIO(formats.render(view, "csv"))))
    assert [(r["quota_cpus"], r["cpus_exclusive"]) for r in records] == [
        ("4.0", "true"),
        ("4.0", "false"),
    ]
    assert [r["cpus_exclusive"] for r in json.loads(formats.render(view, "json"))] == [True, False]


def test_production_cell_words_each_verdict() -> None:
    from advisor.models import Production
    from advisor.render.status import production_cell

    improved = Production(
        verdict="improved", throttled_before=0.41, throttled_after=0.03,
        p99_before_ms=122.0, p99_after_ms=58.0, reason="p99 ...", cause="p99",
    )  # fmt: skip
    assert production_cell(improved) == "throttled 41% -> 3%, p99 122 -> 58 ms: improved"
    busy = Production(
        verdict="unknown", throttled_before=0.05, throttled_after=0.4, load_before=100.0,
        load_after=200.0, reason="load changed: 100 -> 200 req/s", cause="load-changed",
    )  # fmt: skip
    assert production_cell(busy) == (
        "throttled 5% -> 40%, load 100 -> 200 req/s: unknown (load changed: 100 -> 200 req/s)"
    )
    short = Production(
        verdict="regressed", throttled_before=0.05, throttled_after=0.4, provisional=True,
        reason="provisional (3.0 h of the 24.0 h after-window so far): throttling 5% -> 40%",
    )  # fmt: skip
    assert production_cell(short) == (
        "throttled 5% -> 40%: regressed, provisional (3.0 h of the 24.0 h after-window so far): "
        "throttling 5% -> 40%"
    )
    assert production_cell(Production(verdict="unknown", reason="no data")) == "unknown (no data)"
    assert production_cell(None) == "-"
