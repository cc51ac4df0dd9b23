"""benchmarks/length_tuning.py on the session's tiny system: the tuned length penalty against the shared one."""
from __future__ import annotations

from pipeline.io import read_lines


def test_length_tuning_reports_the_choice_and_both_devtest_scores(tiny_run, exported_systems, run_benchmark):
    from pipeline.evaluation.bleu import corpus_bleu

    task = exported_systems[0]["TNMT"]
    report = run_benchmark("length_tuning", "--profile", "tiny", "--task", "ger-eng", "--work-dir",
                           str(tiny_run.work_dir), "--config-dir", str(tiny_run.config_dir), "--data-dir",
                           task.data_dir, "--cache-dir", task.cache_dir, "--processes", "1",
                           "--grid", "0", "3", "--systems", "TNMT")
    assert report["benchmark"] == "length_tuning" and report["grid"] == [0.0, 3.0]
    assert "length_tuning.py" in report["command"] and "--grid 0 3" in report["command"]
    found = report["systems"]["TNMT"]
    tuning, devtest = found["tuning"], found["devtest"]
    assert [point["length_penalty"] for point in tuning["bleu"]] == [0.0, 3.0]
    best = max(point["bleu"] for point in tuning["bleu"])
    assert tuning["chosen"] == min(p["length_penalty"] for p in tuning["bleu"] if p["bleu"] == best)
    # the shared-penalty side is the session's TNMT decoded without the grid; its score is recomputed here
    references = list(read_lines(tiny_run.one("tokenized/newstest2016-*") / "raw.en.gz"))
    plain = [p for p in tiny_run.task_dir.glob("nmt-decode/TNMT-newstest2016-*/translation.en")]
    scores = {round(corpus_bleu(list(read_lines(path)), references, "en").score, 2) for path in plain}
    assert devtest["shared"] in scores and found["shared_length_penalty"] == 0.0
    assert devtest["difference"] == round(devtest["tuned"] - devtest["shared"], 2)
    assert 0.0 <= devtest["p_value"] <= 1.0 and all(r >= 0 for r in devtest["length_ratio"].values())
    if tuning["chosen"] > 0:  # the penalty keeps longer hypotheses (the model, trained for seconds, says little)
        assert devtest["length_ratio"]["tuned"] > devtest["length_ratio"]["shared"]
