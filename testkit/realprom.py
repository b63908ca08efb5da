"""A real Prometheus (Debian's package) on 127.0.0.1 serving history written for a test.

The recipe of REAL-PARTS.md, "Prometheus with loaded history": the series as OpenMetrics text are
turned into blocks by ``promtool tsdb create-blocks-from openmetrics``, and a server with no
scrape configuration answers the HTTP API over them, days of history included. The advisor's
PromQL is then evaluated by Prometheus itself.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


def binaries() -> tuple[str, str] | None:
    """(prometheus, promtool), or None where either is not installed."""
    server, promtool = shutil.which("prometheus"), shutil.which("promtool")
    return (server, promtool) if server and promtool else None


def openmetrics(families: Iterable[tuple[str, str, list[str]]]) -> str:
    """The text of (family, type, sample lines) each: every series' samples in time order, as
    promtool requires, and ``# EOF`` last."""
    lines = []
    for family, kind, samples in families:
        lines.append(f"# TYPE {family} {kind}")
        lines += sorted(
            samples, key=lambda line: (line.rsplit(" ", 2)[0], float(line.rsplit(" ", 1)[1]))
        )
    return "\n".join([*lines, "# EOF", ""])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def loaded_prometheus(work: Path, text: str, *, ready_s: float = 60.0) -> Iterator[str]:
    """A server over ``text`` (OpenMetrics) in ``work``; yields its URL. RuntimeError when the
    binaries are missing or it does not become ready (with the end of its log).

    Prometheus answers an instant query only from samples in its 5-minute lookback: a history
    meant to reach the present must be written against a clock read as it is loaded (in the
    fixture), not when pytest imported the test's module, which in a full run is long before."""
    found = binaries()
    if found is None:
        raise RuntimeError("prometheus/promtool not installed")
    server_bin, promtool = found
    series = work / "series.om"
    series.write_text(text)
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(series), str(work / "tsdb")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with (work / "prometheus.log").open("w") as log:
        server = subprocess.Popen(
            [server_bin, "--config.file=/dev/null", f"--storage.tsdb.path={work / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=30d"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + ready_s
            while not _ready(url):
                if server.poll() is not None or time.monotonic() > deadline:
                    said = (work / "prometheus.log").read_text()[-2000:]
                    raise RuntimeError(f"prometheus did not become ready: {said}")
                time.sleep(0.5)
            yield url
        finally:
            server.terminate()
            server.wait(timeout=30)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/-/ready", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False
