"""probe_node over fixture trees laid out as under / (fixtures/<case>/ beside this file).

Every case states the whole expected profile core and the exact files its warnings must name, so
a spurious warning or a wrongly chosen level fails as surely as a wrong number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from advisor.errors import ProbeError
from advisor.probe import probe_node

CASES_DIR = Path(__file__).resolve().parent / "fixtures"
POD_V1 = "/kubepods/burstable/pod1f0c"
CTR_V1 = f"{POD_V1}/ctr-a"
POD_V2 = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f0c.slice"
CTR_V2 = f"{POD_V2}/cri-containerd-a.scope"
CPU_V1 = "/sys/fs/cgroup/cpu,cpuacct"
#: captured from `podman run --cpus 1.5` on cgroup v1: /proc/self/cgroup shows this host path
PODMAN = "/libpod_parent/libpod-9b924c37ab32e4bbefab3c4e684661cd3ab059f0a28a81c5a904f62b85d39659"


XEON = "Intel(R) Xeon(R) Platinum 8480+"
XEON_ISA = (
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)
#: a Guaranteed pod (no QoS slice) on the static-CPU-manager Graviton2 fixture
POD_G = "/kubepods.slice/kubepods-pod7c1e.slice"
CTR_G = f"{POD_G}/cri-containerd-b.scope"


@dataclass(frozen=True)
class Case:
    quota: float | None
    effective: float
    version: int | None = 1
    limiting: str | None = None
    logical: int = 8
    affinity: tuple[int, ...] = tuple(range(8))
    sockets: int | None = 1
    cores: int | None = 4
    threads_per_core: int | None = 2
    smt: bool | None = True
    numa: int | None = 1
    affinity_cores: int | None = 4
    cpuset: tuple[int, ...] | None = tuple(range(8))
    path: str | None = None
    warnings: tuple[str, ...] = ()
    """files (as on the probed system) the warnings must name, one warning each, in any order"""
    unknown_levels: tuple[str, ...] = field(default=())
    model: str = XEON
    isa: tuple[str, ...] = XEON_ISA


S0 = (0, 1, 2, 3, 8, 9, 10, 11)
CASES: dict[str, Case] = {
    "v1": Case(1.5, 1.5, limiting=CTR_V1, path=CTR_V1),
    "v2": Case(1.5, 1.5, version=2, limiting=CTR_V2, path=CTR_V2),
    "nested-v1": Case(0.5, 0.5, limiting=POD_V1, path=CTR_V1),
    "nested-v2": Case(0.5, 0.5, version=2, limiting=POD_V2, path=CTR_V2, cpuset=None),
    "v2-max": Case(None, 8.0, version=2, path=CTR_V2, cpuset=None),
    "v2-max-one-field": Case(None, 8.0, version=2, path=CTR_V2, cpuset=None),
    "v2-one-field": Case(2.5, 2.5, version=2, limiting=CTR_V2, path=CTR_V2, cpuset=None),
    "v2-period-50ms": Case(0.5, 0.5, version=2, limiting=CTR_V2, path=CTR_V2, cpuset=None),
    "v1-zero-period": Case(
        None,
        8.0,
        path=CTR_V1,
        warnings=(f"{CPU_V1}{CTR_V1}/cpu.cfs_period_us",),
        unknown_levels=(CTR_V1,),
    ),
    "v1-negative-period": Case(
        None,
        8.0,
        path=CTR_V1,
        warnings=(f"{CPU_V1}{CTR_V1}/cpu.cfs_period_us",),
        unknown_levels=(CTR_V1,),
    ),
    "v2-zero-period": Case(
        None,
        8.0,
        version=2,
        path=CTR_V2,
        cpuset=None,
        warnings=(f"/sys/fs/cgroup{CTR_V2}/cpu.max",),
        unknown_levels=(CTR_V2,),
    ),
    "v1-unlimited": Case(None, 8.0, path=CTR_V1),
    "docker-v1-mount-root": Case(1.0, 1.0, limiting="/docker/3f2a9c", path="/docker/3f2a9c"),
    "podman-v1-mount-root": Case(
        1.5,
        1.5,
        limiting=PODMAN,
        path=PODMAN,
        logical=2,
        affinity=(0, 1),
        cores=2,
        threads_per_core=1,
        smt=False,
        affinity_cores=2,
        cpuset=(0, 1),
    ),
    "v1-cgroup-outside-mount-root": Case(
        2.0,
        2.0,
        limiting="/docker/3f2a9c",
        path="/docker/3f2a9c",
        warnings=("/proc/self/cgroup", "/proc/self/cgroup"),
    ),
    "leaf-dir-missing": Case(
        2.5,
        2.5,
        limiting=POD_V1,
        path=POD_V1,
        warnings=(f"{CPU_V1}{CTR_V1}", f"/sys/fs/cgroup/cpuset{CTR_V1}"),
    ),
    "cpuset-ranges": Case(
        None,
        8.0,
        path=CTR_V1,
        logical=16,
        affinity=S0,
        sockets=2,
        cores=8,
        numa=2,
        cpuset=S0,
    ),
    "cpuset-ranges-v2": Case(
        6.0,
        6.0,
        version=2,
        limiting=CTR_V2,
        path=CTR_V2,
        logical=16,
        affinity=S0,
        sockets=2,
        cores=8,
        numa=2,
        cpuset=S0,
    ),
    "smt-off": Case(
        None,
        4.0,
        path=CTR_V1,
        logical=4,
        affinity=(0, 1, 2, 3),
        threads_per_core=1,
        smt=False,
        cpuset=(0, 1, 2, 3),
    ),
    "smt-on": Case(None, 8.0, path=CTR_V1),
    "two-sockets": Case(
        4.0,
        4.0,
        version=2,
        limiting=POD_V2,
        path=CTR_V2,
        logical=32,
        affinity=tuple(range(32)),
        sockets=2,
        cores=16,
        numa=2,
        affinity_cores=16,
        cpuset=tuple(range(32)),
    ),
    "malformed-cpu-max-banana": Case(
        None,
        8.0,
        version=2,
        path=CTR_V2,
        cpuset=None,
        warnings=(f"/sys/fs/cgroup{CTR_V2}/cpu.max",),
        unknown_levels=(CTR_V2,),
    ),
    "malformed-cpu-max-banana-parent-limited": Case(
        3.0,
        3.0,
        version=2,
        limiting=POD_V2,
        path=CTR_V2,
        cpuset=None,
        warnings=(f"/sys/fs/cgroup{CTR_V2}/cpu.max",),
        unknown_levels=(CTR_V2,),
    ),
    "malformed-quota-nan": Case(
        None,
        8.0,
        path=CTR_V1,
        warnings=(f"{CPU_V1}{CTR_V1}/cpu.cfs_quota_us",),
        unknown_levels=(CTR_V1,),
    ),
    "malformed-empty-cpuset": Case(
        1.5,
        1.5,
        limiting=CTR_V1,
        path=CTR_V1,
        cpuset=None,
        warnings=(f"/sys/fs/cgroup/cpuset{CTR_V1}/cpuset.cpus",),
    ),
    "malformed-cpulist-garbage": Case(
        1.5,
        1.5,
        version=2,
        limiting=CTR_V2,
        path=CTR_V2,
        cpuset=None,
        warnings=(f"/sys/fs/cgroup{CTR_V2}/cpuset.cpus.effective",),
    ),
    "malformed-no-sys-devices-cpu": Case(
        1.5,
        1.5,
        limiting=CTR_V1,
        path=CTR_V1,
        logical=4,
        affinity=(0, 1, 2, 3),
        sockets=None,
        cores=None,
        threads_per_core=None,
        smt=None,
        numa=None,
        affinity_cores=None,
        cpuset=(0, 1, 2, 3),
        warnings=("/sys/devices/system/cpu",),
    ),
    "no-cgroup-mount": Case(
        None,
        2.0,
        version=None,
        logical=2,
        affinity=(0, 1),
        cores=2,
        threads_per_core=1,
        smt=False,
        affinity_cores=2,
        cpuset=None,
        warnings=("/proc/self/mountinfo",),
    ),
    # arm64 (AWS Graviton) on cgroup v2: the model comes from CPU implementer/part, no smt/ dir
    "graviton3-v2": Case(
        4.0,
        4.0,
        version=2,
        limiting=CTR_V2,
        path=CTR_V2,
        logical=16,
        affinity=tuple(range(16)),
        cores=16,
        threads_per_core=1,
        smt=None,
        affinity_cores=16,
        cpuset=tuple(range(16)),
        model="ARM Neoverse-V1",
        isa=("asimd", "asimddp", "sve", "bf16", "i8mm"),
    ),
    "graviton2-v2-static-cpuset": Case(
        2.0,
        2.0,
        version=2,
        limiting=CTR_G,
        path=CTR_G,
        logical=8,
        affinity=(2, 3),
        cores=8,
        threads_per_core=1,
        smt=None,
        affinity_cores=2,
        cpuset=(2, 3),
        model="ARM Neoverse-N1",
        isa=("asimd", "asimddp"),
    ),
}
ERROR_CASES = {"no-affinity": "/proc/self/status"}


def test_every_fixture_tree_has_expectations() -> None:
    on_disk = {p.name for p in CASES_DIR.iterdir() if p.is_dir()}
    assert on_disk == set(CASES) | set(ERROR_CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_profile(name: str) -> None:
    case = CASES[name]
    profile = probe_node(CASES_DIR / name, env={})
    assert profile.quota_cpus == case.quota
    assert profile.effective_cpus == case.effective
    assert profile.cgroup.quota_cpus == case.quota
    assert profile.cgroup.version == case.version
    assert profile.cgroup.limiting_path == case.limiting
    assert profile.cgroup.path == case.path
    assert profile.logical_cpus == case.logical
    assert profile.affinity_cpus == list(case.affinity)
    assert profile.affinity_source == "/proc/self/status"
    assert profile.affinity_physical_cores == case.affinity_cores
    topo = profile.topology
    assert (topo.sockets, topo.physical_cores, topo.threads_per_core) == (
        case.sockets,
        case.cores,
        case.threads_per_core,
    )
    assert topo.smt_active is case.smt
    assert (topo.cpu_model, tuple(topo.isa_flags)) == (case.model, case.isa)
    assert topo.numa_nodes == case.numa
    expected_cpuset = None if case.cpuset is None else list(case.cpuset)
    assert profile.cgroup.cpuset_cpus == expected_cpuset
    named = sorted(w.split(": ", 1)[0] for w in profile.warnings)
    assert named == sorted(case.warnings), profile.warnings
    unknown = tuple(lvl.path for lvl in profile.cgroup.levels if lvl.state == "unknown")
    assert unknown == case.unknown_levels
    assert profile.downward_api is None


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_fixture_without_affinity_is_a_probe_error(name: str) -> None:
    with pytest.raises(ProbeError, match=ERROR_CASES[name]):
        probe_node(CASES_DIR / name, env={})


def test_levels_run_from_leaf_to_mount_root_with_raw_values() -> None:
    profile = probe_node(CASES_DIR / "nested-v1", env={})
    levels = profile.cgroup.levels
    assert [lvl.path for lvl in levels] == [
        CTR_V1,
        POD_V1,
        "/kubepods/burstable",
        "/kubepods",
        "/",
    ]
    assert [lvl.state for lvl in levels] == ["limited", "limited"] + ["unlimited"] * 3
    assert (levels[0].quota_us, levels[0].period_us, levels[0].quota_cpus) == (200000, 100000, 2.0)
    assert (levels[1].quota_us, levels[1].period_us, levels[1].quota_cpus) == (50000, 100000, 0.5)


def test_weights_and_throttle_counters_come_from_the_files() -> None:
    v1 = probe_node(CASES_DIR / "v1", env={})
    assert (v1.cgroup.shares, v1.cgroup.weight) == (1024, None)
    # the fixture's binding level (the leaf) has 250 throttled periods and 4 s throttled
    assert (v1.cgroup.nr_throttled, v1.cgroup.throttled_time_ms) == (250, 4000.0)
    v2 = probe_node(CASES_DIR / "v2", env={})
    assert (v2.cgroup.shares, v2.cgroup.weight) == (None, 100)
    assert (v2.cgroup.nr_throttled, v2.cgroup.throttled_time_ms) == (250, 4000.0)
    # with the parent binding, its (zero) counters are the ones reported
    nested = probe_node(CASES_DIR / "nested-v1", env={})
    assert nested.cgroup.nr_throttled == 0


def test_given_affinity_overrides_the_tree() -> None:
    profile = probe_node(CASES_DIR / "v1", env={}, affinity={0})
    assert profile.affinity_cpus == [0]
    assert profile.affinity_source == "caller"
    assert profile.effective_cpus == 1.0
    assert profile.affinity_physical_cores == 1


def test_empty_given_affinity_is_a_probe_error() -> None:
    with pytest.raises(ProbeError, match="affinity"):
        probe_node(CASES_DIR / "v1", env={}, affinity=[])


def test_affinity_outside_cpuset_is_warned() -> None:
    profile = probe_node(CASES_DIR / "cpuset-ranges", env={}, affinity=[0, 4])
    assert any("outside the cgroup cpuset" in w for w in profile.warnings)


def test_missing_host_root_is_a_probe_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(ProbeError, match="/proc/self/status"):
        probe_node(tmp_path / "nowhere", env={})


def test_only_the_affinity_left_still_gives_a_profile(tmp_path: Path) -> None:
    status = tmp_path / "proc/self/status"
    status.parent.mkdir(parents=True)
    status.write_text("Name:\tpython3\nCpus_allowed_list:\t2-3\n")
    profile = probe_node(tmp_path, env={})
    assert (profile.affinity_cpus, profile.effective_cpus, profile.quota_cpus) == (
        [2, 3],
        2.0,
        None,
    )
    assert profile.logical_cpus == 2
    assert profile.cgroup.version is None
    named = sorted(w.split(": ", 1)[0] for w in profile.warnings)
    assert named == [
        "/proc/cpuinfo",
        "/proc/self/cgroup",
        "/proc/self/mountinfo",
        "/sys/devices/system/cpu",
    ]
