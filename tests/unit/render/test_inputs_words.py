"""Where a calibration's inputs came from, in words: the table's summary and the report say it."""

from __future__ import annotations

import pytest

from advisor.models import InputsSource, SubjectInfo
from advisor.render.report import report_html
from advisor.render.table import text_summary
from advisor.render.words import inputs_text
from testkit.fakeapi.samples import calibration_result


@pytest.mark.parametrize(
    ("subject", "words"),
    [
        (SubjectInfo(model_format="builtin"), "synthesised"),
        (
            SubjectInfo(model_format="savedmodel", path="/m", batch_size=8),
            "synthesised, batch size 8",
        ),
        (
            SubjectInfo(
                kind="savedmodel",
                path="/m",
                inputs_source=InputsSource(kind="synthesised", detail="parse spec of 3 features"),
            ),
            "synthesised (parse spec of 3 features), batch size 1",
        ),
        (
            SubjectInfo(
                kind="savedmodel",
                path="/m",
                inputs_source=InputsSource(
                    kind="warmup", file="/m/assets.extra/w", requests=12, batch_sizes=(1, 8)
                ),
            ),
            "warmup file (12 requests, batch sizes 1-8)",
        ),
        (
            SubjectInfo(
                kind="keras",
                path="/m.keras",
                inputs_source=InputsSource(
                    kind="file", file="req.jsonl", requests=1, batch_sizes=(4, 4)
                ),
            ),
            "requests file req.jsonl (1 request, batch size 4)",
        ),
    ],
)
def test_the_source_of_the_inputs_in_words(subject: SubjectInfo, words: str) -> None:
    assert inputs_text(subject) == words


def test_the_summary_and_the_report_say_where_the_inputs_came_from() -> None:
    result = calibration_result(2, 1)
    source = InputsSource(kind="warmup", file="/m/w", requests=3, batch_sizes=(1, 2))
    subject = SubjectInfo(model_format="savedmodel", path="/m", inputs_source=source)
    replayed = result.model_copy(update={"subject": subject})
    line = "inputs: warmup file (3 requests, batch sizes 1-2)"
    assert line in text_summary(replayed).splitlines()
    assert "Inputs:\nwarmup file (3 requests, batch sizes 1-2)." in report_html(replayed)
    # stored with the result: JSON and YAML (and the ConfigMap's provenance) carry it as data
    dumped = replayed.model_dump(mode="json")["workload"]["inputs_source"]
    assert dumped == {
        "kind": "warmup",
        "file": "/m/w",
        "requests": 3,
        "batch_sizes": [1, 2],
        "detail": None,
    }


def test_the_throughput_column_counts_examples_where_requests_are_replayed() -> None:
    """Replayed requests each carry their own batch: their throughput is examples per second,
    and the table and the report label it so; synthesised inputs keep requests per second."""
    result = calibration_result(2, 1)
    source = InputsSource(kind="file", file="r.json", requests=3, batch_sizes=(1, 2))
    subject = SubjectInfo(model_format="savedmodel", path="/m", inputs_source=source)
    replayed = result.model_copy(update={"subject": subject})
    header = text_summary(replayed).splitlines()[0].split()
    assert "ex/s" in header and "req/s" not in header
    assert "<th>ex/s</th>" in report_html(replayed)
    assert "<th>req/s</th>" not in report_html(replayed)
    assert "req/s" in text_summary(result).splitlines()[0].split()
    assert "<th>req/s</th>" in report_html(result)
