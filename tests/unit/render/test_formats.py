"""Every output format over typed results built here: the status rows, a plan, a calibration and a
node profile, each through its view, and the registry that offers them."""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser
from typing import Any, ClassVar

import pytest
import yaml

from advisor import __version__
from advisor.models import (
    AdviceStatus,
    Consumer,
    NearBestRange,
    PlanDecision,
    PlanResult,
    Problem,
    ServingTarget,
    StatusResult,
)
from advisor.render import formats
from advisor.render.document import RECORDS, Capability, Document, Grid, Lines, ModelView, View
from advisor.render.plan import PlanView
from advisor.render.status import StatusView, status_table
from advisor.render.summaries import CalibrationView, NodeView
from advisor.render.table import text_summary
from testkit.fakeapi.samples import calibration_result, node_profile

#: what a name, reason or message from the cluster may hold: markup, Markdown and table syntax
HOSTILE = '<img src=x onerror="alert(1)"> | *bold* _it_ `code` [l](j:x) &amp; #h ~s~ \\'

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


def advice(name: str, **extra: Any) -> AdviceStatus:
    """A valid advice measured under 4 CPUs a day ago, twice as fast as TF's default."""
    values: dict[str, Any] = {
        "name": name,
        "namespace": "ml",
        "intra_op_threads": 2,
        "inter_op_threads": 1,
        "node": "node-a",
        "node_labels": {"pool": "cpu-a"},
        "cpu_model": "Test CPU @ 2.0GHz",
        "effective_cpus": 4.0,
        "quota_cpus": 4.0,
        "objective": "latency",
        "gain": 2.0,
        "gain_within_noise": False,
        "trials": 12,
        "budget_s": 60.0,
        "tf_version": "2.21.0",
        "advisor_version": __version__,
        "created_at": "2026-01-01T00:00:00Z",
        "age": "1d",
        "age_s": 86400,
    }
    return AdviceStatus(**(values | extra))


def reader(name: str, cpu: float | None, *problems: tuple[str, str]) -> Consumer:
    return Consumer(
        kind="Deployment",
        name=name,
        container="server",
        cpu_limit=cpu,
        problems=[Problem.model_validate({"code": c, "message": m}) for c, m in problems],
    )


@pytest.fixture
def result() -> StatusResult:
    """Three advice: read by two containers (one with problems), nobody, and a missing one
    whose reader's failed calibration has a reason from the cluster."""
    small = reader(
        "web-small",
        2.0,
        ("cpu-limit-differs", "its CPU limit is 2, the advice was measured under 4"),
        ("resize-restarts-nothing", "no resizePolicy restarts it on a CPU resize"),
    )
    within = NearBestRange(intra=[2, 3], inter=[1, 1], settings=2, band=0.05)
    return StatusResult(
        rows=[
            advice("spare", consumers=[], unused=True),
            advice(
                "tf-advice",
                consumers=[reader("web-ok", 4.0), small],
                unused=False,
                within_noise=within,
                range=within.describe(),
                target=ServingTarget(workload="deployment/web-ok", container="server"),
            ),
            AdviceStatus(
                name="wanted",
                namespace="ml",
                error="no ConfigMap wanted in namespace ml, but 1 container(s) require it",
                consumers=[reader("web-new", 4.0, ("advice-missing", HOSTILE))],
                unused=False,
                missing=True,
                calibration_job="tfta-web-new-0a1b2c3d4e",
                calibration_state="failed",
                calibration_reason=HOSTILE,
            ),
        ]
    )


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


# --------------------------------------------------------------------------------------------------
# Markdown and HTML: the same document, escaped


def markdown_tables(text: str) -> list[list[list[str]]]:
    """The GitHub tables of ``text``: cells split on unescaped pipes, escapes undone."""
    tables: list[list[list[str]]] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            cells = re.split(r"(?<!\\)\|", line)[1:-1]
            tables[-1].append([re.sub(r"\\(.)", r"\1", cell.strip()) for cell in cells])
        previous = line
    return tables


def grids(document: Document) -> list[Grid]:
    return [block for block in document.blocks if isinstance(block, Grid)]


