"""Smoke tests of the training benchmarks: nmt_train (its worker run in this process instead of one process per
run), peer_nmt (which needs the eole package and an hour a run: its log parsing and its report, with the two
toolkits' runs faked) and the analysis tools learning_curve (a recipe from a copy of the configs, on the session's
tiny de-en inputs), job_curve (the same job packed, moved and trained again) and tune_bleu (the session's tiny
Transformer)."""
from __future__ import annotations

import argparse
import json

import pytest

from tests.benchmarks.conftest import benchmark


def test_nmt_train_measures_both_models_on_synthetic_data(run_benchmark, monkeypatch, tmp_path):
    module = benchmark("nmt_train")

    def in_process(args, architecture, variant, loss_updates=0):  # what spawn's worker process does
        code_root, precision, compiled = variant
        return module.worker(argparse.Namespace(**{**vars(args), "architectures": architecture, "precision": precision,
                                                   "compiled": compiled, "loss_updates": loss_updates}))

    monkeypatch.setattr(module, "spawn", in_process)
    report = run_benchmark("nmt_train", "--profile", "tiny", "--architectures", "gru,transformer", "--threads", "1",
                           "--runs", "1", "--warmup", "1", "--updates", "2", "--lines", "200", "--synthetic-vocab",
                           "200", "--work-dir", str(tmp_path / "no-work"))
    assert report["data"]["kind"] == "synthetic"
    assert [r["architecture"] for r in report["results"]] == ["gru", "transformer"]
    for result in report["results"]:
        current = result["variants"]["current"]
        assert current["parameters"] > 0 and current["precision"] == "fp32"
        assert current["median_target_tokens_per_s"] > 0 and len(current["target_tokens_per_s_runs"]) == 1


EOLE_LOG = """[2026-11-30 06:00:01] Step 20/ 9999; acc: 2.1; ppl: 9000.1; xent: 9.1; aux: 0.000; lr: 1.33e-05; sents:   1000; bsz: 1800/1667/50; 3300/3000 tok/s;     10 sec;
[2026-11-30 06:00:11] Step 40/ 9999; acc: 3.1; ppl: 5000.3; xent: 8.5; aux: 0.000; lr: 2.66e-05; sents:   1000; bsz: 1800/1667/50; 3400/3100 tok/s;     21 sec;
"""


def test_peer_nmt_reads_eoles_log_and_its_steady_rate():
    module = benchmark("peer_nmt")
    reports = module.parse_eole_log(EOLE_LOG)
    assert reports == [{"step": 20, "lr": 1.33e-05, "target_tokens_per_s": 3000.0, "train_s": 10.0},
                       {"step": 40, "lr": 2.66e-05, "target_tokens_per_s": 3100.0, "train_s": 21.0}]
    assert module.steady_rate([(0.0, 0.0), (60.0, 1000.0), (120.0, 4000.0)], skip=60.0) == 50.0
    assert module.steady_rate([(0.0, 0.0)], skip=60.0) is None


def test_peer_nmt_trains_the_tasks_own_recipe_and_caps_nothing():
    module = benchmark("peer_nmt")
    arch, own = module.training_settings("medium", "ger-eng")  # the task replaces batch, updates and warm-up
    assert (own.max_tokens, own.warmup_updates, arch.layers, arch.model_size) == (1000, 1600, 3, 256)
    assert (own.max_updates, own.budget_seconds, own.checkpoint_every, own.distillation) == (0, 0, 10 ** 9, "none")
    _, profiles = module.training_settings("medium", "chi-eng")  # no entries of its own: the profile's
    assert (profiles.max_tokens, profiles.warmup_updates) == (2000, 800)


def test_peer_nmt_keeps_eoles_newest_checkpoint_before_each_mark_and_none_in_a_speed_run():
    module = benchmark("peer_nmt")
    saved = {"step_900": 590.0, "step_1800": 1170.0, "step_2700": 1790.0, "step_3600": 2390.0}
    assert module.checkpoint_before(saved, 30, save_steps=900) == "step_2700"
    assert module.checkpoint_before(saved, 60, save_steps=900) == "step_3600"
    assert module.checkpoint_before({}, 4, save_steps=None) is None  # a speed run saves nothing and needs nothing
    with pytest.raises(SystemExit, match="no checkpoint before the 4-minute mark"):
        module.checkpoint_before({"step_900": 590.0}, 4, save_steps=900)


