"""The error every part of the fake raises for an HTTP answer that is not a success: the server
turns it into a ``Status`` body with the code, reason and message a real API server gives."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}
        #: sent with the Status (a Warning)
        self.headers = headers or {}
