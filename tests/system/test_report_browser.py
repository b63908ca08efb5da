"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``, installed by
scripts/install-test-tools.sh) lays the page out 1400 px wide, takes a screenshot of it, and
measures where every SVG text is drawn.

The shipped report has no script; the measuring one is added to a copy in the test's tmp folder,
writes its findings into the page, and ``--dump-dom`` hands the page back. A text drawn past its
SVG's edge is clipped there; a cell's label drawn past its cell runs into the next one.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.models import CalibrationResult
from advisor.render.report import report_html
from tests.support.real_parts import missing_real_part
from tests.support.render_samples import (
    GRID,
    long_labels_default_chosen,
    long_labels_held_and_chosen,
)
from tests.support.render_samples import result as built

WIDTH, HEIGHT = 1400, 2000

#: the box of every SVG, of every text in it and of the cell (a rectangle) it labels, in page
#: pixels
MEASURE = """<script>
(() => {
  const box = (r) => [r.left, r.top, r.right, r.bottom];
  const area = (b) => (b[2] - b[0]) * (b[3] - b[1]);
  const svgs = [...document.querySelectorAll("svg")];
  const texts = [];
  svgs.forEach((svg, index) => {
    const rects = [...svg.querySelectorAll("rect")].map((r) => box(r.getBoundingClientRect()));
    const whole = area(box(svg.getBoundingClientRect()));
    for (const text of svg.querySelectorAll("text")) {
      // where the text is anchored, in page pixels: the smallest rectangle holding that point
      // (below the whole drawing's) is the cell or outline the text labels
      const at = new DOMPoint(text.x.baseVal[0].value, text.y.baseVal[0].value)
        .matrixTransform(text.getScreenCTM());
      const holders = rects
        .filter((b) => b[0] <= at.x && at.x <= b[2] && b[1] <= at.y && at.y <= b[3])
        .filter((b) => area(b) < 0.5 * whole)
        .sort((a, b) => area(a) - area(b));
      texts.push({
        svg: index,
        text: text.textContent,
        box: box(text.getBoundingClientRect()),
        cell: holders.length ? holders[0] : null,
      });
    }
  });
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify({
    body: box(document.body.getBoundingClientRect()),
    svgs: svgs.map((svg) => box(svg.getBoundingClientRect())),
    texts: texts,
  });
  document.body.appendChild(out);
})();
</script>"""

#: rounding of the browser's boxes
SLACK = 0.5


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on a local file, with nothing reaching out: no network services, no
    updates, no sync. The page is ours and loaded from disk, so the sandbox (which root cannot
    have, and a container may not grant) guards nothing here."""
    binary = shutil.which("chromium")
    if binary is None:
        missing_real_part("chromium is not installed (scripts/install-test-tools.sh, as root)")
    assert binary is not None
    argv = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},{HEIGHT}",
        *args,
    ]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(profile)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def inside(inner: list[float], outer: list[float]) -> bool:
    left, top, right, bottom = inner
    return (
        left >= outer[0] - SLACK
        and top >= outer[1] - SLACK
        and right <= outer[2] + SLACK
        and bottom <= outer[3] + SLACK
    )


def grid_result() -> CalibrationResult:
    return built(GRID, objective="slo", p99_slo_ms=6.0)


@pytest.mark.tools
@pytest.mark.parametrize(
    "make",
    [long_labels_default_chosen, long_labels_held_and_chosen, grid_result],
    ids=["default-chosen", "held-and-chosen", "grid-slo"],
)
def test_every_svg_text_stays_inside_its_box_at_1400_px(
    tmp_path: Path, make: Callable[[], CalibrationResult]
) -> None:
    page = report_html(make())
    assert "<script" not in page  # the shipped report stays script-free
    report = tmp_path / "report.html"
    report.write_text(page)
    shot = tmp_path / "report.png"
    chromium(tmp_path / "profile", f"--screenshot={shot}", report.as_uri())
    assert png_size(shot) == (WIDTH, HEIGHT)  # kept in tmp_path to look at

    probe = tmp_path / "measured.html"
    probe.write_text(page.replace("</body>", MEASURE + "\n</body>", 1))
    dom = chromium(tmp_path / "profile", "--dump-dom", probe.as_uri()).stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found is not None, dom[-2000:]
    measured: dict[str, Any] = json.loads(html.unescape(found.group(1)))

    svgs, texts, body = measured["svgs"], measured["texts"], measured["body"]
    assert len(svgs) == 1
    assert len(texts) >= 20  # the title, axes, every cell, the legend: measured, not skipped
    clipped = [t["text"] for t in texts if not inside(t["box"], svgs[t["svg"]])]
    assert clipped == [], "drawn past the SVG's edge, clipped"
    labels = [t for t in texts if t["cell"] is not None]
    spilled = [t["text"] for t in labels if not inside(t["box"], t["cell"])]
    assert spilled == [], "drawn past its cell (or the outline in it)"
    assert len(labels) >= 6  # the cells' labels were found

    # sized for the page: most of its width, and no wider than it
    svg_width, body_width = svgs[0][2] - svgs[0][0], body[2] - body[0]
    assert svg_width >= 0.75 * body_width, (svg_width, body_width)
    assert svgs[0][2] <= body[2] + SLACK
