"""Candidate settings come from the probe: around the usable CPUs, few, and growing slowly."""

from __future__ import annotations

import math

import pytest

from advisor.calibrate.candidates import (
    MAX_CANDIDATES,
    MAX_INTER_OP,
    candidate_configs,
    coverage_order,
    inter_op_values,
    intra_op_values,
    spare_inter_op,
    tf_picks,
)
from advisor.models import ThreadSetting
from tests.support.search_fakes import node


def test_one_cpu_quota_on_two_cores_tries_the_small_settings_but_not_the_default() -> None:
    configs = candidate_configs(node(2, quota=1.0))
    # 2/2 is what TF runs by itself on two CPUs: the baseline measures it already
    assert tf_picks(node(2, quota=1.0)) == ThreadSetting(2, 2)
    assert sorted((c.intra, c.inter) for c in configs) == [
        (1, 1),
        (1, 2),
        (2, 1),
    ]
    # most promising first: intra at the usable CPUs, one inter-op thread
    assert (configs[0].intra, configs[0].inter) == (1, 1)


def test_fractional_quota_brings_floor_and_ceiling() -> None:
    values = intra_op_values(node(8, quota=1.5))
    assert 1 in values
    assert 2 in values
    assert max(values) <= 4  # twice the ceiling, not the 8 of the affinity mask


def test_quota_caps_intra_far_below_the_affinity_count() -> None:
    values = intra_op_values(node(64, quota=4.0))
    assert values == sorted(set(values))
    assert {2, 4} <= set(values)
    assert max(values) == 8
    assert 64 not in values  # that is the TF default, measured as the baseline anyway


def test_without_quota_powers_of_two_reach_the_affinity_count() -> None:
    values = intra_op_values(node(48))
    assert {1, 2, 4, 8, 16, 32, 24, 48} <= set(values)
    assert max(values) == 48


def test_inter_op_bound_follows_sockets_and_concurrency() -> None:
    assert inter_op_values(node(2, quota=1.0)) == [1, 2]
    assert inter_op_values(node(64, sockets=2)) == [1, 2]
    assert inter_op_values(node(64, sockets=2), concurrency=4) == [1, 2, 4]
    assert inter_op_values(node(64), concurrency=100) == [1, 2, 4, MAX_INTER_OP]
    assert inter_op_values(node(1)) == [1]


def test_without_a_binding_quota_one_wider_inter_op_pool_is_tried_last() -> None:
    # the benchmark's grid on 2 CPUs without a quota kept finding its best at inter-op 3
    assert spare_inter_op(node(2)) == 3
    assert [c.label for c in candidate_configs(node(2))] == ["2/1", "1/1", "1/2", "2/3", "1/3"]
    assert spare_inter_op(node(2), concurrency=2) == 3
    assert spare_inter_op(node(64, sockets=2), concurrency=4) == 5
    # a quota at the mask's size does not bind: the same as none
    assert spare_inter_op(node(2, quota=2.0)) == 3
    # a quota that binds, even loosely, gets no spare: extra runnable threads there get throttled
    assert spare_inter_op(node(2, quota=1.5)) is None
    assert [c.label for c in candidate_configs(node(2, quota=1.5), 2)] == ["2/1", "1/1", "1/2"]
    # never past MAX_INTER_OP, and a one-CPU mask stays at TF's own 1/1
    assert spare_inter_op(node(64), concurrency=100) is None
    assert spare_inter_op(node(1)) is None
    assert candidate_configs(node(1)) == []


@pytest.mark.parametrize("cpus", [2, 4, 8, 16, 32, 64, 128, 256])
def test_the_spare_width_never_displaces_a_setting_and_stops_at_the_cap(cpus: int) -> None:
    profile = node(cpus, sockets=2 if cpus >= 32 else 1)
    configs = candidate_configs(profile)
    spare = spare_inter_op(profile)
    base = [c for c in configs if c.inter != spare]
    assert configs[: len(base)] == base  # every spare setting comes after all the others
    assert {c.inter for c in base} == set(inter_op_values(profile))
    intras = len(intra_op_values(profile))
    if len(base) + intras <= MAX_CANDIDATES:  # room for all of them: one per intra value
        assert len(configs) - len(base) == intras
    else:  # filled up to the cap, or none at all where the old list already reached it
        assert len(configs) == max(MAX_CANDIDATES, len(base))


