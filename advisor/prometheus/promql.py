"""PromQL text built from values the cluster holds: a namespace, a pod or a container name is
placed in a query only through these functions, so a quote or a backslash in one (an annotation
can hold anything) can end no string and add no selector."""

from __future__ import annotations

import re
from collections.abc import Iterable

#: RE2's metacharacters: escaped in a value matched literally by ``=~``
_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")


def string(value: str) -> str:
    """``value`` as a PromQL double-quoted string literal, quotes included. PromQL strings take
    Go's escapes: a backslash, the quote, and control characters must be escaped."""
    out = []
    for char in value:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def inside_string(value: str) -> str:
    """``value`` escaped for a place inside a string literal someone else wrote (a latency
    query's ``"$namespace"``): ``string`` without its quotes."""
    return string(value)[1:-1]


def literal_regex(values: Iterable[str]) -> str:
    """An RE2 alternation matching exactly ``values`` (PromQL anchors ``=~`` at both ends),
    as a PromQL string literal."""
    return string("|".join(_RE2_SPECIAL.sub(r"\\\1", value) for value in sorted(set(values))))


def selector(metric: str, **labels: str) -> str:
    """``metric{label="value",...}`` with every value escaped; labels in the order given."""
    matchers = ",".join(f"{name}={string(value)}" for name, value in labels.items())
    return f"{metric}{{{matchers}}}"


def duration(seconds: float) -> str:
    """A PromQL range in whole seconds (``86400s``), at least one."""
    return f"{max(1, round(seconds))}s"
