"""The calibration's and the node profile's views: a summary as text, in a report too."""

from __future__ import annotations

import csv
import io
import json
from typing import ClassVar

from advisor.render import formats
from advisor.render.document import ModelView
from advisor.render.summaries import CalibrationView, NodeView
from advisor.render.table import text_summary
from testkit.fakeapi.samples import calibration_result, node_profile
from tests.unit.render.samples import Tags

# --------------------------------------------------------------------------------------------------
# calibrate and probe: a summary, in a report too


def test_calibration_text_is_its_summary_and_csv_its_trials() -> None:
    result = calibration_result(2, 1)
    view = CalibrationView(result)
    assert formats.render(view, "text") == text_summary(result) + "\n"
    assert json.loads(formats.render(view, "json")) == result.model_dump(mode="json")
    records = list(csv.DictReader(io.StringIO(formats.render(view, "csv"))))
    assert len(records) == len(result.trials)
    assert [(r["intra_op_threads"], r["inter_op_threads"]) for r in records] == [
        (
            "" if t.setting.intra is None else str(t.setting.intra),
            str(t.setting.inter or ""),
        )
        for t in result.trials
    ]
    assert [r["p99_ms"] for r in records] == [str(t.p99_ms) for t in result.trials]
    page = Tags()
    page.feed(formats.render(view, "html"))
    assert "pre" in page.tags


def test_a_summary_in_markdown_is_one_code_block_no_backticks_can_close() -> None:
    class Tricky(ModelView):
        title: ClassVar[str] = "tricky"

        def summary(self) -> str:
            return "a ``` b\n````\n<b>bold</b>"

    text = formats.render(Tricky(node_profile()), "markdown")
    assert text == "# tricky\n\n`````text\na ``` b\n````\n<b>bold</b>\n`````\n"
    probe = NodeView(node_profile())
    assert formats.render(probe, "text") == probe.summary() + "\n"
    assert probe.summary() in formats.render(probe, "markdown")