def test_concurrency_cannot_push_inter_past_what_the_quota_can_run() -> None:
    assert max(inter_op_values(node(64, quota=1.0), concurrency=16)) == 2
    assert max(inter_op_values(node(64, quota=3.0), concurrency=16)) == 3


@pytest.mark.parametrize("cpus", [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256])
@pytest.mark.parametrize("quota", [None, 0.5, 1.0, 1.5, 4.0, 7.3])
@pytest.mark.parametrize("concurrency", [1, 4])
def test_candidates_are_distinct_and_within_what_the_node_can_run(
    cpus: int, quota: float | None, concurrency: int
) -> None:
    profile = node(cpus, quota=quota, sockets=2 if cpus >= 32 else 1)
    configs = candidate_configs(profile, concurrency)
    # one CPU in the mask: TF's default 1/1 is the only setting, and the baseline runs it
    assert configs or cpus == 1
    assert len(set(configs)) == len(configs)
    default = tf_picks(profile)
    assert all(c != default for c in configs)
    usable_ceiling = math.ceil(profile.effective_cpus)
    # one inter-op thread past the CPUs only where no quota binds (and never on a one-CPU mask)
    inter_reach = cpus + 1 if profile.effective_cpus >= cpus > 1 else cpus
    for c in configs:
        assert 1 <= c.intra <= min(cpus, 2 * usable_ceiling)
        assert 1 <= c.inter <= min(inter_reach, MAX_INTER_OP)
        if profile.effective_cpus < cpus:
            assert c.inter <= max(2, usable_ceiling)


def test_tf_default_is_the_affinity_count_for_both_pools_whatever_the_quota() -> None:
    assert tf_picks(node(64, quota=4.0)) == ThreadSetting(64, 64)  # TF never reads the quota
    assert tf_picks(node(1)) == ThreadSetting(1, 1)
    assert candidate_configs(node(1)) == []
    # compared by thread counts, not by how they were reached: 8/8 is dropped on an 8-CPU node
    # only because the default is 8/8 there
    assert (8, 8) not in {(c.intra, c.inter) for c in candidate_configs(node(8), concurrency=8)}
    assert (4, 4) in {(c.intra, c.inter) for c in candidate_configs(node(8), concurrency=8)}


def test_count_grows_slowly_from_2_to_256_cpus() -> None:
    counts = {}
    for cpus in (2, 4, 8, 16, 32, 64, 128, 256):
        counts[cpus] = len(candidate_configs(node(cpus, sockets=2 if cpus >= 32 else 1)))
    for cpus, count in counts.items():
        assert count <= 3 * math.log2(cpus) + 4, counts
    # 128 times the CPUs costs only a few times the trials
    assert counts[256] <= 6 * counts[2], counts
    # and a quota keeps a big node's list as short as a small node's
    assert len(candidate_configs(node(256, quota=2.0))) <= counts[4]


@pytest.mark.parametrize("cpus", [32, 64, 128, 256])
def test_a_short_prefix_already_spans_small_and_large_settings(cpus: int) -> None:
    first = [c.intra for c in candidate_configs(node(cpus, sockets=2))[:4]]
    assert cpus in first  # the usable CPUs themselves
    assert min(first) <= 2  # and the small end, where small models on big nodes often win
    assert any(2 < v < cpus for v in first)  # and the middle


def test_coverage_order_spreads_on_a_log_scale() -> None:
    assert coverage_order([1, 2, 4, 8, 16, 32, 64, 128, 256], 256.0)[:4] == [256, 1, 16, 4]
    assert coverage_order([1, 2], 1.0) == [1, 2]
    assert coverage_order([1, 2, 3, 4], 3.0)[0] == 3
    assert coverage_order([], 2.0) == []
