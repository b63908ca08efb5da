"""/proc/cpuinfo: the CPU model and the ISA flags that decide which TF/oneDNN kernels can run."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.probe.arm_parts import arm_cpu_name
from advisor.probe.files import HostFiles

#: flags worth reporting for CPU inference (x86 AVX/AMX families; arm64 SIMD/SVE/matmul)
INFERENCE_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "asimddp",
    "sve",
    "sve2",
    "bf16",
    "i8mm",
)


@dataclass(frozen=True)
class CpuInfo:
    model: str | None
    isa_flags: list[str]
    processors: int


def parse_cpuinfo(text: str) -> CpuInfo:
    """Model and flags from the first processor block; the processor count from all of them.

    arm64 has no model name: its model is named from each block's `CPU implementer`/`CPU part`,
    every distinct core type in order (a big.LITTLE SoC gives "ARM Cortex-A76 + ARM Cortex-A55").
    """
    model: str | None = None
    flags: set[str] | None = None
    processors = 0
    implementers: list[str] = []
    parts: list[str] = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        value = value.strip()
        if key == "processor":
            processors += 1
        elif key in {"model name", "cpu model", "hardware"} and model is None and value:
            model = value
        elif key in {"flags", "features"} and flags is None:
            flags = set(value.split())
        elif key == "cpu implementer":
            implementers.append(value)
        elif key == "cpu part":
            parts.append(value)
    present = flags or set()
    return CpuInfo(
        model=model or _arm_model(implementers, parts),
        isa_flags=[flag for flag in INFERENCE_FLAGS if flag in present],
        processors=processors,
    )


def _arm_model(implementers: list[str], parts: list[str]) -> str | None:
    names: list[str] = []
    for implementer, part in zip(implementers, parts, strict=False):
        name = arm_cpu_name(implementer, part)
        if name is not None and name not in names:
            names.append(name)
    return " + ".join(names) or None


def read_cpuinfo(files: HostFiles) -> CpuInfo | None:
    text = files.read(files.path("/proc/cpuinfo"))
    return None if text is None else parse_cpuinfo(text)
