"""The A/B harness (testkit/outputs_ab) can fail: a changed output is a DIFF and exit 1, each part
of an outcome counts, and what it takes out before comparing is only what varies between runs;
its children run the checkout they are given, with the wall clock frozen."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from testkit.outputs_ab import side
from testkit.outputs_ab.compare import Normalizer, Outcome, differences
from testkit.outputs_ab.harness import main
from tests.support import REPO

SAME = Outcome(0, "ok: advice\n", "2026-11-28T00:00:01 INFO listed\n", "objects: []\n")


def test_identical_outcomes_have_no_differences() -> None:
    assert differences(SAME, Outcome(*vars(SAME).values())) == []


@pytest.mark.parametrize(
    ("part", "changed", "expected"),
    [
        ("code", 6, "exit code: base 0, branch 6"),
        ("stdout", "ok: advice \n", "+ok: advice "),
        (
            "stderr",
            "2026-11-28T00:00:01 INFO listed twice\n",
            "+2026-11-28T00:00:01 INFO listed twice",
        ),
        ("objects", "objects: [x]\n", "+objects: [x]"),
    ],
)
def test_each_part_that_differs_is_a_difference(part: str, changed: object, expected: str) -> None:
    branch = Outcome(**{**vars(SAME), part: changed})
    found = differences(SAME, branch)
    assert expected in found
    assert len(differences(SAME, branch, limit=2)) <= 2


def test_a_missing_last_newline_is_shown() -> None:
    found = differences(SAME, Outcome(0, "ok: advice", SAME.stderr, SAME.objects))
    assert "+ok: advice  [no newline at end]" in found


def test_only_what_varies_between_runs_is_taken_out() -> None:
    normal = Normalizer((("/tmp/outputs-ab-x/writes-3-base", "<scene>"),))
    stderr = (
        "2026-11-28T00:41:07 INFO plan: 3 workloads\n"
        '{"time": "2026-11-28T00:41:07.123Z", "level": "info", "message": "x"}\n'
        "tf-thread-advisor: error: cannot reach http://127.0.0.1:40211 "
        "(/tmp/outputs-ab-x/writes-3-base/kubeconfig)\n"
    )
    assert normal(stderr, log=True) == (
        "<time> INFO plan: 3 workloads\n"
        '{"time": "<time>", "level": "info", "message": "x"}\n'
        "tf-thread-advisor: error: cannot reach http://127.0.0.1:<port> (<scene>/kubeconfig)\n"
    )
    # stdout keeps a time: the advisor's clock is frozen, so a time it prints is the same
    assert normal("created 2026-11-28T00:41:07 took 0.42 s\n") == (
        "created 2026-11-28T00:41:07 took 0.42 s\n"
    )


def test_the_child_runs_the_checkout_given_with_the_clock_frozen(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "advisor").mkdir(parents=True)
    (checkout / "advisor" / "__init__.py").write_text("")
    (checkout / "advisor" / "__main__.py").write_text(
        "import sys, time\n"
        "from datetime import date, datetime, timezone\n"
        "print(datetime.now(timezone.utc).isoformat(), datetime.now().isoformat(),\n"
        "      datetime.utcnow().isoformat(), date.today().isoformat(), sys.argv[1:])\n"
        "print(time.time() > 1e9, datetime.fromtimestamp(0, timezone.utc).year)\n"
    )
    (tmp_path / "cwd").mkdir()
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    found = side.run(checkout, ["status", "-A"], now=at, cwd=tmp_path / "cwd")
    assert (found.code, found.stderr) == (0, "")
    assert found.stdout.splitlines() == [
        "2030-01-02T03:04:05+00:00 2030-01-02T03:04:05 2030-01-02T03:04:05 2030-01-02 "
        "['status', '-A']",
        "True 1970",
    ]
    assert side.advisor_file(checkout, now=at, cwd=tmp_path / "cwd") == (
        checkout / "advisor" / "__init__.py"
    )


def test_a_changed_output_is_a_diff_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate of a branch that words its answer differently, against this checkout; this
    checkout against itself is 0 differences."""
    branch = tmp_path / "branch"
    shutil.copytree(
        REPO / "advisor", branch / "advisor", ignore=shutil.ignore_patterns("__pycache__")
    )
    validate = branch / "advisor" / "cli" / "validate_cmd.py"
    text = validate.read_text()
    assert 'emit(f"ok: {described}\\n")' in text
    validate.write_text(text.replace('emit(f"ok: {described}\\n")', 'emit(f"OK: {described}\\n")'))
    only = ["--only", r"^validate \{scene\}/(advice|bad-value)\.yaml$", "--fleet", "2"]

    assert main(["--base", str(REPO), "--branch", str(branch), *only]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("DIFF rc=0 ") and out[0].endswith("validate {scene}/advice.yaml")
    assert [line for line in out if line.startswith(("    -", "    +"))][2:] == [
        "    -ok: web/tf-advice" + out[4].removeprefix("    -ok: web/tf-advice"),
        "    +OK: web/tf-advice" + out[4].removeprefix("    -ok: web/tf-advice"),
    ]
    assert out[-2].startswith("same rc=6 ")  # a refusal the change did not touch
    assert out[-1].startswith("1 of 2 commands differ")

    assert main(["--base", str(REPO), "--branch", str(REPO), *only]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("0 of 2 commands differ")
