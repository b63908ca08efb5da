"""Stand-ins and real-host helpers that both the tests and ``benchmarks/`` use: the strict fake
Kubernetes API server (``fakeapi/``), a Prometheus stand-in serving recorded answers
(``fakeprom``), real cgroup v1 CPU quotas (``realcgroup``) and small TF Serving models of the five
signature kinds teams serve, with warmup files written through TF Serving's protos
(``serving_models``).

A package of its own, beside ``tests/`` and ``benchmarks/``, so that neither imports the other:
the benchmark runs outside any test session, and the tests must not depend on the benchmark.
No pytest in here. Found on the path as ``tests`` is (the checkout's root); test-only, so it is
neither in the wheel (``[tool.setuptools.packages.find]`` takes ``advisor*``) nor in the image.
"""

from __future__ import annotations

from pathlib import Path

#: the checkout
REPO = Path(__file__).resolve().parent.parent
