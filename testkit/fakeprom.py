"""A tiny Prometheus stand-in over real HTTP on 127.0.0.1 that serves recorded answers.

The advisor's client is driven against it over the wire as against a real server: a test gives
``answer`` (the endpoint, ``query`` or ``query_range``, and the form fields) and gets the HTTP
status and body it chose, written the way Prometheus writes them (``vector``/``matrix``/``error``
below). Faults are answers too: a 503, a 401, garbage, or a delay longer than the client waits.
Every request is recorded (endpoint, form, headers). The real server is in tests/system/.
"""

from __future__ import annotations

import json
import math
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

#: (status, body bytes) for one request, or None: 404 as for an unknown path
Answer = tuple[int, bytes]
Answerer = Callable[[str, Mapping[str, str]], Answer]


def vector(*samples: tuple[Mapping[str, str], float], at: float = 0.0) -> Answer:
    """200 with an instant query's answer: one sample per (labels, value)."""
    result = [{"metric": dict(labels), "value": [at, _text(value)]} for labels, value in samples]
    return _success({"resultType": "vector", "result": result})


def matrix(*series: tuple[Mapping[str, str], list[tuple[float, float]]]) -> Answer:
    """200 with a range query's answer: one series per (labels, [(time, value)])."""
    result = [
        {"metric": dict(labels), "values": [[t, _text(v)] for t, v in points]}
        for labels, points in series
    ]
    return _success({"resultType": "matrix", "result": result})


def ranged(form: Mapping[str, str], value: Callable[[float], float | None]) -> Answer:
    """200 with a range query's answer over the form's ``start``, ``end`` and ``step``: one
    series without labels, ``value(t)`` at each step (None: no point there; no point at all:
    no series)."""
    start, end, step = (float(form[key]) for key in ("start", "end", "step"))
    points = []
    at = start
    while at <= end + 1e-6:
        found = value(at)
        if found is not None:
            points.append((at, found))
        at += step
    return matrix(({}, points)) if points else matrix()


def partial(
    answer: Answer, *, warnings: list[str] | None = None, is_partial: bool = False
) -> Answer:
    """``answer`` (a success) marked as not whole: Thanos' ``warnings``, VictoriaMetrics'
    ``isPartial``."""
    status, body = answer
    data = json.loads(body)
    if warnings:
        data["warnings"] = warnings
    if is_partial:
        data["isPartial"] = True
    return status, json.dumps(data).encode()


def error(status: int, error_type: str, message: str) -> Answer:
    """An error answer as Prometheus writes it (400 bad_data, 422 execution, 503 unavailable)."""
    body = {"status": "error", "errorType": error_type, "error": message}
    return status, json.dumps(body).encode()


def _success(data: dict[str, Any]) -> Answer:
    return 200, json.dumps({"status": "success", "data": data}).encode()


def _text(value: float) -> str:
    """Prometheus's spelling of a sample value."""
    if math.isnan(value):
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


@dataclass
class Request:
    """One request as received; ``headers`` keyed lower-case."""

    path: str
    endpoint: str
    form: dict[str, str]
    headers: dict[str, str]


@dataclass
class FakePrometheus:
    """Serves ``answer``'s choice for each POST or GET to ``/api/v1/<endpoint>``; ``delay_s``
    holds every answer back that long (a slow server)."""

    answer: Answerer
    delay_s: float = 0.0
    #: (certificate file, key file): serve https with them
    tls: tuple[Path, Path] | None = None
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._serve(urlsplit(self.path).query)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._serve(self.rfile.read(length).decode())

            def _serve(self, encoded: str) -> None:
                path = urlsplit(self.path).path
                form = {key: values[-1] for key, values in parse_qs(encoded).items()}
                endpoint = path.rsplit("/", 1)[-1]
                # header names are case-insensitive: recorded lower-cased
                headers = {key.lower(): value for key, value in self.headers.items()}
                fake.requests.append(Request(path, endpoint, form, headers))
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                # a path prefix stands for a proxy in front (Thanos, Mimir's /prometheus)
                if path.endswith(("/api/v1/query", "/api/v1/query_range")):
                    status, body = fake.answer(endpoint, form)
                else:
                    status, body = 404, b"404 page not found\n"
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the client gave up waiting
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host!s}:{port}"

    def __enter__(self) -> FakePrometheus:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