def test_markdown_is_github_tables_of_the_same_cells_with_nothing_live(
    result: StatusResult,
) -> None:
    view = StatusView(result)
    text = formats.render(view, "markdown")
    assert text.startswith("# tf-thread-advisor status: ml\n\n## advice\n\n| NAMESPACE | NAME |")
    tables = markdown_tables(text)
    expected = grids(view.document())
    assert len(tables) == len(expected) == 2
    for table, grid in zip(tables, expected, strict=True):
        header, separator, *rows = table
        assert header == list(grid.columns)
        assert set(separator) == {"---"}
        assert rows == [list(row) for row in grid.rows]
    items = [line[2:] for line in text.splitlines() if line.startswith("- ")]
    assert len(items) == 4
    assert re.sub(r"\\(.)", r"\1", items[-1]).endswith(HOSTILE)
    # the text from the cluster is inert: no tag, link, emphasis or code span survives
    for live in ("<img", "*bold", "_it", "`code", "[l]", "&amp;"):
        assert not re.search(r"(?<!\\)" + re.escape(live), text), live


class Tags(HTMLParser):
    """The tags of a page and the text of its cells, items and headings."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.cells: list[list[str]] = []
        self.items: list[str] = []
        self.headings: list[str] = []
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "tr":
            self.cells.append([])
        if tag in ("td", "th", "li", "h1", "h2", "pre"):
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if self._text is None:
            return
        text = "".join(self._text)
        if tag in ("td", "th"):
            self.cells[-1].append(text)
        elif tag == "li":
            self.items.append(text)
        elif tag in ("h1", "h2"):
            self.headings.append(text)
        self._text = None if tag in ("td", "th", "li", "h1", "h2", "pre") else self._text

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


def test_html_is_a_standalone_page_with_every_value_escaped(result: StatusResult) -> None:
    view = StatusView(result)
    page = formats.render(view, "html")
    assert page.startswith("<!DOCTYPE html>\n")
    parsed = Tags()
    parsed.feed(page)
    # only the page's own tags: nothing from the cluster became one
    assert set(parsed.tags) == {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "h1",
        "h2",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "ul",
        "li",
    }
    assert "script-src" not in page and "default-src 'none'" in page
    assert parsed.headings == ["tf-thread-advisor status: ml", "advice", "consumers", "problems"]
    expected = [[*g.columns] for g in grids(view.document())]
    rows = [list(row) for g in grids(view.document()) for row in [g.columns, *g.rows]]
    assert parsed.cells == rows and expected[0] == parsed.cells[0]
    assert parsed.items[-1].endswith(HOSTILE)  # the reason as the cluster said it, as text


# --------------------------------------------------------------------------------------------------
# plan


def plan_view(applied: bool = False) -> PlanView:
    decisions = [
        PlanDecision(
            workload="deployment/a",
            container="server",
            configmap="advice-a",
            decision="calibrate",
            reason="no advice yet",
            job="tfta-a-server-0a1b2c3d4e",
        ),
        PlanDecision(
            workload="deployment/z", decision="skipped", reason=f"no container: {HOSTILE}"
        ),
    ]
    return PlanView(PlanResult(decisions=decisions), namespace="ml", applied=applied)


def test_plan_in_every_format() -> None:
    view = plan_view()
    assert json.loads(formats.render(view, "json")) == view.result.model_dump(mode="json")
    assert yaml.safe_load(formats.render(view, "yaml")) == view.result.model_dump(mode="json")
    table, reasons, hint = formats.render(view, "table").rstrip("\n").split("\n\n")
    assert table.splitlines()[0].split() == [
        "WORKLOAD",
        "CONTAINER",
        "CONFIGMAP",
        "DECISION",
        "JOB",
    ]
    assert table.splitlines()[2].split() == ["deployment/z", "-", "-", "skipped", "-"]
    assert reasons.splitlines() == [
        "deployment/a (server): no advice yet",
        f"deployment/z: no container: {HOSTILE}",
    ]
    assert hint.startswith("nothing was created")
    assert "nothing was created" not in formats.render(plan_view(applied=True), "table")
    records = list(csv.DictReader(io.StringIO(formats.render(view, "csv"))))
    assert [(r["workload"], r["container"], r["job"]) for r in records] == [
        ("deployment/a", "server", "tfta-a-server-0a1b2c3d4e"),
        ("deployment/z", "", ""),
    ]
    assert records[1]["reason"] == f"no container: {HOSTILE}"
    (decisions,) = markdown_tables(formats.render(view, "markdown"))
    assert decisions[3] == ["deployment/z", "-", "-", "skipped", "-"]
    empty = PlanView(PlanResult(), namespace="ml", applied=False)
    assert formats.render(empty, "table").startswith("no opted-in workloads in namespace ml")


def test_plan_across_namespaces_names_each_decisions_namespace() -> None:
    one = plan_view()
    decisions = [
        d.model_copy(update={"namespace": ns})
        for d, ns in zip(one.result.decisions, ("team-a", "team-b"), strict=True)
    ]
    view = PlanView(PlanResult(decisions=decisions), namespace=None, applied=True)
    table, reasons = formats.render(view, "table").rstrip("\n").split("\n\n")
    assert table.splitlines()[0].split()[:2] == ["NAMESPACE", "WORKLOAD"]
    assert table.splitlines()[2].split() == ["team-b", "deployment/z", "-", "-", "skipped", "-"]
    assert reasons.splitlines()[0] == "team-a/deployment/a (server): no advice yet"
    records = list(csv.DictReader(io.StringIO(formats.render(view, "csv"))))
    assert [r["namespace"] for r in records] == ["team-a", "team-b"]
    assert [d["namespace"] for d in json.loads(formats.render(view, "json"))["decisions"]] == [
        "team-a",
        "team-b",
    ]
    # one namespace: no NAMESPACE column, the machine formats still carry it
    single = PlanView(PlanResult(decisions=decisions), namespace="team-a", applied=True)
    assert formats.render(single, "table").split()[0] == "WORKLOAD"
    assert "NAMESPACE" not in formats.render(single, "table")
    nothing = PlanView(PlanResult(), namespace=None, applied=False)
    assert "no namespace is labelled tf-thread-advisor.io/calibrate=true" in formats.render(
        nothing, "table"
    )
    quiet = PlanView(PlanResult(), namespace=None, applied=False, namespaces=["a", "b"])
    assert "no opted-in workloads in namespaces a, b" in formats.render(quiet, "table")


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


# --------------------------------------------------------------------------------------------------
# the registry


class Bare(View):
    """A result with data and a document only."""

    def data(self) -> Any:
        return {"x": 1}

    def document(self) -> Document:
        return Document("bare", (Lines(("one",)),))


class WithRecords(Bare):
    provides: ClassVar[frozenset[Capability]] = frozenset({RECORDS})

    def records(self) -> Grid:
        return Grid(("x",), (("1",),))


def test_a_view_gets_the_formats_whose_needs_it_provides() -> None:
    assert formats.names(Bare) == ("json", "yaml", "markdown", "html")
    assert formats.names(WithRecords) == ("json", "yaml", "csv", "markdown", "html")
    assert formats.names(StatusView) == ("table", "json", "yaml", "csv", "markdown", "html")
    assert formats.names(NodeView) == ("text", "json", "yaml", "markdown", "html")
    with pytest.raises(ValueError, match="cannot be shown as 'csv'"):
        formats.render(Bare(), "csv")
    with pytest.raises(ValueError, match="cannot be shown as 'xml'"):
        formats.render(Bare(), "xml")


def test_a_format_is_registered_once_under_one_name() -> None:
    @formats.register("shout", "the document in capitals")
    def shout(view: View) -> str:
        return formats.plain(view).upper()

    try:
        assert formats.names(Bare)[-1] == "shout"
        assert formats.render(Bare(), "shout") == "ONE\n"
        with pytest.raises(ValueError, match="registered already"):
            formats.register("shout", "again")(shout)
    finally:
        formats.unregister("shout")
    assert "shout" not in formats.names(Bare)


def test_a_grid_row_must_fit_its_columns() -> None:
    with pytest.raises(ValueError, match="a row of 1 cells under 2 columns"):
        Grid(("a", "b"), (("1",),))


def test_a_markdown_list_item_starts_no_nested_list_or_heading() -> None:
    class Said(Bare):
        def document(self) -> Document:
            return Document("said", (Lines(("- a", "12. b", "# c", "plain - d")),))

    text = formats.render(Said(), "markdown")
    assert text.splitlines()[2:] == ["- \\- a", "- 12\\. b", "- \\# c", "- plain - d"]


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
