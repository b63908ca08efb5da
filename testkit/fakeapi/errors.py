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


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    """The 404 a real server gives for an object that is not there: ``jobs.batch "x" not
    found``, with the details naming it."""
    qualified = f"{resource}.{group}" if group else resource
    details = {"name": name, **({"group": group} if group else {}), "kind": resource}
    return ApiError(404, "NotFound", f'{qualified} "{name}" not found', details)
