"""reproduce-table --train-jobs: the run stops at the training stage with the Transformer's job packed, the job is
trained in another process that sees only its folder, and the next run adopts it: the pipeline decodes with it
exactly as with the same model trained in place. A result of another job is refused, naming the file."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import luigi.configuration
import pytest
from luigi.execution_summary import LuigiStatusCode

from pipeline.data.resolver import CHECKOUT
from pipeline.io import read_json, write_json
from pipeline.nmt.travelling_job import TrainingJobError, TrainingJobPending
from tasks import TrainNMT
from tasks.decode import DecodeTNMT
from tasks.reproduce import WAITING_FOR_TRAINING, main
from tests.tasks.helpers import build, shared_params, short_transformer_configs


@pytest.fixture
def configs(tmp_path):
    return short_transformer_configs(tmp_path / "configs")


@pytest.fixture
def no_jobs_setting():
    yield
    config = luigi.configuration.get_config()
    if config.has_option("TrainNMT", "jobs_dir"):
        config.remove_option("TrainNMT", "jobs_dir")


def _reproduce(tmp_path, data_dir, configs, work, *extra):
    return main(["--tasks", "ger-eng", "--profile", "tiny", "--data-dir", str(data_dir), "--systems", "TNMT",
                 "--table2-tasks", "none", "--processes", "1", "--config-dir", str(configs),
                 "--work-dir", str(tmp_path / work), "--out", str(tmp_path / f"out-{work}"), *extra])


def _train_elsewhere(job: Path, tmp_path: Path) -> Path:
    away = tmp_path / "gpu-node" / job.name
    shutil.copytree(job, away)
    env = {k: v for k, v in os.environ.items() if k != "MT_DATA_DIR"}
    env["PYTHONPATH"] = str(CHECKOUT)
    done = subprocess.run([sys.executable, "-m", "pipeline.cli.lmbr", "train-jobs", "train", str(away)],
                          cwd=away.parent, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return away


def test_a_job_trained_elsewhere_decodes_as_the_model_trained_in_place(tmp_path, data_dir, configs, capsys,
                                                                       no_jobs_setting):
    assert _reproduce(tmp_path, data_dir, configs, "here") == 0
    in_place = json.loads((tmp_path / "out-here" / "results.json").read_text())

    jobs = tmp_path / "jobs"
    assert _reproduce(tmp_path, data_dir, configs, "there", "--train-jobs", str(jobs)) == WAITING_FOR_TRAINING
    said = capsys.readouterr().err
    [job] = [p.parent for p in jobs.glob("*/manifest.json")]
    assert job.name.startswith("ger-eng-transformer-seed1-") and f"lmbr train-jobs train {job}" in said
    assert "stopped at the training stage: 1 training job(s) wait" in said
    assert not (tmp_path / "out-there").exists()  # nothing past the training stage ran

    trained = _train_elsewhere(job, tmp_path)
    shutil.rmtree(job)
    shutil.copytree(trained, job)
    assert _reproduce(tmp_path, data_dir, configs, "there", "--train-jobs", str(jobs)) == 0
    adopted = json.loads((tmp_path / "out-there" / "results.json").read_text())
    assert [(r["system"], r["bleu"]) for r in adopted] == [(r["system"], r["bleu"]) for r in in_place]

    params = shared_params(tmp_path, data_dir, config_dir=configs)
    here = DecodeTNMT(split="newstest2016", **{**params, "work_dir": str(tmp_path / "here")})
    there = DecodeTNMT(split="newstest2016", **{**params, "work_dir": str(tmp_path / "there")})
    assert (there.artifact_dir() / "translation.en").read_text() == (here.artifact_dir() / "translation.en").read_text()
    model = TrainNMT(architecture="transformer", seed=1, **{**params, "work_dir": str(tmp_path / "there")})
    stats = model.signature()["stats"]
    assert stats["trained_by"] == "job" and stats["job"] == job.name and stats["job_device"] == "cpu"


def test_the_result_of_another_job_is_refused_naming_the_file(tmp_path, data_dir, configs, no_jobs_setting):
    jobs = tmp_path / "jobs"
    luigi.configuration.get_config().set("TrainNMT", "jobs_dir", str(jobs))
    params = shared_params(tmp_path, data_dir, config_dir=configs)
    model = TrainNMT(architecture="transformer", seed=1, **params)
    assert build(*model.requires().values()).status == LuigiStatusCode.SUCCESS
    with pytest.raises(TrainingJobPending, match=r"result\.json: missing: the job has not finished training"):
        model.run()  # packed, waiting for its training
    job = model.job_folder()
    assert (job / "manifest.json").is_file() and not model.complete()
    trained = _train_elsewhere(job, tmp_path)
    record = read_json(trained / "result" / "result.json")
    write_json(trained / "result" / "result.json", {**record, "digest": "f" * 64})  # as if from another job
    shutil.rmtree(job)
    shutil.copytree(trained, job)
    with pytest.raises(TrainingJobError, match=r"result/result\.json: trained from another job"):
        model.run()
    assert not model.complete()
