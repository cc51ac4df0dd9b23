"""The forecast before a run: each stage's minutes from a published run's stage seconds per artifact, scaled by
this machine's speed over that run's (the seconds a Transformer update takes), NMT training from the probe, and the
wall time of their list schedule on the workers."""
import json
from pathlib import Path

import pytest

from pipeline.list_schedule import schedule_minutes
from pipeline.machine_speed import TrainingSpeed
from pipeline.run_estimate import VALIDATION_SHARE, reference_runs
from tasks import TaskReport
from tasks.nmt import TrainNMT
import tasks.run_estimate as run_estimate
from tasks.worker_priority import task_graph
from tests.tasks.helpers import shared_params


def _published(folder: Path, seconds_per_update: float) -> Path:
    """A results folder whose ger-eng run took 60 s per PBMT decoding stage and 120 s for its two truecasers."""
    folder.mkdir()
    (folder / "report_inputs.json").write_text(json.dumps({
        "systems": ["PBMT", "TNMT"], "figures": [], "graph": {},
        "stage_times": {"ger-eng": {"stages": {"pbmt": 240.0, "truecaser": 60.0}}},
        "curves": {"ger-eng TNMT transformer seed 1": [{"update": 100, "minutes": seconds_per_update * 100 / 60}]},
        "provenance": {"ger-eng": {"cpu": "AMD EPYC", "cpu_variant": "AVX-512", "workers": 2, "date": "2026-12-04",
                                   "commit": "abc"}}}))
    return folder


def test_stages_scale_from_the_published_run_and_training_from_the_probe(tmp_path, data_dir, monkeypatch):
    published = _published(tmp_path / "published", seconds_per_update=0.5)
    [reference] = reference_runs(published).values()
    assert reference.transformer_seconds_per_update == pytest.approx(0.5) and "AVX-512" in reference.described
    probe = {1: 0.25, 2: 0.2}  # seconds per update here, by threads: scale (0.25 x 1.1) / 0.5 = 0.55
    monkeypatch.setattr(run_estimate, "training_speed",
                        lambda arch, recipe, threads, vocab, **_: TrainingSpeed(arch, threads, 100, probe[threads], 1))
    monkeypatch.setattr(run_estimate, "gemm_gflops", lambda threads, **_: 10.0 * threads)
    params = {**shared_params(tmp_path, data_dir), "processes": 2}
    report = TaskReport(systems=("PBMT", "TNMT"), eval_set="devtest", **params)
    estimate = run_estimate.estimate_run([report], 2, published)
    graph = [t for t in task_graph([report]) if getattr(t, "stage", "")]
    pbmt_decodes = [t for t in task_graph([report.clone(TaskReport, systems=("PBMT", "TNMT"))])
                    if getattr(t, "stage", "") == "pbmt"]
    scale = 0.25 * (1 + VALIDATION_SHARE) / 0.5
    per_decode = 240.0 / len(pbmt_decodes) / 60 * scale / 2  # a parallel stage on 2 processes
    assert estimate.stage_minutes["ger-eng"]["pbmt"] == pytest.approx(per_decode * len(pbmt_decodes), abs=0.01)
    assert estimate.stage_minutes["ger-eng"]["truecaser"] == pytest.approx(60.0 / 60 * scale, abs=0.01)
    [model] = [t for t in graph if isinstance(t, TrainNMT)]
    updates = model.arch_profile().training.max_updates
    assert estimate.stage_minutes["ger-eng"]["nmt"] == pytest.approx(updates * 0.2 * (1 + VALIDATION_SHARE) / 60,
                                                                    abs=0.01)
    assert estimate.machine["gflops_1_thread"] == 10.0 and estimate.basis == [
        f"ger-eng: scaled from the run in {published} (AMD EPYC, AVX-512, 2 worker(s), 2026-12-04, commit abc)"]
    assert estimate.task_minutes["ger-eng"] == pytest.approx(sum(estimate.stage_minutes["ger-eng"].values()), abs=0.1)
    assert 0 < estimate.wall_minutes <= estimate.task_minutes["ger-eng"] + 0.1
    lone = run_estimate.estimate_run([report], 1, published)
    assert lone.wall_minutes == pytest.approx(lone.task_minutes["ger-eng"], abs=0.1)  # one worker: the sum


def test_without_a_published_run_the_rough_stage_minutes_are_said(tmp_path, data_dir, monkeypatch):
    monkeypatch.setattr(run_estimate, "gemm_gflops", lambda threads, **_: 1.0)
    report = TaskReport(systems=("PBMT",), eval_set="devtest", **shared_params(tmp_path, data_dir))
    estimate = run_estimate.estimate_run([report], 1, tmp_path / "none")
    assert estimate.basis == ["ger-eng: no run of this profile to scale from; rough stage minutes"]
    assert "expected wall time: about" in run_estimate.describe_estimate(estimate)
    assert schedule_minutes({"a": []}, {"a": 1.0}, 1) == 1.0


def test_the_forecast_scales_from_the_published_run_else_the_reference_run_of_an_unpublished_profile():
    from tasks.reproduce import forecast_reference

    assert forecast_reference("medium").as_posix().endswith("results/medium")  # published
    assert forecast_reference("paper").as_posix().endswith("results/paper")  # neither: the published place


def test_a_stage_the_reference_run_did_not_build_is_scaled_from_its_neural_decoding():
    from tasks.run_estimate import _relative_seconds
    from tasks.worker_priority import STAGE_MINUTES

    class Sampling:
        stage = "nmt-samples"

    ratio = STAGE_MINUTES["nmt-samples"] / STAGE_MINUTES["nmt-decode"]
    assert _relative_seconds(Sampling(), {"nmt-decode": 60.0, "pbmt": 5.0}) == 60.0 * ratio
    assert _relative_seconds(Sampling(), {"pbmt": 5.0}) is None  # no decoding to scale from: rough minutes
