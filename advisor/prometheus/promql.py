"""PromQL text built from values the cluster holds: a namespace, a pod or a container name is
placed in a query only through these functions, so a quote or a backslash in one (an annotation
can hold anything) can end no string and add no selector."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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


def selector(metric: str, scope: Sequence[Matcher] = (), **labels: str) -> str:
    """``metric{label="value",...}`` with every value escaped; labels in the order given, then
    ``scope``'s matchers (``--prometheus-selector``: one cluster of several)."""
    matchers = [f"{name}={string(value)}" for name, value in labels.items()]
    matchers += [str(m) for m in scope]
    return f"{metric}{{{','.join(matchers)}}}"


def duration(seconds: float) -> str:
    """A PromQL range in whole seconds (``86400s``), at least one."""
    return f"{max(1, round(seconds))}s"


@dataclass(frozen=True)
class Matcher:
    """One label matcher (``cluster="prod-eu"``), its value held unescaped."""

    name: str
    op: str
    value: str

    def __str__(self) -> str:
        return f"{self.name}{self.op}{string(self.value)}"


_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,?)')
_UNESCAPE = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def parse_matchers(text: str) -> tuple[Matcher, ...]:
    """The label matchers of ``text`` (``cluster="prod-eu",region=~"eu-.*"``: PromQL's own
    syntax, double-quoted values); ValueError naming what is wrong. The values are re-escaped
    when written, so what is parsed is what is matched."""
    found: list[Matcher] = []
    at = 0
    text = text.strip()
    while at < len(text):
        match = _MATCHER.match(text, at)
        if match is None:
            raise ValueError(
                f'not a label matcher at {text[at : at + 30]!r} (expected name="value", '
                "with =, !=, =~ or !~, comma-separated)"
            )
        name, op, raw, comma = match.groups()
        value = re.sub(r"\\(.)", lambda m: _UNESCAPE.get(m.group(1), "\\" + m.group(1)), raw)
        if op in ("=~", "!~"):
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"{name}{op}: not a regular expression ({exc})") from None
        found.append(Matcher(name, op, value))
        at = match.end()
        if not comma and at < len(text):
            raise ValueError(f"expected a comma before {text[at : at + 30]!r}")
        if comma and at >= len(text):
            raise ValueError("a comma ends the matchers")
    if not found:
        raise ValueError("no label matcher given")
    return tuple(found)