def test_peer_nmt_runs_our_trainer_on_the_same_task_and_settings(tmp_path):
    module = benchmark("peer_nmt")
    args = module.parse_args(["--task", "eng-ger", "--profile", "medium", "--threads", "3", "--seed", "7"])
    data = module.TaskData("en", "de", *(tmp_path / name for name in ("train", "vocab", "dev", "raw", "tc")))
    worker = module.parse_args(module.ours_command(args, data, tmp_path / "run", [30.0, 60.0])[2:])
    assert worker.worker_ours and worker.out_dir == str(tmp_path / "run") and worker.minutes == [30.0, 60.0]
    assert (worker.task, worker.profile, worker.threads, worker.seed) == ("eng-ger", "medium", 3, 7)
    assert json.loads(worker.data) == {k: str(v) for k, v in vars(data).items()}


def test_peer_nmt_writes_its_report_from_both_toolkits_runs(monkeypatch, tmp_path):
    module = benchmark("peer_nmt")
    args = module.parse_args(["--profile", "tiny", "--phases", "speed,quality", "--speed-runs", "3", "--minutes",
                              "1", "--run-dir", str(tmp_path / "runs"), "--out", str(tmp_path / "peer.json")])
    assert args.minutes == [1.0] and args.eole_batch_size == 0 and args.previous is None
    assert args.logs_dir == tmp_path / "peer_logs" and args.max_load == 0.3
    save_steps = []

    def fake(rate):
        def run(args, data, out, minutes, **options):
            save_steps.append(options.get("save_steps"))
            return {"steady_target_tokens_per_s": rate, "updates": 100, "wall_s": 50.0,
                    "checkpoints": {f"{m:g}": {"update": 10, "bleu": 1.5} for m in minutes}}
        return run

    for name, value in (("task_data", lambda *a: None), ("ensure_peer", lambda venv: venv),
                        ("run_ours", fake(120.0)), ("run_eole", fake(100.0)),
                        ("evaluate", lambda args, data, runs, out: None),
                        ("significance", lambda data, runs, out, n: {m: {"BLEU": {"p_value": 0.5}}
                                                                     for m in runs["ours"]["checkpoints"]})):
        monkeypatch.setattr(module, name, value)
    module.main(args)
    report = json.loads((tmp_path / "peer.json").read_text())
    assert report["significance"] == {"1": {"BLEU": {"p_value": 0.5}}} and "significance" in report["commands"]
    assert report["speed"] == {"ours": 120.0, "eole": 100.0}
    assert len(report["speed_runs"]["ours"]) == 3 and set(report["machines"]) == {"speed", "quality"}
    assert report["machines"]["speed"]["cpu_variant"]
    assert report["quality"]["ours"]["checkpoints"]["1"]["update"] == 10
    # eole saves only for the marks: 97% of the updates its speed runs made in a mark's time (2 a second, 1 minute)
    assert report["eole_save_checkpoint_steps"] == 116 and save_steps[-1] == 116
    assert save_steps[:6] == [None] * 6  # the speed runs save nothing
    # a later run of one phase keeps the other's
    too_few = module.parse_args(["--profile", "tiny", "--phases", "speed", "--speed-runs", "2", "--out",
                                 str(tmp_path / "peer3.json")])
    with pytest.raises(SystemExit, match="at least 3"):
        module.main(too_few)
    again = module.parse_args(["--profile", "tiny", "--phases", "speed", "--speed-runs", "3", "--previous",
                               str(tmp_path / "peer.json"), "--run-dir", str(tmp_path / "runs"),
                               "--out", str(tmp_path / "peer2.json")])
    module.main(again)
    kept = json.loads((tmp_path / "peer2.json").read_text())
    assert "quality" in kept and len(kept["speed_runs"]["eole"]) == 3


