"""The program tunes the garbage collector for the one command its process runs (the modules
frozen out of collections, the youngest generation collected less often); a caller driving
``main(argv)`` in its own process keeps its collector as it was."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import REPO

SCRIPT = """
import contextlib, gc, io, json, sys
from advisor.cli import main
default = gc.get_threshold()
sys.argv = ["tf-thread-advisor", "probe", "--format", "json"]
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["probe", "--format", "json"]) if {caller} else main()
print(json.dumps({{"code": code, "default": default, "now": gc.get_threshold(),
                  "frozen": gc.get_freeze_count()}}))
"""


def _collector_after(caller: bool) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(caller=caller)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answer: dict[str, object] = json.loads(done.stdout)
    assert answer["code"] == 0, done.stderr
    return answer


def test_the_program_freezes_the_modules_and_collects_the_young_less_often() -> None:
    answer = _collector_after(caller=False)
    default, now = answer["default"], answer["now"]
    assert isinstance(default, list) and isinstance(now, list)
    assert now[0] > default[0]
    assert now[1:] == default[1:]
    assert isinstance(answer["frozen"], int) and answer["frozen"] > 10_000


def test_a_caller_keeps_its_collector() -> None:
    answer = _collector_after(caller=True)
    assert answer["now"] == answer["default"]
    assert answer["frozen"] == 0
