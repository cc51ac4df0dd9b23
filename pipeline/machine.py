"""The machine a figure was measured on: CPU model, cores and the vector-instruction variant.

One machine kind comes in several CPU variants (an Intel Xeon with AVX-512 and AMX, AMD EPYCs with AVX-512 or with
AVX2 only), and speed figures differ between them, so every published figure names its variant.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class CpuDescription:
    model: str  # "Intel(R) Xeon(R) Processor @ 2.60GHz"
    cores: int  # logical CPUs this process sees
    variant: str  # "AVX-512 + AMX", "AVX-512", "AVX2", "x86-64" or the architecture's name

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.model}, {self.cores} cores, {self.variant}"


def cpu_variant(flags: set[str]) -> str:
    """The widest vector unit among the CPU's flags (from /proc/cpuinfo), as the variant's name."""
    if "avx512f" in flags:
        return "AVX-512 + AMX" if "amx_tile" in flags else "AVX-512"
    if "avx2" in flags:
        return "AVX2"
    return "x86-64" if "sse2" in flags else "other"


def describe_cpu(cpuinfo: Path = CPUINFO) -> CpuDescription:
    """This machine's CPU; "unknown" where /proc/cpuinfo cannot be read (not Linux)."""
    model, flags = "unknown", set()
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and model == "unknown":
                model = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return CpuDescription(model, os.cpu_count() or 1, cpu_variant(flags) if flags else "unknown")