def test_peer_nmt_compares_the_toolkits_at_each_mark_both_kept_by_paired_bootstrap(tmp_path):
    import gzip

    module = benchmark("peer_nmt")
    references = [f"the house number {i} is small and old ." for i in range(40)]
    with gzip.open(tmp_path / "raw.en.gz", "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in references))
    worse = [line.replace("small", "big").replace("old", "new") for line in references]
    for name, minute, lines in (("ours", "30", references), ("eole", "30", worse), ("ours", "60", references)):
        (tmp_path / f"{name}-{minute}min.en").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    data = module.TaskData("de", "en", *(tmp_path,) * 5)
    runs = {"ours": {"checkpoints": {"30": {}, "60": {}}}, "eole": {"checkpoints": {"30": {}}}}
    compared = module.significance(data, runs, tmp_path, 40)
    assert list(compared) == ["30"]  # eole kept nothing at 60
    assert compared["30"]["BLEU"]["score"] == pytest.approx(100.0)
    assert compared["30"]["BLEU"]["baseline_score"] < 60 and compared["30"]["BLEU"]["p_value"] < 0.05
    assert set(compared["30"]) == {"BLEU", "chrF2"}


def test_peer_nmt_measures_only_on_a_quiet_machine_and_keeps_each_runs_log(tmp_path):
    module = benchmark("peer_nmt")
    assert len(module.wait_for_quiet(10 ** 6, 0.0, "run")) == 3
    with pytest.raises(SystemExit, match="not measured on a busy machine"):
        module.wait_for_quiet(0.0, 0.0, "eole in speed-eole-0")
    log = tmp_path / "eole.log"
    log.write_text("Step 20/ 9999")
    kept = module.keep_log(log, tmp_path / "logs", "speed-eole-0-eole.log")
    assert (tmp_path / "logs" / "speed-eole-0-eole.log").read_text() == "Step 20/ 9999" and kept.endswith(".log")
    with pytest.raises(SystemExit, match="speed phase"):
        module.eole_save_steps([30.0], None)


def _validating_every_2_updates(tiny_run, tmp_path):
    """A copy of the tiny run's configs whose Transformer validates on 5 tuning sentences every 2 updates."""
    import re
    import shutil

    configs = tmp_path / "configs"
    shutil.copytree(tiny_run.config_dir, configs)
    profile = configs / "profiles" / "tiny.toml"
    head, transformer = profile.read_text().split("[nmt.transformer.training]")
    transformer = re.sub(r"^checkpoint_every = .*$", "checkpoint_every = 2", transformer, count=1, flags=re.M)
    transformer = re.sub(r"^valid_sentences = .*$", "valid_sentences = 5", transformer, count=1, flags=re.M)
    profile.write_text(head + "[nmt.transformer.training]" + transformer)
    return configs


def test_learning_curve_trains_a_recipe_from_a_config_copy_and_reports_an_interrupted_run(tiny_run, monkeypatch,
                                                                                          tmp_path):
    import shutil
    import signal

    configs = _validating_every_2_updates(tiny_run, tmp_path)
    module = benchmark("learning_curve")
    common = ["--profile", "tiny", "--task", "ger-eng", "--architecture", "transformer", "--work-dir",
              str(tiny_run.work_dir), "--config-dir", str(configs), "--threads", "1"]
    out = tmp_path / "curve.json"
    handler = signal.getsignal(signal.SIGTERM)
    try:
        assert module.main([*common, "--max-updates", "4", "--out", str(out)]) == 0
        assert signal.getsignal(signal.SIGTERM) is handler  # SIGTERM stops the training only, not later forks
        report = json.loads(out.read_text())
        assert report["stop_reason"] == "max_updates" and report["updates"] == 4
        assert [p["update"] for p in report["curve"]] == [2, 4] and report["config_dir"] == str(configs)
        assert all(p["valid_loss"] > 0 for p in report["curve"])

        run_job = module.run_job

        def interrupted_at_7(job, ranks):  # Ctrl-C during update 7: the checkpoint of update 6 stands
            def hook(update):
                if update == 7:
                    raise KeyboardInterrupt
            return run_job(job, ranks, after_update=hook)

        monkeypatch.setattr(module, "run_job", interrupted_at_7)
        assert module.main([*common, "--max-updates", "10", "--out", str(out)]) == 0
        report = json.loads(out.read_text())
        assert report["stop_reason"] == "interrupted" and report["updates"] == 6
        assert [p["update"] for p in report["curve"]] == [2, 4, 6]  # resumed from update 4
    finally:
        shutil.rmtree(json.loads(out.read_text())["state_dir"] if out.exists() else tmp_path / "none",
                      ignore_errors=True)


def test_tune_bleu_scores_a_models_checkpoints_and_their_average(tiny_run, run_benchmark, tmp_path):
    checkpoints = tiny_run.one("nmt/transformer-seed1-*") / "checkpoints"
    report = run_benchmark("tune_bleu", "--profile", "tiny", "--task", "ger-eng", "--work-dir", str(tiny_run.work_dir),
                           "--config-dir", str(tiny_run.config_dir), "--checkpoints", str(checkpoints),
                           "--average", "1", "2", "--sentences", "8", "--threads", "1", "--outputs", str(tmp_path))
    assert report["sentences"] == 8 and report["beam"] == 4
    assert [(r["average"], len(r["checkpoints"])) for r in report["results"]] == [(1, 1), (2, 2)]
    assert all(0 <= r["bleu"] <= 100 and 0 <= r["bleu_truecased_tokens"] <= 100 for r in report["results"])
    from pipeline.config import load_task
    from pipeline.evaluation.bleu import corpus_bleu
    from pipeline.io import read_lines

    tune = load_task("ger-eng", config_dir=tiny_run.config_dir).splits.tune
    references = list(read_lines(tiny_run.one(f"tokenized/{tune}-*") / "raw.en.gz"))[:8]
    for row in report["results"]:  # the kept output is the one scored
        kept = list(read_lines(tmp_path / f"average{row['average']}_lp{row['length_penalty']:g}.en"))
        assert len(kept) == 8 and corpus_bleu(kept, references, "en").score == pytest.approx(row["bleu"], abs=0.01)


def test_job_curve_packs_a_job_that_trains_elsewhere_as_it_would_in_place(tiny_run, tmp_path):
    import shutil

    configs = _validating_every_2_updates(tiny_run, tmp_path)
    task = ["--profile", "tiny", "--task", "ger-eng", "--architecture", "transformer", "--work-dir",
            str(tiny_run.work_dir), "--config-dir", str(configs)]
    in_place = tmp_path / "in_place.json"
    module = benchmark("job_curve")
    try:
        assert benchmark("learning_curve").main([*task, "--threads", "1", "--max-updates", "4",
                                                 "--out", str(in_place)]) == 0
        assert module.main(["pack", *task, "--folder", str(tmp_path / "packed")]) == 0
    finally:
        shutil.rmtree(json.loads(in_place.read_text())["state_dir"] if in_place.exists() else tmp_path / "none",
                      ignore_errors=True)
    moved = tmp_path / "elsewhere"
    shutil.move(tmp_path / "packed", moved)  # every path in job.json is relative to its folder
    job = json.loads((moved / "job.json").read_text())
    assert job["state_dir"] == "state" and not any("/" in path for path in job["train"].values())
    out = tmp_path / "travelled.json"
    assert module.main(["train", "--folder", str(moved), "--threads", "1", "--max-updates", "4",
                        "--out", str(out)]) == 0
    report, reference = json.loads(out.read_text()), json.loads(in_place.read_text())
    assert report["stop_reason"] == "max_updates" and report["updates"] == 4 and report["machine"]["device"] == "cpu"
    assert [p["update"] for p in report["curve"]] == [p["update"] for p in reference["curve"]] == [2, 4]
    for travelled, local in zip(report["curve"], reference["curve"]):  # same job, same device: the same model
        assert travelled["valid_loss"] == pytest.approx(local["valid_loss"], rel=1e-6)
        assert travelled["valid_bleu"] == pytest.approx(local["valid_bleu"], abs=1e-6)
    with pytest.raises(SystemExit, match="missing/job.json: no packed job there"):
        module.main(["train", "--folder", str(tmp_path / "missing")])
    with pytest.raises(SystemExit, match="--set bogus=1: not KEY=VALUE of a training setting"):
        module.main(["train", "--folder", str(moved), "--set", "bogus=1"])
    assert report["state_dir"] == "state" and report["overrides"] == {"training": {}, "model": {}}
    assert module.main(["train", "--folder", str(moved), "--threads", "1", "--max-updates", "2", "--set",
                        "max_tokens=300", "--out", str(out)]) == 0
    probed = json.loads(out.read_text())  # a probe trains from update 0 in its own state, not on from update 4
    assert probed["state_dir"].startswith("state-") and probed["overrides"]["training"] == {"max_tokens": 300}
    assert [p["update"] for p in probed["curve"]] == [2] and (moved / "state" / "checkpoint-00000004.pt").is_file()
    probe = module._overrides(["max_tokens=300", "model.dropout=0.3", "compile=yes"], module.unpack(moved))
    assert probe == {"training": {"max_tokens": 300, "compile": True}, "model": {"dropout": 0.3}}
    caps = module.parse_args(["train", "--folder", str(moved)])  # a --set cap is kept, the command line's wins
    assert module.training_caps(caps, {"max_updates": 6}, {"max_updates": 4}) == {"max_updates": 6, "budget_seconds": 0}
    assert module.training_caps(caps, {}, {"max_updates": 4, "budget_seconds": 7800}) == {"max_updates": 4,
                                                                                        "budget_seconds": 0}
    caps = module.parse_args(["train", "--folder", str(moved), "--max-updates", "2", "--budget-minutes", "1"])
    assert module.training_caps(caps, {"max_updates": 6, "budget_seconds": 30}, {"max_updates": 4}) == {
        "max_updates": 2, "budget_seconds": 60}
