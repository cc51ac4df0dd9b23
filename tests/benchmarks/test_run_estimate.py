"""benchmarks/run_estimate.py: the forecast made now for an empty work folder, set stage by stage beside the build
minutes of a finished run's own artifacts."""
import json

import pytest

from pipeline.io import read_json
from tasks.reproduce import main
from tests.benchmarks.conftest import benchmark


def test_each_stage_s_actual_minutes_are_its_artifacts_build_seconds(tmp_path, data_dir):
    work = tmp_path / "work"
    assert main(["--tasks", "ger-eng", "--profile", "tiny", "--data-dir", str(data_dir), "--systems", "none",
                 "--work-dir", str(work), "--out", str(tmp_path / "out"), "--no-estimate"]) == 0
    out = tmp_path / "estimate.json"
    assert benchmark("run_estimate").main(["--work-dir", str(work), "--profile", "tiny", "--tasks", "ger-eng",
                                           "--systems", "none", "--processes", "1", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    seconds = {}
    for signature in (work / "tiny" / "ger-eng").glob("*/*/signature.json"):
        stage = signature.parent.parent.name
        seconds[stage] = seconds.get(stage, 0.0) + read_json(signature)["seconds"]
    assert {row["stage"]: row["actual_minutes"] for row in report["stages"]} == pytest.approx(
        {stage: round(value / 60, 2) for stage, value in seconds.items()}, abs=0.011)
    assert report["actual_wall_minutes"] == pytest.approx(sum(seconds.values()) / 60, abs=0.1)  # one worker
    assert report["forecast"]["wall_minutes"] > 0 and report["forecast"]["basis"] == [
        "ger-eng: no run of this profile to scale from; rough stage minutes"]
    with pytest.raises(SystemExit, match="signature.json: missing: the run did not finish"):
        benchmark("run_estimate").main(["--work-dir", str(tmp_path / "empty"), "--profile", "tiny", "--tasks",
                                        "ger-eng", "--systems", "none", "--out", str(out)])
    assert benchmark("run_estimate").main(["--work-dir", str(tmp_path / "empty"), "--profile", "tiny", "--tasks",
                                           "ger-eng", "--systems", "none", "--partial", "--out", str(out)]) == 0
    partial = json.loads(out.read_text())
    assert partial["partial"] and partial["stages"] == [] and partial["relative_error"] is None
