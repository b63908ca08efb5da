"""/proc/cpuinfo: the CPU model and the ISA flags that decide which TF/oneDNN kernels can run."""

from __future__ import annotations

from dataclasses import dataclass

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
    """Model and flags from the first processor block; the processor count from all of them."""
    model: str | None = None
    flags: set[str] | None = None
    processors = 0
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
    present = flags or set()
    return CpuInfo(
        model=model,
        isa_flags=[flag for flag in INFERENCE_FLAGS if flag in present],
        processors=processors,
    )


def read_cpuinfo(files: HostFiles) -> CpuInfo | None:
    text = files.read(files.path("/proc/cpuinfo"))
    return None if text is None else parse_cpuinfo(text)
