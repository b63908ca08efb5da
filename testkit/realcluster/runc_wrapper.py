"""runc, with a negative oom_score_adj raised to 0: the one thing this machine's sandbox cannot do.

The kubelet asks for -998 on every pod sandbox and -997 on Guaranteed containers; lowering a
process's oom_score_adj needs CAP_SYS_RESOURCE, which the sandbox these tests run in does not
grant (runc then dies with "failed to update /proc/self/oom_score_adj: Permission denied"). The
wrapper edits the bundle's config.json before runc reads it and changes nothing else; containerd
runs it as the runc runtime's BinaryName (configs.containerd_toml). A node with the capability
would not need it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

RUNC = "/usr/sbin/runc"


def _bundle(argv: list[str]) -> Path | None:
    if "create" not in argv and "run" not in argv:
        return None
    for i, word in enumerate(argv):
        if word in ("--bundle", "-b") and i + 1 < len(argv):
            return Path(argv[i + 1])
        if word.startswith("--bundle="):
            return Path(word.split("=", 1)[1])
    return Path.cwd()


def main(argv: list[str]) -> None:
    bundle = _bundle(argv)
    config = bundle / "config.json" if bundle else None
    if config is not None and config.is_file():
        spec = json.loads(config.read_text())
        process = spec.get("process") or {}
        if process.get("oomScoreAdj", 0) < 0:
            process["oomScoreAdj"] = 0
            config.write_text(json.dumps(spec))
    os.execv(RUNC, [RUNC, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
