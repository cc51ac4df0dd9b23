"""Stage times read back from the artifacts' signatures."""
import json

from pipeline.report.stage_times import stage_seconds, stage_table, write_stage_times


def signature(folder, seconds):
    folder.mkdir(parents=True)
    (folder / "signature.json").write_text(json.dumps({"seconds": seconds}))


def test_stage_times_sum_artifacts_per_stage_in_pipeline_order(tmp_path):
    profile = tmp_path / "small"
    signature(profile / "ger-eng" / "nmt" / "gru-seed1-aa", 300.0)
    signature(profile / "ger-eng" / "nmt" / "gru-seed2-bb", 306.0)
    signature(profile / "ger-eng" / "align" / "align-cc", 60.0)
    signature(profile / "ger-eng" / "custom" / "x-dd", 6.0)
    (profile / "ger-eng" / "pbmt" / "dev-ee.tmp-123").mkdir(parents=True)  # unfinished: not counted
    signature(profile / "eng-ger" / "align" / "align-ff", 30.0)
    times = stage_seconds(profile, ["ger-eng", "eng-ger"])
    assert times == {"ger-eng": {"nmt": 606.0, "align": 60.0, "custom": 6.0}, "eng-ger": {"align": 30.0}}
    header, rows = stage_table(times)
    assert header == ["stage (minutes)", "ger-eng", "eng-ger", "all tasks"]
    assert rows == [["alignment", 1.0, 0.5, 1.5], ["NMT training", 10.1, 0.0, 10.1], ["custom", 0.1, 0.0, 0.1],
                    ["all stages", 11.2, 0.5, 11.7]]
    paths = write_stage_times(tmp_path / "out", profile, ["ger-eng", "eng-ger"], "title")
    assert [p.name for p in paths] == ["stage_times.md", "stage_times.csv", "stage_times.png"]
    assert (tmp_path / "out" / "stage_times.csv").read_text().splitlines()[1] == "alignment,1.0,0.5,1.5"
    assert (tmp_path / "out" / "stage_times.png").read_bytes()[:4] == b"\x89PNG"
