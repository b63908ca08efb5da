"""A pool of long-lived measuring children (benchmarks/harness_child.py), one per thread setting.

Why long-lived: TF fixes its thread pools at start-up, so each setting needs its own process; but
re-importing TF for every round would make an interleaved, multi-round comparison of ~20 settings
cost minutes per scenario. The children start once per subject (two at a time, outside any
quota: start-up is not what is measured), then move into each scenario's cgroup for their turns.
An idle child blocks on stdin and uses no CPU, so only the one measuring spends quota.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from advisor.models import TENSORFLOW, ThreadSetting
from benchmarks import REPO
from benchmarks.cgroups import RealCgroup, move

#: the measuring child, started as ``python -m`` from the checkout's root
CHILD = "benchmarks.harness_child"
START_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Arm:
    """One measuring process: a thread setting (TF's default: nothing set, as a pod without the
    advice) and which of its processes this is.

    ``number`` 2 is the same setting in a second process of its own, measured in the same rounds:
    the A/A arm, whose figure against the first arm's is the judge's own noise
    (benchmarks/arms.py).
    """

    setting: ThreadSetting
    number: int = 1

    @classmethod
    def of(cls, intra: int, inter: int) -> Arm:
        return cls(ThreadSetting(intra=intra, inter=inter))

    @property
    def key(self) -> str:
        """``default``, ``2/1`` or ``2/1#2``: the name a run records the arm's figures under."""
        base = "default" if self.setting.is_default else self.setting.label
        return base if self.number == 1 else f"{base}#{self.number}"

    def second_arm(self) -> Arm:
        return dataclasses.replace(self, number=2)

    def env(self, base: dict[str, str]) -> dict[str, str]:
        """The environment a Deployment gets from the advice ConfigMap (or none of it)."""
        env = {k: v for k, v in base.items() if k not in TENSORFLOW.thread_names}
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
        env.update(TENSORFLOW.setting_env(self.setting))
        return env


DEFAULT = Arm(ThreadSetting.TF_DEFAULT)


@dataclass
class Child:
    setting: Arm
    proc: subprocess.Popen[str]
    spawned: float
    ready_s: float | None = None
    info: dict[str, Any] = field(default_factory=dict)


class HarnessError(RuntimeError):
    """A measuring child died, hung or answered nonsense."""


def _read_line(proc: subprocess.Popen[str], timeout_s: float, what: str) -> dict[str, Any]:
    stdout: IO[str] | None = proc.stdout
    if stdout is None:
        raise HarnessError(f"{what}: no stdout pipe")
    ready, _, _ = select.select([stdout], [], [], timeout_s)
    if not ready:
        raise HarnessError(f"{what}: no answer within {timeout_s:.0f} s")
    line = stdout.readline()
    if not line:
        raise HarnessError(f"{what}: child exited with {proc.wait(timeout=5)}")
    answer: dict[str, Any] = json.loads(line)
    if "error" in answer:
        raise HarnessError(f"{what}: {answer['error']}")
    return answer


class Pool:
    """Children for one subject; ``close()`` (or the context manager) ends every one of them."""

    def __init__(self, subject_args: Sequence[str], log_dir: Path, parallel: int = 2) -> None:
        self.subject_args = list(subject_args)
        self.log_dir = log_dir
        self.parallel = parallel
        self.children: dict[str, Child] = {}

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _spawn(self, setting: Arm) -> Child:
        name = setting.key.replace("/", "_").replace("#", "-")
        log = (self.log_dir / f"child-{name}.log").open("a")
        argv = [sys.executable, "-m", CHILD, "serve", *self.subject_args]
        proc = subprocess.Popen(
            argv,
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=setting.env(dict(os.environ)),
            text=True,
        )
        log.close()
        return Child(setting, proc, time.monotonic())

    def ensure(self, settings: Sequence[Arm]) -> None:
        """Start the children missing for ``settings``, ``parallel`` at a time."""
        missing = [s for s in dict.fromkeys(settings) if s.key not in self.children]
        for start in range(0, len(missing), self.parallel):
            batch = [self._spawn(s) for s in missing[start : start + self.parallel]]
            for child in batch:
                self.children[child.setting.key] = child
            for child in batch:
                child.info = _read_line(child.proc, START_TIMEOUT_S, f"start {child.setting.key}")
                child.ready_s = time.monotonic() - child.spawned

    def move_all(self, group: RealCgroup) -> None:
        for child in self.children.values():
            move(group, child.proc.pid)

    def measure(
        self, setting: Arm, window_s: float, warmup_s: float, concurrency: int
    ) -> dict[str, Any]:
        child = self.children[setting.key]
        if child.proc.stdin is None:
            raise HarnessError(f"measure {setting.key}: no stdin pipe")
        cmd = {
            "cmd": "measure",
            "window_s": window_s,
            "warmup_s": warmup_s,
            "concurrency": concurrency,
        }
        child.proc.stdin.write(json.dumps(cmd) + "\n")
        child.proc.stdin.flush()
        # bounded: a throttled child gets 20x its window before it counts as hung
        limit = 30.0 + 20 * (window_s + warmup_s)
        return _read_line(child.proc, limit, f"measure {setting.key}")

    def close(self) -> None:
        for child in self.children.values():
            with contextlib.suppress(OSError, ValueError):
                if child.proc.stdin is not None:
                    child.proc.stdin.write('{"cmd": "quit"}\n')
                    child.proc.stdin.close()
        for child in self.children.values():
            try:
                child.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.proc.kill()
                child.proc.wait(timeout=10)
            if child.proc.stdout is not None:
                child.proc.stdout.close()
        self.children.clear()
