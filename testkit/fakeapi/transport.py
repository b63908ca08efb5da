"""The HTTP side of the fake API server: a request read and recorded, the server's answer (or
its injected fault, or a Status for an ApiError) written back, over real HTTP on 127.0.0.1; and
the kubeconfig a client reaches it with.
"""

from __future__ import annotations

import json
import socket
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import yaml

from testkit.fakeapi.errors import ApiError
from testkit.fakeapi.recorded import Recorded


class Answering(Protocol):
    """What the HTTP side asks of the server behind it (``FakeApiServer``): it records each
    request, may hold it until the server stops, and answers it. A protocol, so this module
    does not import the server that imports it."""

    def record(self, request: Recorded) -> bool: ...

    def wait_stopped(self) -> None: ...

    def handle(
        self, request: Recorded, auth: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]: ...


class FaultError(Exception):
    def __init__(self, status: int, headers: dict[str, str]) -> None:
        super().__init__(status)
        self.status, self.headers = status, headers


def _status(code: int, reason: str, message: str, details: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "code": code,
    }
    if reason:  # omitted when empty, as a webhook that gives none leaves it
        body["reason"] = reason
    if details:
        body["details"] = details
    return body


_FAULT_REASONS = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}


def handler_for(server: Answering) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            # headers and body are two writes: without this, Nagle's algorithm holds the body
            # until the client's delayed ACK, 40 ms per request on a kept-alive connection
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _serve(self) -> None:
            split = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip() or None
            try:
                body = yaml.safe_load(raw) if raw else None
            except yaml.YAMLError:
                body = raw.decode(errors="replace")
            accept = self.headers.get("Accept")
            recorded = Recorded(self.command, split.path, query, content_type, body, accept=accept)
            if server.record(recorded):
                server.wait_stopped()
                self.close_connection = True
                return
            headers: dict[str, str] = {}
            try:
                status, payload, headers = server.handle(
                    recorded, self.headers.get("Authorization")
                )
            except ApiError as err:
                status, payload = err.code, _status(err.code, err.reason, err.message, err.details)
                headers = err.headers
            except FaultError as fault:
                status, headers = fault.status, fault.headers
                reason = _FAULT_REASONS.get(fault.status, "InternalError")
                payload = _status(status, reason, f"injected fault {status}", {})
            recorded.status = status
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def do_OPTIONS(self) -> None:
            self._method_not_allowed()

        def do_HEAD(self) -> None:
            self._method_not_allowed()

        def _method_not_allowed(self) -> None:
            data = json.dumps(_status(405, "MethodNotAllowed", "method not allowed", {})).encode()
            self.send_response(405)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def write_kubeconfig(path: Path, *, token: str, server: str) -> Path:
    """A kubeconfig at ``path`` for ``server`` with a bearer ``token``, namespace ml."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "advisor", "user": {"token": token}}],
        "contexts": [
            {
                "name": "fake",
                "context": {"cluster": "fake", "user": "advisor", "namespace": "ml"},
            }
        ],
        "current-context": "fake",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def refused_port() -> int:
    """A local port nothing listens on (bound, then closed): connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
