"""The CPU description that every published figure carries."""
from __future__ import annotations

import pytest

from pipeline.machine import cpu_variant, describe_cpu


@pytest.mark.parametrize("flags, variant", [
    ({"sse2", "avx2", "avx512f", "amx_tile", "amx_bf16"}, "AVX-512 + AMX"),
    ({"sse2", "avx2", "avx512f", "avx512_bf16"}, "AVX-512"),
    ({"sse2", "avx", "avx2", "fma"}, "AVX2"),
    ({"sse2"}, "x86-64"),
    ({"fp", "asimd"}, "other"),
])
def test_the_variant_is_the_widest_vector_unit(flags, variant):
    assert cpu_variant(flags) == variant


def test_the_description_reads_the_first_processor_of_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 avx avx2 fma\n\n"
                       "processor\t: 1\nmodel name\t: other\nflags\t\t: sse2\n")
    cpu = describe_cpu(cpuinfo)
    assert (cpu.model, cpu.variant) == ("AMD EPYC 7B13", "AVX2") and cpu.cores >= 1
    assert str(cpu).startswith("AMD EPYC 7B13, ") and str(cpu).endswith(" cores, AVX2")
    missing = describe_cpu(tmp_path / "absent")
    assert (missing.model, missing.variant) == ("unknown", "unknown")
