"""benchmarks/common.py's run accounting: the host's steal time read from /proc/stat, and RunClock."""
from __future__ import annotations

import os
import time

import pytest

from tests.benchmarks.conftest import benchmark

PROC_STAT = """cpu  4705 356 584 3699176 2316 0 17 250 0 0
cpu0 1393 105 170 1849637 1103 0 7 130 0 0
intr 1151543 17 10 0 0
"""


def test_steal_seconds_reads_the_eighth_value_of_the_cpu_line():
    common = benchmark("common")
    assert common.steal_seconds(PROC_STAT) == pytest.approx(250 / os.sysconf("SC_CLK_TCK"))


def test_steal_seconds_is_none_where_the_kernel_does_not_count_it():
    common = benchmark("common")
    assert common.steal_seconds("cpu  4705 356 584 3699176\n") is None
    assert common.steal_seconds("intr 1 2 3\n") is None


def test_run_clock_counts_this_process_cpu_and_not_its_sleep():
    common = benchmark("common")
    with common.RunClock() as clock:
        deadline = time.process_time() + 0.05
        while time.process_time() < deadline:  # busy: CPU time
            pass
        time.sleep(0.1)  # idle: wall time only
    record = clock.record()
    assert record["seconds"] >= 0.15 - 1e-3
    assert 0.05 - 1e-3 <= record["cpu_seconds"] < record["seconds"]
    assert record["steal_s"] is None or record["steal_s"] >= 0
