"""What a run prints on stderr (plain lines on a non-TTY, JSON under ``--log-format json``), the
last-resort handler for the unexpected, and results that cannot be written to stdout.

The complete runs here are real processes with real trial children; only the trial program is the
dispatcher of test_hardening_faults (no TensorFlow: the logs are under test, not the model).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor import errors
from advisor.cli import main
from advisor.pipeline import Instruments
from advisor.recommend import configmap_yaml, render_configmap
from testkit.fakeapi.samples import recommendation
from tests.integration.test_hardening_faults import DISPATCHER, FAKE_TRIAL
from tests.support import REPO
from tests.support.real_parts import missing_real_part

#: the text log line: time, level, message (what ``kubectl logs`` shows)
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d (DEBUG|INFO|WARNING) \S")

#: the advisor as a program, its sweep spawning the dispatcher as the trial program
BOOTSTRAP = """
import sys
from functools import partial
from advisor.cli import main
from advisor.pipeline import Instruments
from advisor.pipeline import Instruments
from advisor.pipeline.sweep import sweep
from advisor.trials.launch import TrialPrograms
programs = TrialPrograms.spawned([sys.executable, sys.argv[1]])
fake_trials = Instruments(sweep=partial(sweep, programs=programs))
raise SystemExit(main(sys.argv[2:], instruments=fake_trials))
"""


def advisor_with_fake_trials(tmp: Path, *argv: str, stdout: Any = subprocess.PIPE) -> Any:
    script = tmp / "dispatch_trial.py"
    script.write_text(DISPATCHER.format(modes=json.dumps({}), fake=str(FAKE_TRIAL)))
    env = {k: v for k, v in os.environ.items() if k != "TFTA_POD_NAMESPACE"}
    return subprocess.run(
        [sys.executable, "-c", BOOTSTRAP, str(script), *argv],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def test_a_run_on_a_non_tty_logs_plain_lines(tmp_path: Path) -> None:
    output = tmp_path / "advice.yaml"
    proc = advisor_with_fake_trials(tmp_path, "run", "--budget", "30", "--output", str(output))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) >= 3, proc.stderr  # inspection, the plan, progress, the advice
    for line in lines:
        assert LOG_LINE.match(line), line
    # no progress bar redrawn in place, no colour: a Job's log is a file
    assert "\r" not in proc.stderr
    assert "\x1b" not in proc.stderr
    assert yaml.safe_load(output.read_text())["kind"] == "ConfigMap"
    assert any("advice: intra=" in line for line in lines)


def test_a_run_under_json_logs_is_json_on_every_stderr_line(tmp_path: Path) -> None:
    output = tmp_path / "advice.yaml"
    proc = advisor_with_fake_trials(
        tmp_path, "--log-format", "json", "run", "--budget", "30", "--output", str(output)
    )
    assert proc.returncode == 0, proc.stderr
    entries = [json.loads(line) for line in proc.stderr.splitlines()]
    assert len(entries) >= 3
    for entry in entries:
        assert set(entry) == {"time", "level", "logger", "message"}
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["time"])
        assert entry["logger"].startswith("advisor")
    assert any(e["message"].startswith("advice: intra=") for e in entries)


def test_a_failing_run_under_json_logs_ends_with_a_json_error(tmp_path: Path) -> None:
    proc = advisor_with_fake_trials(
        tmp_path, "--log-format", "json", "run", "--budget", "30", "--model", str(tmp_path / "m")
    )
    assert proc.returncode == errors.ModelError.exit_code
    entries = [json.loads(line) for line in proc.stderr.splitlines()]
    assert [e["level"] for e in entries][-1] == "error"
    assert entries[-1]["exit_code"] == errors.ModelError.exit_code
    assert str(tmp_path / "m") in entries[-1]["message"]
    assert all(e["level"] != "error" for e in entries[:-1])


@pytest.mark.parametrize(
    "argv, error",
    [
        (["--log-format", "json", "run", "--budget", "abc"], errors.UsageError),
        (["--log-format=json", "--bogus", "probe"], errors.UsageError),
        (["--log-format", "json", "probe", "--host-root", "/nonexistent"], errors.UsageError),
        (["--log-format", "json", "validate", "/nonexistent.yaml"], errors.UsageError),
    ],
    ids=["bad-value", "unknown-flag", "bad-host-root", "missing-file"],
)
def test_usage_errors_under_json_logs_are_one_json_line(
    argv: list[str], error: type[errors.AdvisorError], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == error.exit_code
    assert out == ""
    (line,) = err.splitlines()
    entry = json.loads(line)
    assert (entry["level"], entry["exit_code"]) == ("error", error.exit_code)
    assert "Traceback" not in err


# --------------------------------------------------------------------------------------------------
# the last-resort handler


@pytest.fixture
def probe_explodes() -> Instruments:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the probe exploded\non two lines")

    return Instruments(probe=explode)


def test_an_unexpected_error_is_one_line_without_a_traceback(
    capsys: pytest.CaptureFixture[str], probe_explodes: Instruments
) -> None:
    code = main(["probe"], instruments=probe_explodes)
    out, err = capsys.readouterr()
    assert code == errors.EXIT_CODES["internal"]
    assert out == ""
    (line,) = err.splitlines()
    assert line == (
        "tf-thread-advisor: error: internal error: RuntimeError: the probe exploded on two lines "
        "(rerun with --debug for details)"
    )


def test_debug_shows_the_traceback_then_the_line(
    capsys: pytest.CaptureFixture[str], probe_explodes: Instruments
) -> None:
    code = main(["--debug", "probe"], instruments=probe_explodes)
    _, err = capsys.readouterr()
    assert code == errors.EXIT_CODES["internal"]
    assert err.startswith("Traceback (most recent call last):")
    assert "in explode" in err  # the frame that raised
    assert err.splitlines()[-1].startswith("tf-thread-advisor: error: internal error: RuntimeError")


def test_an_unexpected_error_under_json_logs_is_json(
    capsys: pytest.CaptureFixture[str], probe_explodes: Instruments
) -> None:
    code = main(["--log-format", "json", "probe"], instruments=probe_explodes)
    _, err = capsys.readouterr()
    (line,) = err.splitlines()
    entry = json.loads(line)
    assert code == entry["exit_code"] == errors.EXIT_CODES["internal"]
    assert entry["message"].startswith("internal error: RuntimeError: the probe exploded")


# --------------------------------------------------------------------------------------------------
# results that cannot be written


@pytest.mark.parametrize(
    "argv",
    [["probe"], ["probe", "--format", "json"], ["validate", "{cm}"]],
    ids=["short-text", "long-json", "validate-ok-line"],
)
def test_a_full_stdout_is_an_output_error(argv: list[str], tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        missing_real_part("no /dev/full (the always-full device) on this system")
    cm = tmp_path / "cm.yaml"
    cm.write_text(configmap_yaml(render_configmap(recommendation(2, 1), "tf-advice", "ml")))
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "advisor", *[a.format(cm=cm) for a in argv]],
            cwd=REPO,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert proc.returncode == errors.OutputError.exit_code, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert (
        line
        == "tf-thread-advisor: error: stdout: cannot write the result (No space left on device)"
    )
