"""``python -m benchmarks COMMAND [ARGS]``: one command per benchmark, each with its own ``--help``.

The modules are imported only when their command runs: ``stability`` needs the fake API server,
``quality`` psutil and real processes, and ``replay`` neither.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

#: command -> (module under benchmarks/, what it answers)
COMMANDS: dict[str, tuple[str, str]] = {
    "quality": ("advice_quality", "the advice against TF's default, the rule and the grid"),
    "replay": ("replay", "the current choice on a recorded run's trials, judged by its grid"),
    "repeatability": ("repeatability", "how far recorded runs' grids disagree"),
    "stability": ("stability", "N real runs against one ConfigMap: data changes, each one judged"),
    "scaling": ("scaling", "the real search on simulated nodes of 2..256 CPUs"),
    "false-change": ("false_change", "calibration's P(change) on flat and 30%-gain landscapes"),
    "fleet": ("fleet", "plan over N opted-in workloads in K namespaces (fake API server)"),
    "process-offset": ("process_offset", "one setting in K processes: a per-process offset?"),
    "settle-replay": ("settle_replay", "the stopping rule round by round on recorded trials"),
    "production": ("production_errors", "production verdicts' error rates on generated series"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name.ljust(width)}  {what}" for name, (_, what) in COMMANDS.items()]
    return "usage: python -m benchmarks COMMAND [ARGS]  (COMMAND --help for its options)\n\n" + (
        "\n".join(lines)
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"benchmarks.{COMMANDS[name][0]}")
    code: int = module.main(rest)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
