"""One percentile for every p99 the project writes: the trial child's, the benchmark judge's and
its report's (advisor/calibrate/percentile.py)."""

from __future__ import annotations

import ast

import pytest

from advisor.calibrate.percentile import percentile
from tests.support import REPO


def test_nearest_rank_is_a_sample_with_at_least_q_percent_at_or_below_it() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([7.0], 99) == 7.0
    # 50 samples: the p99 is their maximum; 200: the third-largest (two were slower)
    fifty = [float(v) for v in range(50)]
    assert percentile(fifty, 99) == 49.0
    two_hundred = [float(v) for v in range(200)]
    assert percentile(two_hundred, 99) == 197.0
    # never between two samples, where interpolation would put it
    assert percentile([1.0, 2.0, 3.0, 10.0], 90) == 10.0
    assert percentile([1.0, 2.0, 3.0, 10.0], 50) == 2.0


@pytest.mark.parametrize("n", [100, 200, 300, 700, 1000, 1100])
def test_the_rank_is_exact_where_q_percent_of_n_is_a_whole_number(n: int) -> None:
    # 0.99 * n lands a hair above the integer for some n: the rank must not skip past it
    values = [float(v) for v in range(1, n + 1)]
    assert percentile(values, 99) == float(99 * n // 100)


def test_no_samples_or_a_q_outside_the_range_is_refused() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 50)
    for q in (0, -1, 100.5):
        with pytest.raises(ValueError, match="not in"):
            percentile([1.0], q)


def _percentile_functions() -> list[str]:
    found = []
    for root in ("advisor", "benchmarks"):
        for path in sorted((REPO / root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef) and "percentile" in node.name.lower():
                    found.append(f"{path.relative_to(REPO)}:{node.name}")
    return found


def test_the_percentile_is_defined_once_and_used_by_the_child_and_the_benchmark() -> None:
    assert _percentile_functions() == ["advisor/calibrate/percentile.py:percentile"]
    child = (REPO / "advisor/trials/child/trial.py").read_text()
    assert "from advisor.calibrate.percentile import percentile" in child
    assert "percentile(latencies, 99)" in child
    from benchmarks import figures

    assert figures.percentile is percentile
    pooled = figures.pool_rounds(
        [{"latencies_ms": [1.0, 2.0, 3.0, 10.0], "completed": 4, "window_s": 1.0}]
    )
    assert pooled.p99_ms == 10.0
    assert pooled.p50_ms == 2.0
