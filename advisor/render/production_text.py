"""Production's figures and evidence as every output words them (``status``, ``plan``, the
revert Event): one wording, so the table, the plan and the Event cannot say it differently."""

from __future__ import annotations

from advisor.models import Production
from advisor.models.production import REVERT_WINDOWS


def share(value: float | None) -> str:
    return "?" if value is None else f"{value:.0%}"


def rate(value: float | None) -> str:
    """Requests per second: whole numbers from 10 up, two significant figures below."""
    if value is None:
        return "?"
    return f"{value:.0f}" if abs(value) >= 10 else f"{value:.2g}"


def evidence(production: Production) -> str:
    """``day t-test over 9 earlier days, p 0.003 (level 0.05 a side), window 2, regressed 2 of
    the 2 in a row a revert needs``; "" where no test ran."""
    p = production
    if p.test is None or p.p_value is None or p.alpha is None:
        return ""
    said = f"day t-test over {p.days} earlier days, p {p.p_value:.2g} (level {p.alpha:g} a side)"
    if p.window is not None:
        said += f", window {p.window}"
    if p.regressed_windows:
        said += f", regressed {p.regressed_windows} of the {REVERT_WINDOWS} in a row a revert needs"
    return said
