"""The small format readers of advisor.probe, on the exact strings the kernel writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.models import CgroupLevel
from advisor.probe.cgroup_v2 import parse_cpu_max
from advisor.probe.cpuinfo import parse_cpuinfo
from advisor.probe.cpulist import parse_cpulist
from advisor.probe.downward import cross_check, read_downward
from advisor.probe.files import HostFiles
from advisor.probe.mountinfo import find_cgroup_mount, parse_mountinfo
from advisor.probe.proc_cgroup import parse_proc_cgroup
from advisor.probe.proc_status import parse_peak_rss_mib, read_peak_rss_mib, read_thread_count
from advisor.probe.quota import limited, quota_to_cpus, tightest
from advisor.probe.throttling import Throttling, parse_flat_keyed, throttling_from_stat
from advisor.render.node import format_cpulist


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0", [0]),
        ("0-3", [0, 1, 2, 3]),
        ("0-3,8-11", [0, 1, 2, 3, 8, 9, 10, 11]),
        ("8-11,0-3", [0, 1, 2, 3, 8, 9, 10, 11]),
        ("0-3,2-5", [0, 1, 2, 3, 4, 5]),
        (" 1,3 \n", [1, 3]),
        ("0-7:2", [0, 2, 4, 6]),
        ("", []),
        ("\n", []),
    ],
)
def test_cpulist_parses(text: str, cpus: list[int]) -> None:
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize(
    "text", ["banana", "0-", "-3", "3-1", "0,,1", "1.5", "0-3,x", "0-99999", "0-7:0", "0x3"]
)
def test_cpulist_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="CPU list"):
        parse_cpulist(text)


@pytest.mark.parametrize(
    ("cpus", "text"),
    [([], ""), ([0], "0"), ([0, 1, 2, 3, 8, 9, 10, 11], "0-3,8-11"), ([5, 1, 3, 2], "1-3,5")],
)
def test_cpulist_formats_compactly_and_round_trips(cpus: list[int], text: str) -> None:
    assert format_cpulist(cpus) == text
    assert parse_cpulist(text) == sorted(cpus)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("max 100000", (None, 100000)),
        ("max", (None, 100000)),
        ("150000 100000", (150000, 100000)),
        ("50000", (50000, 100000)),
        ("25000 50000\n", (25000, 50000)),
    ],
)
def test_cpu_max_forms(text: str, parsed: tuple[int | None, int]) -> None:
    assert parse_cpu_max(text) == parsed


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("banana 100000", "quota is not an integer"),
        ("NaN", "quota is not an integer"),
        ("50000 0", "period 0 is not positive"),
        ("50000 -100000", "period -100000 is not positive"),
        ("0 100000", "quota 0 is not positive"),
        ("max banana", "period is not an integer"),
        ("", "expected"),
        ("1 2 3", "expected"),
    ],
)
def test_cpu_max_garbage_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_cpu_max(text)


def test_quota_to_cpus_keeps_fractions_and_never_reaches_zero() -> None:
    assert quota_to_cpus(150000, 100000) == 1.5
    assert quota_to_cpus(33333, 100000) == 0.333
    assert quota_to_cpus(1000, 1000000) == 0.001
    assert quota_to_cpus(1, 1000000) == 0.001


def _level(path: str, quota: int | None, period: int = 100000) -> CgroupLevel:
    return (
        CgroupLevel(path=path, state="unlimited") if quota is None else limited(path, quota, period)
    )


def test_tightest_compares_ratios_not_raw_quotas() -> None:
    # 60000/100000 = 0.6 CPUs is looser than 25000/50000 = 0.5 CPUs despite the larger quota
    levels = [_level("/a/b", 60000), _level("/a", 25000, 50000), _level("/", None)]
    bound = tightest(levels)
    assert bound is not None
    assert bound.path == "/a"
    assert tightest([_level("/a", None), CgroupLevel(path="/", state="unknown")]) is None


def test_tightest_prefers_the_leaf_on_a_tie() -> None:
    bound = tightest([_level("/a/b", 50000), _level("/a", 100000, 200000)])
    assert bound is not None
    assert bound.path == "/a/b"


MOUNTINFO = r"""22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
31 22 0:28 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
32 31 0:29 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw
33 31 0:30 /docker/ab\040c /sys/fs/cgroup/cpu,cpuacct rw shared:12 - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw shared:13 master:2 - cgroup cgroup rw,cpuset
35 22 0:31 / /var/lib/kubelet/cpuset rw shared:14 - cgroup cgroup rw,cpuset
garbage line
36 31 0:40 / /sys/fs/cgroup/cpuacct_only rw - cgroup cgroup rw,cpuacct
"""


def test_mountinfo_finds_v1_controllers_with_escapes_and_optional_fields() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert len(mounts) == 7
    cpu = find_cgroup_mount(mounts, "cpu")
    assert cpu is not None
    assert (cpu.root, cpu.mount_point, cpu.fstype) == (
        "/docker/ab c",
        "/sys/fs/cgroup/cpu,cpuacct",
        "cgroup",
    )
    cpuset = find_cgroup_mount(mounts, "cpuset")
    assert cpuset is not None
    assert cpuset.mount_point == "/sys/fs/cgroup/cpuset"  # the conventional one of two


def test_mountinfo_without_v1_controller_falls_back_to_cgroup2() -> None:
    mounts = parse_mountinfo(
        "31 24 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n"
        "40 24 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n"
    )
    mount = find_cgroup_mount(mounts, "cpu")
    assert mount is not None
    assert mount.fstype == "cgroup2"
    assert find_cgroup_mount(parse_mountinfo("1 0 0:1 / / rw - ext4 x rw\n"), "cpu") is None


def test_proc_cgroup_hybrid_and_v2() -> None:
    procs = parse_proc_cgroup(
        "12:memory:/kubepods/p\n4:cpu,cpuacct:/kubepods/p/c\n1:name=systemd:/s\n0::/u\nbroken\n"
    )
    assert procs.path_for("cpu", 1) == "/kubepods/p/c"
    assert procs.path_for("cpuacct", 1) == "/kubepods/p/c"
    assert procs.path_for("cpuset", 1) is None
    assert procs.path_for("cpu", 2) == "/u"
    assert parse_proc_cgroup("0::/a/b:c\n").v2 == "/a/b:c"


def test_cpu_stat_in_both_spellings() -> None:
    v1 = parse_flat_keyed("nr_periods 10\nnr_throttled 3\nthrottled_time 2500000\nbad line x\n")
    assert throttling_from_stat(v1) == Throttling(10, 3, 2.5)
    v2 = parse_flat_keyed("usage_usec 5\nnr_periods 10\nnr_throttled 3\nthrottled_usec 2500\n")
    assert throttling_from_stat(v2) == Throttling(10, 3, 2.5)
    assert throttling_from_stat(parse_flat_keyed("usage_usec 5\n")) is None
    # a damaged file: a number no u64 counter holds (and no float either) is skipped too
    huge = parse_flat_keyed(f"nr_periods 10\nnr_throttled 3\nthrottled_time {'9' * 400}\n")
    assert throttling_from_stat(huge) is None
    # nor does a negative one (the profile's counters are >= 0: it would not validate)
    negative = parse_flat_keyed("nr_periods 10\nnr_throttled -3\nthrottled_time 5\n")
    assert throttling_from_stat(negative) is None


def test_throttling_since_is_the_difference() -> None:
    before = Throttling(10, 3, 2.5)
    after = Throttling(25, 9, 40.0)
    assert after.since(before) == Throttling(15, 6, 37.5)
    assert before.since(after) == Throttling(0, 0, 0.0)


def test_cpuinfo_x86_and_arm() -> None:
    x86 = parse_cpuinfo(
        "processor\t: 0\nmodel name\t: AMD EPYC 9654\nflags\t\t: fpu avx2 avx512f avx512_bf16\n\n"
        "processor\t: 1\nmodel name\t: AMD EPYC 9654\nflags\t\t: fpu avx2 avx512f avx512_bf16\n"
    )
    assert (x86.model, x86.isa_flags, x86.processors) == (
        "AMD EPYC 9654",
        ["avx2", "avx512f", "avx512_bf16"],
        2,
    )
    arm = parse_cpuinfo("processor\t: 0\nFeatures\t: fp asimd sve i8mm bf16\n")
    assert (arm.model, arm.isa_flags, arm.processors) == (None, ["asimd", "sve", "bf16", "i8mm"], 1)


def _arm_block(cpu: int, implementer: str, part: str) -> str:
    return (
        f"processor\t: {cpu}\nFeatures\t: fp asimd\nCPU implementer\t: {implementer}\n"
        f"CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: {part}\nCPU revision\t: 1\n"
    )


@pytest.mark.parametrize(
    ("implementer", "part", "model"),
    [
        ("0x41", "0xd0c", "ARM Neoverse-N1"),  # Graviton2, Ampere Altra
        ("0x41", "0xd40", "ARM Neoverse-V1"),  # Graviton3
        ("0x41", "0xd4f", "ARM Neoverse-V2"),  # Graviton4, Google Axion
        ("0x41", "0xd49", "ARM Neoverse-N2"),  # Azure Cobalt 100
        ("0xc0", "0xac3", "Ampere Ampere-1"),
        ("0x41", "0xd99", "ARM part 0xd99"),  # a part newer than the table keeps its id
        ("0x99", "0x123", "implementer 0x99 part 0x123"),
        ("0x41", "banana", None),  # not a hex id: no model rather than a made-up one
    ],
)
def test_arm64_cpu_is_named_from_implementer_and_part(
    implementer: str, part: str, model: str | None
) -> None:
    info = parse_cpuinfo(_arm_block(0, implementer, part) + "\n" + _arm_block(1, implementer, part))
    assert (info.model, info.processors) == (model, 2)


def test_arm64_big_little_names_each_core_type_once_in_order() -> None:
    blocks = [_arm_block(0, "0x41", "0xd0b"), _arm_block(1, "0x41", "0xd0b")]
    blocks += [_arm_block(2, "0x41", "0xd05"), _arm_block(3, "0x41", "0xd05")]
    assert parse_cpuinfo("\n".join(blocks)).model == "ARM Cortex-A76 + ARM Cortex-A55"


def test_a_model_name_line_wins_over_the_arm_ids() -> None:
    """32-bit ARM kernels print a model name next to the ids; it is what the kernel calls it."""
    text = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 4 (v7l)\n"
    text += "CPU implementer\t: 0x41\nCPU part\t: 0xd08\n"
    assert parse_cpuinfo(text).model == "ARMv7 Processor rev 4 (v7l)"


def test_downward_api_values_and_cross_check() -> None:
    warnings: list[str] = []
    env = {
        "TFTA_CPU_LIMIT": "1500",
        "TFTA_CPU_REQUEST": "250m",
        "TFTA_NODE_NAME": "node-a",
        "TFTA_POD_NAME": "advisor-x",
        "TFTA_POD_NAMESPACE": "ml",
    }
    downward = read_downward(env, warnings)
    assert downward is not None
    assert (downward.cpu_limit_cpus, downward.cpu_request_cpus) == (1.5, 0.25)
    assert (downward.node_name, downward.pod_name, downward.pod_namespace) == (
        "node-a",
        "advisor-x",
        "ml",
    )
    assert warnings == []
    assert cross_check(downward, 1.5, 8) == []
    assert cross_check(downward, 1.501, 8) == []
    mismatch = cross_check(downward, 2.0, 8)
    assert len(mismatch) == 1
    assert "TFTA_CPU_LIMIT=1.5" in mismatch[0]
    assert "2" in mismatch[0]
    (no_quota,) = cross_check(downward, None, 8)
    assert "no limits.cpu" in no_quota and "does not enforce" in no_quota


def test_downward_limit_without_quota_equal_to_node_size_is_consistent() -> None:
    # no limits.cpu: the Downward API reports node allocatable, and there is no quota either
    downward = read_downward({"TFTA_CPU_LIMIT": "8000"}, [])
    assert cross_check(downward, None, 8) == []


def test_downward_garbage_is_a_warning_naming_the_variable() -> None:
    warnings: list[str] = []
    downward = read_downward({"TFTA_CPU_LIMIT": "1.5", "TFTA_POD_NAME": "p"}, warnings)
    assert downward is not None
    assert downward.cpu_limit_cpus is None
    assert len(warnings) == 1
    assert warnings[0].startswith("$TFTA_CPU_LIMIT")
    assert read_downward({"PATH": "/bin"}, warnings) is None


@pytest.mark.parametrize(
    "raw", ["2\u00b2", "9" * 400, "9" * 5000], ids=["superscript", "400-digits", "5000-digits"]
)
def test_downward_digits_int_refuses_are_a_warning_too(raw: str) -> None:
    # str.isdigit() accepts superscripts; int() refuses them and strings over 4300 digits, and
    # 400 digits of millicores overflow a float
    warnings: list[str] = []
    downward = read_downward({"TFTA_CPU_LIMIT": raw, "TFTA_POD_NAME": "p"}, warnings)
    assert downward is not None
    assert downward.cpu_limit_cpus is None
    assert len(warnings) == 1
    assert warnings[0].startswith("$TFTA_CPU_LIMIT: expected integer millicores")


def test_host_files_name_files_as_on_the_probed_system(tmp_path: Path) -> None:
    files = HostFiles(tmp_path)
    target = files.path("/sys/fs/cgroup/cpu.max")
    assert target == tmp_path / "sys/fs/cgroup/cpu.max"
    assert files.read(target) is None
    assert files.read(target, required=False) is None
    target.parent.mkdir(parents=True)
    target.write_bytes(b"\xff\xfe")
    assert files.read(target) is None
    (tmp_path / "n").write_text("12x\n")
    assert files.read_int(tmp_path / "n") is None
    assert files.warnings == [
        "/sys/fs/cgroup/cpu.max: missing",
        "/sys/fs/cgroup/cpu.max: not text",
        "/n: not an integer: '12x'",
    ]


def test_the_job_manifest_sets_the_env_names_the_probe_reads() -> None:
    # The names live in two places (downward.py and deploy/job.yaml); a rename in one must fail.
    import yaml

    from advisor.probe.downward import CPU_LIMIT, CPU_REQUEST, ENV_NAMES
    from tests.support import REPO

    manifest = REPO / "deploy" / "job.yaml"
    docs = [d for d in yaml.safe_load_all(manifest.read_text()) if d and d.get("kind") == "Job"]
    assert len(docs) == 1
    containers = docs[0]["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item.get("valueFrom", {}) for c in containers for item in c.get("env", [])}
    assert set(ENV_NAMES) <= set(env)
    for name in (CPU_LIMIT, CPU_REQUEST):
        assert env[name]["resourceFieldRef"]["divisor"] == "1m"


@pytest.mark.parametrize(
    ("status", "mib"),
    [
        ("Name:\tpython\nVmPeak:\t 900000 kB\nVmHWM:\t  358400 kB\nVmRSS:\t 20480 kB\n", 350.0),
        ("VmHWM: 1024 kB", 1.0),
        ("Name:\tkthreadd\nThreads:\t1\n", None),  # kernel threads have no memory lines
        ("VmHWM:\t lots kB\n", None),
        ("VmHWM:\t 1024 MB\n", None),
        ("", None),
    ],
)
def test_peak_rss_is_vmhwm_in_mib_or_nothing(status: str, mib: float | None) -> None:
    assert parse_peak_rss_mib(status) == mib


def test_peak_rss_of_an_unreadable_proc_dir_is_unknown(tmp_path: Path) -> None:
    assert read_peak_rss_mib(tmp_path) is None
    (tmp_path / "status").write_text("VmHWM:\t 2048 kB\n")
    assert read_peak_rss_mib(tmp_path) == 2.0


@pytest.mark.parametrize(("line", "threads"), [("Threads:\t7", 7), ("Threads:", None), ("", None)])
def test_thread_count_is_the_threads_line(tmp_path: Path, line: str, threads: int | None) -> None:
    (tmp_path / "status").write_text(f"Name:\tpython\n{line}\nVmHWM:\t 2048 kB\n")
    assert read_thread_count(tmp_path) == threads
