"""The calibrate command's flags: bad values are one-line usage errors before any work starts."""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

import pytest

from advisor.calibrate.search import SearchSettings
from advisor.cli import main
from advisor.cli._progress import bar_line, progress_reporter
from advisor.cli._sweep_flags import add_sweep_flags, options_from_args
from advisor.errors import ModelError, UsageError
from advisor.models import DEFAULT_BUDGET_S, MIN_BUDGET_S, Progress


def fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    started = time.monotonic()
    code = main(["calibrate", *argv])
    took = time.monotonic() - started
    err = capsys.readouterr().err.strip()
    assert took < 5, "a flag error must not start any work"
    return code, err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--budget", "0"], "--budget must be a positive number of seconds, got '0'"),
        (["--budget", "-5"], "--budget must be a positive number of seconds"),
        (["--budget", "abc"], "--budget must be a positive number of seconds, got 'abc'"),
        (["--budget", "nan"], "--budget must be a positive number of seconds"),
        (["--budget", "inf"], "--budget must be a positive number of seconds"),
        (["--budget", "10"], "--budget 10 s is too small to measure anything"),
        (["--objective", "slo"], "--objective slo needs --p99-ms"),
        (["--p99-ms", "20"], "--p99-ms only applies to --objective slo"),
        (["--objective", "slo", "--p99-ms", "0"], "--p99-ms must be a positive number"),
        (["--objective", "fastest"], "invalid choice: 'fastest'"),
        (["--batch-size", "0"], "--batch-size must be at least 1, got 0"),
        (["--batch-size", "two"], "--batch-size must be a whole number, got 'two'"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--concurrency", "999"], "--concurrency: Input should be less than or equal to 256"),
        (["--format", "xml"], "invalid choice: 'xml'"),
        (["--budget", "1e9"], "--budget: Input should be less than or equal to 86400"),
        (["--signature", ""], "--signature: String should have at least 1 character"),
        (["--model", " "], "--model must not be empty"),
        (["--report", "/nonexistent-dir/r.html"], "folder /nonexistent-dir does not exist"),
        (["--report", "/tmp"], "--report /tmp: is a directory"),
    ],
)
def test_bad_flags_are_one_line_usage_errors(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = fails(argv, capsys)
    assert code == UsageError.exit_code
    assert "\n" not in err
    assert err.startswith("tf-thread-advisor: error:")
    assert expected in err
    assert "Traceback" not in err


def test_missing_model_is_a_model_error_before_any_trial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = fails(["--model", str(tmp_path / "nope"), "--budget", "30"], capsys)
    assert code == ModelError.exit_code
    last = err.splitlines()[-1]
    assert last.startswith("tf-thread-advisor: error:")
    assert last.endswith(f"{tmp_path / 'nope'}: no such file or directory")
    assert "Traceback" not in err


def test_empty_model_directory_is_a_model_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = fails(["--model", str(tmp_path), "--budget", "30"], capsys)
    assert code == ModelError.exit_code
    assert "empty" in err


def test_minimum_budget_covers_the_search_plan_plus_inspection() -> None:
    # the search alone needs this much for the baseline and two settings at the shortest trial
    assert SearchSettings().min_budget_s(2) + 4.0 <= MIN_BUDGET_S


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_sweep_flags(parser)
    return parser.parse_args(argv)


def test_options_from_args_for_the_run_command() -> None:
    options = options_from_args(
        parse(
            [
                "--model",
                "/m.keras",
                "--batch-size",
                "4",
                "--concurrency",
                "2",
                "--objective",
                "slo",
                "--p99-ms",
                "12.5",
                "--budget",
                "90",
            ]
        )
    )
    assert options.model_path == "/m.keras"
    assert options.batch_size == 4
    assert options.concurrency == 2
    assert options.objective == "slo"
    assert options.p99_slo_ms == 12.5
    assert options.budget_s == 90
    defaults = options_from_args(parse([]))
    assert defaults.objective == "latency"
    assert defaults.budget_s == DEFAULT_BUDGET_S == 45
    assert defaults.model_path is None
    assert defaults.signature == "serving_default"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


AT_15 = {"elapsed_s": 14.6, "budget_s": 60.0}


def test_progress_is_a_redrawn_bar_on_a_tty() -> None:
    stream = _Tty()
    with progress_reporter(stream) as progress:
        assert progress is not None
        progress(Progress(text="round 0 trial 2/5: intra=1 inter=1 (1.0 s window)", **AT_15))
        progress(
            Progress(text="round 0: intra=1 inter=1 -> p50 5.0 ms", elapsed_s=30.2, budget_s=60)
        )
    out = stream.getvalue()
    assert out.count("\r") == 2
    assert "[#####...............]  15/60 s  round 0 trial 2/5" in out
    assert "[##########..........]  30/60 s" in out
    assert out.endswith("\n")


def test_no_bar_when_not_a_tty() -> None:
    stream = io.StringIO()
    with progress_reporter(stream) as progress:
        assert progress is None
    assert stream.getvalue() == ""


def test_no_bar_under_json_logs_even_on_a_tty() -> None:
    # --log-format json promises one JSON object per stderr line; a bar line is not one
    stream = _Tty()
    with progress_reporter(stream, log_format="json") as progress:
        assert progress is None
    assert stream.getvalue() == ""


def test_bar_line_leaves_other_lines_alone() -> None:
    assert bar_line(Progress(text="inspecting the model")) == "inspecting the model"
    assert bar_line(Progress(text="done", elapsed_s=60, budget_s=60)).startswith(
        "[" + "#" * 20 + "]"
    )


def test_the_bar_shows_the_seconds_the_plain_line_shows() -> None:
    # one event, two renderings: the log line's "[ 15/60 s]" and the bar's " 15/60 s" agree
    event = Progress(text="round 0 trial 2/5", **AT_15)
    assert event.line == "[ 15/60 s] round 0 trial 2/5"
    assert bar_line(event) == "[#####...............]  15/60 s  round 0 trial 2/5"
