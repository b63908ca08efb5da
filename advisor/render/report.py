"""The report file: one self-contained HTML page (no scripts, no fonts, no external links) with the
heatmap, the summary and every trial, or the SVG alone when the name ends in ``.svg``, so it can
be copied out of a pod with ``kubectl cp`` and opened anywhere.
"""

from __future__ import annotations

import html
from pathlib import Path

from advisor.atomic import write_atomically
from advisor.errors import Opt, OutputError
from advisor.models import TENSORFLOW, CalibrationResult
from advisor.render.heatmap import heatmap_svg
from advisor.render.table import text_summary
from advisor.render.words import inputs_text, rate_label

_TRIAL_COLUMNS = (
    ("round", "round"),
    ("intra", "intra_op_threads"),
    ("inter", "inter_op_threads"),
    ("status", "status"),
    ("window s", "measure_s"),
    ("requests", "requests"),
    ("p50 ms", "p50_ms"),
    ("p90 ms", "p90_ms"),
    ("p99 ms", "p99_ms"),
    ("max ms", "max_ms"),
    ("req/s", "throughput_rps"),
    ("CPU s", "cpu_time_s"),
    ("threads", "threads"),
    ("throttled", "nr_throttled"),
    ("throttled ms", "throttled_time_ms"),
    ("preempt/req", "involuntary_switches_per_request"),
    ("peak RSS MiB", "peak_rss_mib"),
    ("reason", "reason"),
)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return html.escape(str(value))


def report_html(result: CalibrationResult) -> str:
    e = html.escape
    trial_rows = []
    for trial in result.trials:
        data = trial.model_dump()
        cells = "".join(f"<td>{_cell(data[field])}</td>" for _, field in _TRIAL_COLUMNS)
        if trial.is_baseline:
            cells = cells.replace("<td></td>", "<td>default</td>", 2)
        trial_rows.append(f"<tr class='{e(trial.status)}'>{cells}</tr>")
    # the throughput column in the inputs' unit: examples per second where requests are replayed
    rate = rate_label(result.subject)
    head = "".join(
        f"<th>{e(rate if field == 'throughput_rps' else name)}</th>"
        for name, field in _TRIAL_COLUMNS
    )
    summary = e(text_summary(result))
    subject = result.subject
    what = subject.path or "built-in model"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tf-thread-advisor calibration: intra {result.setting.intra} inter {
        result.setting.inter
    }</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; }}
figure.heatmap {{ margin: 16px 0 8px; }}
figure.heatmap svg {{ display: block; }}
.wide {{ overflow-x: auto; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 3px 7px; text-align: right; }}
th {{ background: #eee; }}
tr.failed, tr.crashed, tr.oom, tr.timeout, tr.skipped {{ color: #a33; }}
pre {{ background: #f7f7f7; padding: 10px; white-space: pre-wrap; }}
</style></head><body>
<h1>Calibration: {TENSORFLOW.intra_op}={result.setting.intra},
{TENSORFLOW.inter_op}={result.setting.inter}</h1>
<p>Model: {e(what)} ({e(subject.model_format)}, concurrency {subject.concurrency}). Inputs:
{e(inputs_text(subject))}. Objective: {e(result.objective)}.
Node: {result.node.effective_cpus:g} usable CPUs, {len(result.node.affinity_cpus)} in the
affinity mask, quota {e(str(result.node.quota_cpus or "none"))}.</p>
<figure class="heatmap">
{heatmap_svg(result, page=True)}
</figure>
<h2>Summary</h2>
<pre>{summary}</pre>
<h2>Every trial</h2>
<div class="wide"><table><tr>{head}</tr>
{chr(10).join(trial_rows)}
</table></div>
</body></html>
"""


def write_report(result: CalibrationResult, path: Path) -> None:
    """HTML report, or the SVG heatmap alone for a ``.svg`` path; OutputError if unwritable.

    Written beside the target (through a symlink: beside the file it points to) and renamed into
    place, so a full disk leaves the previous report whole and a reader never sees half of one.
    """
    content = heatmap_svg(result) if path.suffix.lower() == ".svg" else report_html(result)
    try:
        write_atomically(path, content)
    except OSError as exc:
        raise OutputError(Opt("report"), f" {path}: cannot write: {exc.strerror or exc}") from None
