"""The Prometheus flags checked: bad input is a UsageError before anything is asked of the
cluster or of Prometheus."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

from advisor.errors import Opt, UsageError
from advisor.models.times import format_age
from advisor.prometheus import Settings
from advisor.prometheus.promql import Matcher, parse_matchers
from advisor.prometheus.queries import STEP_SPAN as STEP

DEFAULT_TIMEOUT_S = 10.0


def prometheus_settings(
    url: str | None,
    *,
    token_file: Path | None = None,
    ca_file: Path | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    selector: str | None = None,
) -> Settings | None:
    """The checked settings (None without ``url``)."""
    if not url:
        if token_file or ca_file or headers or selector:
            raise UsageError(
                Opt("prometheus_token_file"), ", ", Opt("prometheus_ca_file"), ", ",
                Opt("prometheus_header"), " and ", Opt("prometheus_selector"), " need ",
                Opt("prometheus_url"),
            )  # fmt: skip
        return None
    if not url.startswith(("http://", "https://")):
        raise UsageError(Opt("prometheus_url"), f" {url!r}: must start with http:// or https://")
    for option, path in (("prometheus_token_file", token_file), ("prometheus_ca_file", ca_file)):
        if path is not None and not path.is_file():
            raise UsageError(Opt(option), f" {path}: no such file")
    for key in headers or {}:
        if not key or any(c in key for c in ":\r\n ") or not key.isascii():
            raise UsageError(Opt("prometheus_header"), f" {key!r}: not a header name")
    if not timeout_s > 0:
        raise UsageError(Opt("prometheus_timeout"), " must be more than 0 seconds")
    return Settings(
        url=url,
        token_file=token_file,
        ca_file=ca_file,
        headers=dict(headers or {}),
        timeout_s=timeout_s,
        scope=checked_selector(selector),
    )


def checked_selector(text: str | None) -> tuple[Matcher, ...]:
    """``--prometheus-selector``'s matchers (none for an empty value), or a UsageError."""
    if not text or not text.strip():
        return ()
    inner = text.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1]
    try:
        return parse_matchers(inner)
    except ValueError as exc:
        raise UsageError(Opt("prometheus_selector"), f" {text!r}: {exc}") from None


def check_window(window: timedelta | None, warm_up: timedelta | None = None) -> None:
    """``--window`` holds at least one of the queries' steps: a shorter one has no sample;
    ``--warm-up`` is no negative time."""
    if window is not None and window < STEP:
        raise UsageError(
            Opt("window"),
            f" {format_age(window)}: must be at least {format_age(STEP)}, the queries' step",
        )
    if warm_up is not None and warm_up < timedelta(0):
        raise UsageError(Opt("warm_up"), " must be 0 or more")
