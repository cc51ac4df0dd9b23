"""benchmarks/tuning_stability.py on the session's tiny system: two tuning windows, every tuned system decoded (LNMT
and LTNMT also with their search imposed)."""
from __future__ import annotations

import pytest

from pipeline.errors import ConfigError


def test_tuning_stability_reports_each_windows_choice_devtest_bleu_and_the_spread(tiny_run, exported_systems,
                                                                                 run_benchmark):
    task = exported_systems[0]["FNMT"]
    # the session's profile prepares 10 tuning lines and tunes on all of them (built already); the window 5:5 is new
    report = run_benchmark("tuning_stability", "--profile", "tiny", "--task", "ger-eng", "--work-dir",
                           str(tiny_run.work_dir), "--config-dir", str(tiny_run.config_dir), "--data-dir",
                           task.data_dir, "--cache-dir", task.cache_dir, "--processes", "1",
                           "--windows", "0:10", "5:5", "--each-search")
    assert report["benchmark"] == "tuning_stability" and report["windows"] == [[0, 10], [5, 5]]
    assert report["complete"] is True
    assert report["split"] == "newstest2016" and report["machine"]["torch_threads"] == 1
    assert set(report["systems"]) == {"LNMT", "LTNMT", "FNMT-lat", "TNMT-lat", "LNMT-lat", "LTNMT-lat", "MBR"}
    for system, found in report["systems"].items():
        windows = found["windows"]
        assert [w["window"] for w in windows] == [[0, 10], [5, 5]], system
        scores = [w["devtest_bleu"] for w in windows]
        assert all(0 <= s <= 100 for s in scores) and found["spread"] == round(max(scores) - min(scores), 2)
        assert all(w["chosen"] and w["chosen"]["tune_bleu"] is not None for w in windows), system
        assert found["same_choice"] == (windows[0]["chosen"] == windows[1]["chosen"])
    lnmt = report["systems"]["LNMT"]["windows"][0]["chosen"]
    assert {"nmt_lambda", "p", "r", "gains", "nbest"} <= lnmt.keys()
    assert "lattice_weight" in report["systems"]["LTNMT-lat"]["windows"][0]["chosen"]
    for system in ("LNMT", "LTNMT"):  # the tiny profile searches free only: imposing it repeats the tuned decoding
        found = report["systems"][system]
        assert [set(w["searches"]) for w in found["windows"]] == [{"free"}, {"free"}], system
        assert [w["searches"]["free"]["devtest_bleu"] for w in found["windows"]] == [
            w["devtest_bleu"] for w in found["windows"]], system
        assert found["search_spread"] == {"free": found["spread"]}
    assert "searches" not in report["systems"]["MBR"]["windows"][0]


def test_tuning_stability_refuses_a_window_past_the_prepared_tuning_lines(tiny_run, tmp_path):
    from tests.benchmarks.conftest import benchmark

    with pytest.raises(ConfigError, match=r"the tuning window ends at sentence 20 \(tune_start 10 \+ tune_sentences "
                                          r"10\), past the 10 tuning lines"):
        benchmark("tuning_stability").main(["--profile", "tiny", "--task", "ger-eng", "--work-dir",
                                            str(tiny_run.work_dir), "--config-dir", str(tiny_run.config_dir),
                                            "--windows", "0:10", "10:10", "--out", str(tmp_path / "never.json")])
    assert not (tmp_path / "never.json").exists()
