"""Run every command (commands.py) with the base checkout's advisor and with the branch's over the
same scene (scene.py), compare, and print one line per command.

A command that only reads runs on both sides against one server, the scene built once; the
server's objects must be the same after it as before (a command that wrote anyway is a
difference). A command that writes, or needs the scene set up for it (``SETUPS``), runs against
a fresh scene per side, built the same way (same objects, ids and times), and what the server
holds after it is compared too: every object
(uid and resourceVersion left out: the fake draws them from a counter every request moves) and
the list of writes the server answered (method, path, query, status).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from testkit.fakeapi.server import FakeApiServer
from testkit.outputs_ab import side
from testkit.outputs_ab.commands import PROBE_TREES, Command, all_commands
from testkit.outputs_ab.compare import Normalizer, Outcome, differences
from testkit.outputs_ab.files import write_files
from testkit.outputs_ab.fixed import NOW
from testkit.outputs_ab.rights import RIGHTS, SETUPS
from testkit.outputs_ab.scene import FLEET, Scene, build

_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_APPS = ("deployments", "statefulsets", "daemonsets")


def snapshot(api: FakeApiServer, *, writes: bool = True) -> str:
    """What ``api`` holds and (with ``writes``) the writes it answered, as text to compare."""
    state: dict[str, Any] = {
        "configmaps": api.configmaps.all(),
        **{resource: api.workloads.all(resource) for resource in _APPS},
        "pods": [api.pods[key] for key in sorted(api.pods)],
        "jobs": api.jobs(),
        "events": api.events(),
        "persistentvolumeclaims": api.claims.all(),
    }
    answered = [
        f"{r.method} {r.path} {json.dumps(r.query, sort_keys=True)} -> {r.status}"
        for r in (api.writes() if writes else [])
    ]
    text = json.dumps(_scrubbed(state), indent=1, sort_keys=True)
    return "\n".join(["writes:", *answered, "objects:", text, ""])


def _scrubbed(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: _scrubbed(item)
            for key, item in value.items()
            if key not in ("uid", "resourceVersion")
        }
    if isinstance(value, list):
        return [_scrubbed(item) for item in value]
    if isinstance(value, str):
        return _UUID.sub("<uid>", value)
    return value


def _normalizer(scene: Path, checkout: Path) -> Normalizer:
    """The probe's trees are inside the harness's checkout, which may be one of the sides."""
    return Normalizer(
        ((str(PROBE_TREES), "<probe>"), (str(scene), "<scene>"), (str(checkout), "<checkout>"))
    )


@dataclass
class Sides:
    """The two checkouts and where their children run."""

    base: Path
    branch: Path
    #: where the scenes' folders go
    root: Path
    fleet: int
    parallel: bool = True

    @property
    def cwd(self) -> Path:
        """An empty folder, the children's working directory (first on their sys.path)."""
        folder = self.root / "cwd"
        folder.mkdir(exist_ok=True)
        return folder

    def run(self, checkout: Path, command: Command, scene: Scene) -> Outcome:
        where = {
            "{prom}": scene.prometheus.url,
            "{scene}": str(scene.folder),
            "{probe}": str(PROBE_TREES),
        }
        argv = []
        for word in command.argv:
            filled = word
            for key, value in where.items():
                filled = filled.replace(key, value)
            argv.append(filled)
        if command.rights is not None:
            argv += ["--kubeconfig", str(scene.api.kubeconfig)]
        stdin = None
        if command.stdin is not None:
            stdin = (scene.folder / f"{command.stdin}.yaml").read_text()
        return side.run(checkout, argv, now=NOW, cwd=self.cwd, stdin=stdin)

    def reading(self, command: Command, scene: Scene) -> tuple[Outcome, Outcome]:
        """Both sides against ``scene``, at once unless not ``parallel``; RuntimeError when they
        changed what the server holds."""
        if command.rights is not None:
            RIGHTS[command.rights].grant(scene.api)
        # a dry run is a write the server answers without storing: only the objects count
        before = snapshot(scene.api, writes=False) if command.rights is not None else ""
        if self.parallel:
            with ThreadPoolExecutor(2) as pool:
                futures = [pool.submit(self.run, c, command, scene) for c in self._checkouts]
                outcomes = [f.result() for f in futures]
        else:
            outcomes = [self.run(c, command, scene) for c in self._checkouts]
        if command.rights is not None and snapshot(scene.api, writes=False) != before:
            # the shared scene is no longer what the next commands expect
            raise RuntimeError("changed the server's objects: mark it as a command that writes")
        base, branch = (
            _normalizer(scene.folder, c).outcome(o)
            for c, o in zip(self._checkouts, outcomes, strict=True)
        )
        return base, branch

    def writing(self, command: Command, index: int) -> tuple[Outcome, Outcome]:
        """Each side against a scene of its own, built the same way (and set up the same way)."""
        outcomes = []
        for name, checkout in zip(("base", "branch"), self._checkouts, strict=True):
            folder = self.root / f"writes-{index}-{name}"
            with build(folder, self.fleet) as scene:
                write_files(folder)
                if command.rights is not None:
                    RIGHTS[command.rights].grant(scene.api)
                if command.setup is not None:
                    SETUPS[command.setup](scene.api)
                scene.api.requests.clear()
                outcome = self.run(checkout, command, scene)
                outcome = replace(outcome, objects=snapshot(scene.api))
            outcomes.append(_normalizer(folder, checkout).outcome(outcome))
        return outcomes[0], outcomes[1]

    @property
    def _checkouts(self) -> tuple[Path, Path]:
        return self.base, self.branch


