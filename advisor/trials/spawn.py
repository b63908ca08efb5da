"""Starting a trial child as a fresh interpreter: the starter used when forking is not possible."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor.trials.environment import trial_program
from advisor.trials.supervise import Child, PopenChild


@dataclass(frozen=True)
class SpawnStarter:
    """A fresh interpreter per trial: ``program`` (default: the real trial child; the tests pass
    fake ones) plus ``--request FILE --result FILE``."""

    program: Sequence[str] = field(default_factory=trial_program)
    forked: bool = False

    def start(
        self, *, request_file: Path, result_file: Path, output_file: Path, env: dict[str, str]
    ) -> Child:
        argv = [
            *self.program,
            "--request",
            str(request_file),
            "--result",
            str(result_file),
        ]
        with output_file.open("ab") as output:
            try:
                process = subprocess.Popen(
                    argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                raise OSError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        return PopenChild(process)
