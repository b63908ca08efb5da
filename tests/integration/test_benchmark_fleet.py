"""``python -m benchmarks fleet`` (the planner's cost over a fleet) on a small fleet: it plans
through the real pipeline against the fake API server, and what it times decides as a nightly
plan would (half the workloads fit their advice, half have none)."""

from __future__ import annotations

import re

import pytest

from benchmarks.__main__ import main


def test_the_fleet_benchmark_plans_half_fitting_half_new(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["fleet", "--workloads", "8", "--namespaces", "2", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("machine: ") and "load average" in lines[0]
    assert lines[1] == "8 workloads, 2 namespaces, 1 plans each"
    rows = [line for line in lines[2:] if not line.startswith("  ")]
    assert [row.split("  ")[0].strip() for row in rows] == [
        "plan -A (2 namespaces), end to end",
        "plan -A (2 namespaces), end to end, bytecode cached",
        "plan -A (2 namespaces), imports paid",
        "plan -A (2 namespaces): decisions only",
        "plan, one namespace, end to end",
        "plan, one namespace, end to end, bytecode cached",
        "plan, one namespace, imports paid",
        "plan, one namespace: decisions only",
    ]
    for row in rows:
        assert re.search(r"\d+\.\d\d s  \(\d+\.\d\d-\d+\.\d\d; \d+\.\d\d ms a workload\)", row)
        assert row.endswith("4 calibrate, 4 fits"), row
    # end to end, a fresh process's parts: each measured, none negative
    parts = {lines[i - 1]: line for i, line in enumerate(lines) if line.startswith("  ")}
    assert [row.split("  ")[0] for row in parts] == [
        "plan -A (2 namespaces), end to end",
        "plan -A (2 namespaces), end to end, bytecode cached",
        "plan, one namespace, end to end",
        "plan, one namespace, end to end, bytecode cached",
    ]
    for row, line in parts.items():
        found = re.fullmatch(
            r"  its parts \(medians\): start (\S+) s, imports (\S+) s, listing (\S+) s, "
            r"deciding (\S+) s, rest (\S+) s",
            line,
        )
        assert found is not None, line
        seconds = [float(value) for value in found.groups()]
        assert all(value >= 0 for value in seconds) and seconds[1] > 0  # nothing imports nothing
        # one plan each: its parts add up to the process's time, but for rounding
        whole = float(row.split(" s  (")[0].split()[-1])
        assert abs(sum(seconds) - whole) <= 0.03, (row, line)


def test_bad_sizes_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["fleet", "--workloads", "0"])
    assert exc.value.code == 2
    assert "must be 1 or more" in capsys.readouterr().err
