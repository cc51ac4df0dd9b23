"""The index of results/benchmarks is what its JSON files give (benchmarks/index.py)."""
from __future__ import annotations

import json

from tests.benchmarks.conftest import benchmark


def test_the_committed_index_is_current():
    assert benchmark("index").main(["--check"]) == 0, "run `python benchmarks/index.py`"


def test_index_rows_name_producer_command_machine_and_date(tmp_path):
    index = benchmark("index")
    (tmp_path / "gpu").mkdir()
    (tmp_path / "beam_speed_x.json").write_text(json.dumps({
        "benchmark": "beam_speed", "command": "python benchmarks/beam_speed.py --runs 1",
        "machine": {"date": "2026-12-01", "cpu": "Some CPU", "cpu_count": 2}}))
    (tmp_path / "gpu" / "serve_load_y.json").write_text(json.dumps({"machine": "AMD EPYC, 2 cores", "date": "2026-11-30"}))
    (tmp_path / "notes.csv").write_text("a,b\n")
    (tmp_path / "peer_nmt_x_logs").mkdir()  # a run's log beside its report: listed, not a report of its own
    (tmp_path / "peer_nmt_x_logs" / "speed-ours-0-ours.json").write_text(json.dumps({"rows": []}))
    assert index.main(["--check", "--folder", str(tmp_path)]) == 1  # no index yet
    assert index.main(["--folder", str(tmp_path)]) == 0
    text = (tmp_path / "README.md").read_text()
    assert ("| [beam_speed_x.json](beam_speed_x.json) | `python benchmarks/beam_speed.py --runs 1` | Some CPU, 2 cores "
            "| 2026-12-01 |") in text
    assert "| [gpu/serve_load_y.json](gpu/serve_load_y.json) | not recorded | AMD EPYC, 2 cores | 2026-11-30 |" in text
    assert "- [notes.csv](notes.csv)" in text
    assert "- [peer_nmt_x_logs/speed-ours-0-ours.json](peer_nmt_x_logs/speed-ours-0-ours.json)" in text
    assert "## peer_nmt" not in text
    assert index.main(["--check", "--folder", str(tmp_path)]) == 0
