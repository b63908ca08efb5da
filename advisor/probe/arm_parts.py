"""Names for arm64 CPUs, which /proc/cpuinfo identifies only by `CPU implementer` and `CPU part`.

arm64 kernels print no `model name`, so without this table an arm64 node's profile would carry no
CPU model at all, and advice measured on a Graviton2 (Neoverse-N1) could not be told apart from
advice measured on a Graviton3 (Neoverse-V1), whose wider SIMD and bf16 change what pays off.
Ids from the Arm Technical Reference Manuals (MIDR_EL1), as also listed by util-linux's lscpu.
Server parts first; a few client cores appear because developer boards and CI runners use them.
"""

from __future__ import annotations

#: implementer id -> vendor name
IMPLEMENTERS: dict[int, str] = {
    0x41: "ARM",
    0x42: "Broadcom",
    0x43: "Cavium",
    0x46: "Fujitsu",
    0x48: "HiSilicon",
    0x4E: "NVIDIA",
    0x50: "APM",
    0x51: "Qualcomm",
    0x61: "Apple",
    0x6D: "Microsoft",
    0xC0: "Ampere",
}

#: (implementer, part) -> core name (the cloud parts: Graviton2 = Neoverse-N1, Graviton3 =
#: Neoverse-V1, Graviton4 and Google Axion = Neoverse-V2, Azure Cobalt 100 = Neoverse-N2,
#: Ampere Altra = Neoverse-N1, AmpereOne = Ampere-1/1a)
PARTS: dict[tuple[int, int], str] = {
    (0x41, 0xD03): "Cortex-A53",
    (0x41, 0xD05): "Cortex-A55",
    (0x41, 0xD07): "Cortex-A57",
    (0x41, 0xD08): "Cortex-A72",
    (0x41, 0xD09): "Cortex-A73",
    (0x41, 0xD0A): "Cortex-A75",
    (0x41, 0xD0B): "Cortex-A76",
    (0x41, 0xD0C): "Neoverse-N1",
    (0x41, 0xD0D): "Cortex-A77",
    (0x41, 0xD40): "Neoverse-V1",
    (0x41, 0xD41): "Cortex-A78",
    (0x41, 0xD44): "Cortex-X1",
    (0x41, 0xD46): "Cortex-A510",
    (0x41, 0xD47): "Cortex-A710",
    (0x41, 0xD48): "Cortex-X2",
    (0x41, 0xD49): "Neoverse-N2",
    (0x41, 0xD4A): "Neoverse-E1",
    (0x41, 0xD4F): "Neoverse-V2",
    (0x41, 0xD84): "Neoverse-V3",
    (0x41, 0xD8E): "Neoverse-N3",
    (0x43, 0x0AF): "ThunderX2",
    (0x46, 0x001): "A64FX",
    (0x48, 0xD01): "Kunpeng-920",
    (0x4E, 0x004): "Carmel",
    (0x50, 0x000): "X-Gene",
    (0xC0, 0xAC3): "Ampere-1",
    (0xC0, 0xAC4): "Ampere-1a",
}


def arm_cpu_name(implementer: str, part: str) -> str | None:
    """`ARM Neoverse-V1` from "0x41" and "0xd40"; an unknown part keeps its ids, so the profile
    still says which CPU it was ("ARM part 0xd99"); None when the ids are not hex numbers."""
    try:
        impl, part_id = int(implementer, 16), int(part, 16)
    except ValueError:
        return None
    vendor = IMPLEMENTERS.get(impl, f"implementer {impl:#04x}")
    name = PARTS.get((impl, part_id))
    return f"{vendor} {name}" if name else f"{vendor} part {part_id:#05x}"
