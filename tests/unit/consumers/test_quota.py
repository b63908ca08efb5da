"""The one CPU-quota rule: a limit is the quota (the tightest of the container's and the pod's);
without one, the first request above 0 (the container's, then the pod's) is measured under."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.consumers.quota import CpuQuota, cpu_limit, cpu_quota, cpu_request, same_quota


@pytest.mark.parametrize(
    ("container", "pod", "want"),
    [
        ({"limits": {"cpu": "4"}}, {"limits": {"cpu": "2"}}, CpuQuota(2.0, "limit", None)),
        ({"limits": {"cpu": "500m"}, "requests": {"cpu": "1"}}, {}, CpuQuota(0.5, "limit", None)),
        ({"requests": {"cpu": "1500m"}}, {}, CpuQuota(1.5, "request", "1500m")),
        ({"requests": {"cpu": "0"}}, {"requests": {"cpu": 2}}, CpuQuota(2.0, "request", 2)),
        ({"requests": {"cpu": "1"}}, {"requests": {"cpu": "2"}}, CpuQuota(1.0, "request", "1")),
        ({"requests": {"cpu": "0"}}, {}, None),
        ({"requests": {"memory": "1Gi"}, "limits": {"cpu": "x"}}, {}, None),
        ({"limits": "4"}, {}, None),
    ],
)
def test_the_quota(container: dict[str, Any], pod: dict[str, Any], want: CpuQuota | None) -> None:
    assert cpu_quota(container, pod) == want


def test_limit_and_request_alone() -> None:
    assert cpu_limit({}, {"limits": {"cpu": "3"}}) == 3.0
    assert cpu_limit({"requests": {"cpu": "3"}}, {}) is None
    assert cpu_request({"requests": {"cpu": "0"}}, {"requests": {"cpu": "0"}}) is None


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (None, None, True),
        (2.0, None, False),
        (None, 2.0, False),
        (2.0, 2.0, True),
        (1.5, 1.505, True),  # CFS rounding: 1.5 CPUs read back from cfs_quota_us
        (1.5, 1.509, True),
        (1.5, 1.52, False),
        (1.0, 0.98, False),
    ],
)
def test_two_quotas_are_one_within_cfs_rounding(
    a: float | None, b: float | None, same: bool
) -> None:
    assert same_quota(a, b) is same
    assert same_quota(b, a) is same
