"""Lets pip running on one architecture pick the wheels of another (the image's cross-build).

pip can download and unpack another platform's wheels (`--platform ... --only-binary=:all:
--target`), but it evaluates environment markers (`; platform_machine == "aarch64"`) against
the machine it runs on. This evaluates them for the target instead, and holds the one list of
platform tags that both the image build (Dockerfile) and scripts/pin-image-deps.sh pass to pip,
so the wheel pinned for an architecture is the wheel its build installs.

    pip-for-arch.py requirements ARCH FILE [NAME ...]  requirement lines that hold on linux/ARCH
                                                      (only NAMEs if given), markers dropped
    pip-for-arch.py platform-args ARCH                pip's --platform/--abi/... arguments
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    from packaging.markers import Marker
except ImportError:  # the image's venv has no packaging, but pip vendors it
    from pip._vendor.packaging.markers import Marker  # type: ignore[no-redef]

#: Docker/OCI architecture -> (platform_machine, the newest manylinux glibc of the base image)
ARCHES = {"amd64": ("x86_64", 36), "arm64": ("aarch64", 36)}
PYTHON_VERSION = "3.11"  # Debian bookworm's python3, in the image and its build stages


def platform_args(arch: str) -> list[str]:
    """Every manylinux tag bookworm's glibc 2.36 can run, newest first (pip's own order)."""
    machine, glibc = ARCHES[arch]
    args: list[str] = []
    for minor in range(glibc, 16, -1):
        args += ["--platform", f"manylinux_2_{minor}_{machine}"]
    args += ["--platform", f"manylinux2014_{machine}"]
    args += ["--implementation", "cp", "--python-version", PYTHON_VERSION, "--abi", "cp311"]
    return [*args, "--only-binary=:all:"]


def logical_lines(text: str) -> list[str]:
    """Requirement lines with backslash continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    lines = []
    for physical in joined.splitlines():
        line = physical.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def select(text: str, arch: str, names: list[str]) -> list[str]:
    machine, _ = ARCHES[arch]
    wanted = {_normalise(name) for name in names}
    out = []
    for line in logical_lines(text):
        requirement, _, options = line.partition(" --")
        spec, _, marker = requirement.partition(";")
        if marker.strip() and not Marker(marker.strip()).evaluate({"platform_machine": machine}):
            continue
        name = re.split(r"[=<>!~\[ ]", spec.strip(), maxsplit=1)[0]
        if wanted and _normalise(name) not in wanted:
            continue
        out.append(spec.strip() + (f" --{options}" if options else ""))
    return out


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "platform-args" and argv[1] in ARCHES:
        print(" ".join(platform_args(argv[1])))
        return 0
    if len(argv) >= 3 and argv[0] == "requirements" and argv[1] in ARCHES:
        text = Path(argv[2]).read_text(encoding="utf-8")
        print("\n".join(select(text, argv[1], argv[3:])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
