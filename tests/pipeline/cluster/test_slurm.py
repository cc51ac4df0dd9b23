"""pipeline/cluster/slurm.py against a real single-node Slurm (tests/conftest.py's slurm_cluster)."""
import time

import pytest

from pipeline.cluster import slurm


def submit(cluster, tmp_path, command, **request):
    log = tmp_path / "job-%j.log"
    job = slurm.submit(["bash", "-c", command], "test", log, slurm.JobRequest(**request), tmp_path)
    return job, tmp_path / f"job-{job}.log"


def test_a_job_runs_and_completes(slurm_cluster, tmp_path):
    job, log = submit(slurm_cluster, tmp_path, "echo hello from $SLURM_JOB_ID; echo done > out.txt", cores=1)
    ended = slurm.wait(job, poll_seconds=0.2)
    assert (ended.state, ended.exit_code, ended.succeeded) == ("COMPLETED", 0, True)
    assert log.read_text() == f"hello from {job}\n"
    assert (tmp_path / "out.txt").read_text() == "done\n"  # --chdir: the job ran in the folder asked for


def test_a_failing_job_reports_its_exit_code(slurm_cluster, tmp_path):
    job, log = submit(slurm_cluster, tmp_path, "echo broken >&2; exit 3")
    ended = slurm.wait(job, poll_seconds=0.2)
    assert (ended.state, ended.exit_code, ended.succeeded) == ("FAILED", 3, False)
    assert list(slurm.tail(log)) == ["broken"]


def test_cancel_ends_a_running_job(slurm_cluster, tmp_path):
    job, _ = submit(slurm_cluster, tmp_path, "sleep 60")
    for _ in range(100):  # until it runs
        if slurm.status(job).state == "RUNNING":
            break
        time.sleep(0.1)
    slurm.cancel(job)
    ended = slurm.wait(job, poll_seconds=0.2)
    assert ended.state == "CANCELLED" and not ended.succeeded and not ended.active


def test_stopping_the_waiter_cancels_the_job(slurm_cluster, tmp_path):
    job, _ = submit(slurm_cluster, tmp_path, "sleep 60")
    with pytest.raises(KeyboardInterrupt):
        with slurm.cancel_on_stop(job):
            raise KeyboardInterrupt("the worker was stopped")
    assert slurm.wait(job, poll_seconds=0.2).state == "CANCELLED"


def test_requests_become_sbatch_options():
    request = slurm.JobRequest(cores=4, memory_mb=8000, time_minutes=90, partition="gpu", gpus=1)
    assert request.sbatch_options() == ["--cpus-per-task=4", "--ntasks=1", "--nodes=1", "--mem=8000M", "--time=90",
                                        "--partition=gpu", "--gpus=1"]
    assert slurm.JobRequest().sbatch_options() == ["--cpus-per-task=1", "--ntasks=1", "--nodes=1"]
    several = slurm.JobRequest(cores=16, memory_mb=64000, gpus=4, nodes=2)  # data-parallel NMT training
    assert several.sbatch_options() == ["--cpus-per-task=16", "--nodes=2", "--ntasks-per-node=1", "--mem=64000M",
                                        "--gpus-per-node=4"]


def test_an_impossible_request_is_a_clear_error(slurm_cluster, tmp_path):
    with pytest.raises(slurm.SlurmError, match="sbatch --parsable .* failed: .*"):
        submit(slurm_cluster, tmp_path, "true", partition="no-such-partition")
