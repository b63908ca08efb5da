"""The benchmarks, a package run from the checkout's root as ``python -m benchmarks COMMAND``
(``python -m benchmarks --help`` lists the commands; docs/benchmark.md says what each measures).

Imports the advisor and ``testkit`` (the fake API server, real cgroup quotas), never ``tests``.
"""

from __future__ import annotations

from pathlib import Path

#: the checkout: calibrate runs and measuring children start here, so ``-m`` finds this tree
REPO = Path(__file__).resolve().parent.parent
