"""The command line as a first-time user meets it: one error prefix, global flags on either side
of the subcommand, help text for every flag, a guess for a typo, and a missing cluster config that
says where one can come from.

Most cases run ``advisor.cli.main`` in-process; the commands a new user types first also
run as ``python3 -m advisor`` so the prefix is counted on the real process's stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor import errors
from advisor.cli import build_parser, main
from advisor.pipeline import Instruments
from tests.support import PROBE_TREES, REPO

PREFIX = "tf-thread-advisor: error: "
V1_TREE = str(PROBE_TREES / "v1")


@pytest.fixture(autouse=True)
def _no_cluster_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("TFTA_POD_NAMESPACE", "KUBERNETES_SERVICE_HOST", "KUBECONFIG"):
        monkeypatch.delenv(name, raising=False)
    for name in ("TFTA_CPU_LIMIT", "TFTA_CPU_REQUEST", "TFTA_NODE_NAME", "TFTA_POD_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config to fall back on


def one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(PREFIX), lines[0]
    assert lines[0].count("error:") == 1, lines[0]
    assert lines[0].count("tf-thread-advisor:") == 1, lines[0]
    return lines[0]


def run_main(
    capsys: pytest.CaptureFixture[str], *argv: str, instruments: Instruments | None = None
) -> tuple[int, str, str]:
    code = main(list(argv), instruments=instruments)
    out, err = capsys.readouterr()
    return code, out, err


def run_process(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TFTA_POD_NAMESPACE")}
    return subprocess.run(
        [sys.executable, "-m", "advisor", *argv],
        cwd=REPO,
        env={**base, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# --------------------------------------------------------------------------------------------------
# one prefix


@pytest.mark.parametrize(
    "argv",
    [
        ["--bugdet", "30"],
        ["calibrate", "--bugdet", "30"],
        ["calbrate"],
        [],
        ["probe", "--format", "xml"],
        ["probe", "--debug", "--format", "xml"],
        ["run", "--budget"],
        ["--log-level", "loud", "probe"],
    ],
    ids=lambda argv: " ".join(argv) or "nothing",
)
def test_every_usage_error_has_exactly_one_prefix(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run_main(capsys, *argv)
    assert (code, out) == (errors.UsageError.exit_code, "")
    line = one_line(err)
    assert line.endswith("--help)"), line  # points at the help of the parser that failed


def test_the_issue_command_prints_one_prefix_from_the_real_process(tmp_path: Path) -> None:
    proc = run_process("--bugdet", "30", env={"HOME": str(tmp_path)})
    assert proc.returncode == errors.UsageError.exit_code
    assert proc.stdout == ""
    line = one_line(proc.stderr)
    assert "--bugdet" in line and "--budget" in line, line


# --------------------------------------------------------------------------------------------------
# global flags before or after the subcommand


def test_probe_debug_works_after_the_subcommand(tmp_path: Path) -> None:
    proc = run_process("probe", "--debug", "--host-root", V1_TREE, env={"HOME": str(tmp_path)})
    assert (proc.returncode, proc.stderr) == (0, "")
    assert "effective 1.5" in proc.stdout


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["probe"], {"debug": False, "log_format": "text", "log_level": "info"}),
        (
            ["--debug", "--log-format", "json", "--log-level", "error", "probe"],
            {"debug": True, "log_format": "json", "log_level": "error"},
        ),
        (
            ["probe", "--debug", "--log-format", "json", "--log-level", "error"],
            {"debug": True, "log_format": "json", "log_level": "error"},
        ),
        # one before, others after: the subcommand must not reset the one given before it
        (
            ["--log-level", "warning", "calibrate", "--log-format=json"],
            {"debug": False, "log_format": "json", "log_level": "warning"},
        ),
        # given on both sides: the later one wins, as with any repeated flag
        (
            ["--log-level", "warning", "run", "--log-level", "debug"],
            {"debug": False, "log_format": "text", "log_level": "debug"},
        ),
    ],
)
def test_global_flags_parse_on_either_side(argv: list[str], expected: dict[str, Any]) -> None:
    args = build_parser().parse_args(argv)
    assert {key: getattr(args, key) for key in expected} == expected


def test_log_flags_after_the_subcommand_configure_the_logs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_main(
        capsys, "probe", "--host-root", V1_TREE, "--log-level", "warning", "--log-format", "json"
    )
    assert (code, err) == (0, "")
    logger = logging.getLogger("advisor")
    assert logger.level == logging.WARNING
    (handler,) = logger.handlers
    assert type(handler.formatter).__name__ == "_JsonFormatter"


def test_debug_after_the_subcommand_shows_an_unexpected_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def explode(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("the probe exploded")

    code, _, err = run_main(capsys, "probe", "--debug", instruments=Instruments(probe=explode))
    assert code == errors.EXIT_CODES["internal"]
    assert err.startswith("Traceback (most recent call last):")
    assert err.splitlines()[-1].startswith(PREFIX + "internal error: RuntimeError")


# --------------------------------------------------------------------------------------------------
# help text


def _walk(
    parser: argparse.ArgumentParser, path: str
) -> list[tuple[str, argparse.Action | None, str | None]]:
    """(where, action, help) for every action of the parser and of each subcommand."""
    found: list[tuple[str, argparse.Action | None, str | None]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:  # the subcommands' one-line help
                found.append((f"{path} {choice.dest}", None, choice.help))
            for name, sub in action.choices.items():
                found += _walk(sub, f"{path} {name}")
            continue
        name = "/".join(action.option_strings) or action.dest
        found.append((f"{path} {name}", action, action.help))
    return found


def test_every_flag_of_every_subcommand_has_help_text() -> None:
    parser = build_parser()
    walked = _walk(parser, "tf-thread-advisor")
    commands = {where.split()[1] for where, _, _ in walked if len(where.split()) > 2}
    assert {"probe", "calibrate", "run", "validate", "check"} <= commands
    assert len(walked) > 40  # the walk reached the subcommands' flags, not just the top level
    missing = [
        where
        for where, _, text in walked
        if text is None or text == argparse.SUPPRESS or not str(text).strip()
    ]
    assert missing == []


def test_every_subcommand_lists_the_global_flags_in_its_help() -> None:
    parser = build_parser()
    for name in ("probe", "calibrate", "run", "validate", "check"):
        text = parser._subparsers._group_actions[0].choices[name].format_help()  # type: ignore[union-attr]
        for flag in ("--debug", "--log-format", "--log-level"):
            assert flag in text, (name, flag)


# --------------------------------------------------------------------------------------------------
# did you mean


@pytest.mark.parametrize(
    "argv, says",
    [
        (["calbrate"], "unknown command 'calbrate'; did you mean 'calibrate'?"),
        (["--log-level", "error", "prob"], "did you mean 'probe'?"),
        (
            ["calibrate", "--bugdet", "30"],
            "unrecognized arguments: --bugdet 30; did you mean --budget?",
        ),
        (["run", "--forse"], "did you mean --force?"),
        (["probe", "--debgu"], "did you mean --debug?"),
        (["probe", "--format", "jsn"], "invalid choice: 'jsn'; did you mean 'json'?"),
        (["calibrate", "--objective", "latncy"], "did you mean 'latency'?"),
        # before the subcommand: argparse would take "30" for it; the typo is the flag
        (["--bugdet", "30"], "--bugdet; did you mean --budget? (an option of calibrate, run"),
        (
            ["--budget", "30"],
            "--budget is an option of calibrate, run, plan: it goes after the command",
        ),
        (
            ["run", "--bugdet", "3", "--forse"],
            "did you mean --budget for --bugdet?; did you mean --force for --forse?",
        ),
    ],
)
def test_a_near_miss_gets_a_suggestion(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, out, err = run_main(capsys, *argv)
    assert (code, out) == (errors.UsageError.exit_code, "")
    assert says in one_line(err)


@pytest.mark.parametrize(
    "argv", [["frobnicate"], ["probe", "--zzzzzz"], ["probe", "--format", "qqq"]]
)
def test_nothing_close_gets_no_guess(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, _, err = run_main(capsys, *argv)
    assert code == errors.UsageError.exit_code
    assert "did you mean" not in one_line(err)


# --------------------------------------------------------------------------------------------------
# no cluster config

HOW_TO = ("--kubeconfig", "KUBECONFIG", "in-cluster config", "ServiceAccount")


def test_run_without_any_kubeconfig_says_how_to_give_one(tmp_path: Path) -> None:
    # the command as a new user runs it: no ~/.kube/config, no KUBECONFIG, not in a pod
    proc = run_process(
        "run", "--configmap", "foo", "--namespace", "bar", env={"HOME": str(tmp_path)}
    )
    assert proc.returncode == errors.UsageError.exit_code
    assert proc.stdout == ""
    line = one_line(proc.stderr)
    for word in (*HOW_TO, "~/.kube/config"):
        assert word in line, line


@pytest.mark.parametrize(
    "env, tried",
    [
        ({"KUBECONFIG": "{tmp}/nowhere"}, "KUBECONFIG={tmp}/nowhere"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "in-cluster config, as KUBERNETES_SERVICE_HOST"),
    ],
)
def test_a_failed_cluster_config_names_what_was_tried_and_the_ways_out(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    env: dict[str, str],
    tried: str,
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value.format(tmp=tmp_path))
    code, out, err = run_main(capsys, "validate", "--configmap", "foo", "--namespace", "bar")
    assert (code, out) == (errors.UsageError.exit_code, "")
    line = one_line(err)
    assert tried.format(tmp=tmp_path) in line
    for word in HOW_TO:
        assert word in line, line