def compare_all(
    sides: Sides,
    commands: Sequence[Command],
    say: Callable[[str], None] = print,
    *,
    keep: Path | None = None,
) -> tuple[int, int]:
    """Run and compare ``commands``; how many differ, and how many could not be compared or
    exited on the base's side with another code than the scene expects. With ``keep``, each
    side's outcome goes to files there (``NNN-base.stdout`` ...), as compared."""
    differ = unexpected = 0
    folder = sides.root / "scene"
    with build(folder, sides.fleet) as scene:
        write_files(folder)
        for index, command in enumerate(commands):
            started = time.monotonic()
            try:
                if command.writes or command.setup is not None:
                    base, branch = sides.writing(command, index)
                else:
                    base, branch = sides.reading(command, scene)
            except Exception as exc:  # the harness's own failure: say it, go on with the rest
                unexpected += 1
                say(f"ERROR {command.label}: {type(exc).__name__}: {exc}")
                continue
            took = time.monotonic() - started
            if keep is not None:
                _keep(keep, index, command, base, branch)
            found = differences(base, branch)
            differ += bool(found)
            verdict = "DIFF" if found else "same"
            size = f"{len(base.stdout):>7} B"
            say(f"{verdict} rc={base.code:<3} {size} {took:5.1f} s  {command.label}")
            for line in found:
                say(f"    {line}")
            if base.code != command.code:
                unexpected += 1
                say(f"    SCENE: base exited {base.code}, the scene expects {command.code}")
    return differ, unexpected


def _keep(folder: Path, index: int, command: Command, base: Outcome, branch: Outcome) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "commands.txt").open("a", encoding="utf-8") as listed:
        listed.write(f"{index:03d} {command.label}\n")
    for name, outcome in (("base", base), ("branch", branch)):
        for part in ("stdout", "stderr", "objects"):
            text = getattr(outcome, part)
            if text:
                (folder / f"{index:03d}-{name}.{part}").write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m testkit.outputs_ab",
        description="Every command's output (exit code, stdout, stderr, and what it wrote to "
        "the cluster) of the base checkout's advisor against the branch's, over the same "
        "scene; exit 1 if any differ.",
    )
    parser.add_argument("--base", type=Path, help="the checkout to compare against (main's)")
    parser.add_argument("--branch", type=Path, help="the checkout with the change")
    parser.add_argument(
        "--fleet", type=int, default=FLEET, help=f"workloads in team-* (default {FLEET})"
    )
    parser.add_argument("--list", action="store_true", help="list the commands and stop")
    parser.add_argument("--only", metavar="REGEX", help="the commands whose line matches")
    parser.add_argument(
        "--sequential", action="store_true", help="run the two sides one after the other"
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        type=Path,
        help="write each side's outputs, as compared, to DIR (NNN-base.stdout, ...)",
    )
    args = parser.parse_args(argv)
    commands = [c for c in all_commands() if args.only is None or re.search(args.only, c.label)]
    if args.list:
        for command in commands:
            print(command.label)
        return 0
    if args.base is None or args.branch is None:
        parser.error("--base and --branch are needed (or --list)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="outputs-ab-") as tmp:
        sides = Sides(
            args.base.resolve(),
            args.branch.resolve(),
            Path(tmp),
            args.fleet,
            parallel=not args.sequential,
        )
        for checkout in (sides.base, sides.branch):
            found = side.advisor_file(checkout, now=NOW, cwd=sides.cwd)
            if not found.is_relative_to(checkout):
                print(f"{checkout}: its child imports advisor from {found}", file=sys.stderr)
                return 2
        differ, unexpected = compare_all(sides, commands, keep=args.keep)
    took = time.monotonic() - started
    print(f"{differ} of {len(commands)} commands differ ({took:.0f} s)")
    if unexpected:
        print(
            f"{unexpected} could not be compared (ERROR) or exited otherwise than the scene "
            "expects (SCENE): fix the harness or the scene"
        )
    return 1 if differ else 2 if unexpected else 0
