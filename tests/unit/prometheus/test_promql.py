"""PromQL text from cluster values: every value escaped, so no value can end a string."""

from __future__ import annotations

import re

import pytest

from advisor.prometheus import promql


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("ml", '"ml"'),
        ('a"b', '"a\\"b"'),
        ("a\\b", '"a\\\\b"'),
        ('x"} or vector(1) #', '"x\\"} or vector(1) #"'),
        ("line\nbreak\ttab", '"line\\nbreak\\ttab"'),
        ("bell\x07", '"bell\\x07"'),
        ("ünïcode", '"ünïcode"'),
    ],
)
def test_string_escapes_quotes_backslashes_and_controls(value: str, literal: str) -> None:
    assert promql.string(value) == literal


def test_an_escaped_string_reads_back_as_the_value() -> None:
    # Go's strconv.Unquote, which PromQL uses, reads these escapes as Python's unicode_escape
    # does for ASCII: the literal decodes to exactly the value
    value = 'q"uo\\te\n\x01'
    literal = promql.string(value)
    assert literal[0] == literal[-1] == '"'
    assert literal[1:-1].encode().decode("unicode_escape") == value
    assert '"' not in literal[1:-1].replace('\\"', "")


def test_inside_string_is_the_literal_without_quotes() -> None:
    assert promql.inside_string('we"b') == 'we\\"b'


def test_literal_regex_matches_only_the_values() -> None:
    literal = promql.literal_regex(["web-1.a", "web-(2)", "web-1.a"])
    pattern = literal[1:-1].encode().decode("unicode_escape")
    assert pattern == r"web-\(2\)|web-1\.a"
    matcher = re.compile(f"^(?:{pattern})$")
    assert matcher.match("web-1.a") and matcher.match("web-(2)")
    assert not matcher.match("web-1xa") and not matcher.match("web-2")


def test_selector_escapes_every_value_in_order() -> None:
    assert (
        promql.selector("m", namespace="ml", container='c"') == 'm{namespace="ml",container="c\\""}'
    )


@pytest.mark.parametrize(("seconds", "text"), [(86400, "86400s"), (0.2, "1s"), (90.6, "91s")])
def test_duration_whole_seconds_at_least_one(seconds: float, text: str) -> None:
    assert promql.duration(seconds) == text
