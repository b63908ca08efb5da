"""PromQL text from cluster values: every value escaped, so no value can end a string."""

from __future__ import annotations

import re

import pytest

from advisor.prometheus import promql
from advisor.prometheus.promql import parse_matchers, selector


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


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ('cluster="prod-eu"', ['cluster="prod-eu"']),
        (
            ' cluster = "a" , env!="dev",region=~"eu-.*" ',
            ['cluster="a"', 'env!="dev"', 'region=~"eu-.*"'],
        ),
        ('c="a\\"b"', ['c="a\\"b"']),
    ],
)
def test_matchers_parse_and_render_escaped(text: str, rendered: list[str]) -> None:
    assert [str(m) for m in parse_matchers(text)] == rendered


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("cluster=prod", "not a label matcher"),
        ('cluster="a",', "a comma ends"),
        ('cluster="a" env="b"', "expected a comma"),
        ('1x="a"', "not a label matcher"),
        ('c=~"("', "not a regular expression"),
        ("", "no label matcher"),
        ('c="a"} or vector(1) #', "expected a comma"),
    ],
)
def test_bad_matchers_are_refused(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_matchers(text)


def test_a_selector_gets_the_scope_last() -> None:
    scope = parse_matchers('cluster="eu"')
    assert selector("m", scope, namespace="ml") == 'm{namespace="ml",cluster="eu"}'
