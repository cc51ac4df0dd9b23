"""Heavy stages as batch jobs: luigi.cfg's [cluster] section picks the scheduler and the resources of each job.

    [cluster]
    scheduler = local        # local | slurm
    poll_seconds = 5
    partition =              # every job's partition ('' : the cluster's default)
    time_minutes = 0         # every job's time limit (0: the partition's)
    [cluster.nmt]            # one stage's requests (the stage names of the artifact folders)
    cores = 4
    memory_mb = 8000
    gpus = 1
    time_minutes = 600

The Luigi worker submits the task's build as a job (`python -m tasks.job`), polls it, cancels it when the worker is
stopped, and fails with the job's log path (and its last lines) when the job does not leave a complete artifact.
The job id is kept beside the artifact while the job runs, so that a worker killed and restarted waits for the job
it had submitted instead of starting a second one.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import luigi.configuration

from pipeline.cluster import slurm
from pipeline.errors import ConfigError
from pipeline.io import write_text

if TYPE_CHECKING:
    from tasks.base import PipelineTask

SCHEDULERS = ("local", "slurm")
REQUEST_KEYS = ("cores", "memory_mb", "time_minutes", "partition", "gpus")


def scheduler() -> str:
    name = luigi.configuration.get_config().get("cluster", "scheduler", "local").strip() or "local"
    if name not in SCHEDULERS:
        raise ConfigError(f"luigi.cfg [cluster] scheduler = {name!r}: unknown (known: {', '.join(SCHEDULERS)})")
    return name


def submits(task: "PipelineTask") -> bool:
    """Whether `task` runs as a batch job here."""
    return task.batch and scheduler() != "local"


def job_request(task: "PipelineTask") -> slurm.JobRequest:
    """The task's needs (cores, memory, GPU), overridden by [cluster] and then by [cluster.<stage>]."""
    config = luigi.configuration.get_config()
    needs = task.needs()
    values: dict[str, object] = {"cores": needs["cpu"], "memory_mb": needs["memory_mb"], "gpus": needs.get("gpu", 0),
                                 "time_minutes": 0, "partition": ""}
    for section in ("cluster", f"cluster.{task.stage}"):
        if not config.has_section(section):
            continue
        for key in REQUEST_KEYS:
            if config.has_option(section, key):
                raw = config.get(section, key).strip()
                try:
                    values[key] = raw if key == "partition" else int(raw)
                except ValueError:
                    raise ConfigError(f"luigi.cfg [{section}] {key} = {raw!r}: not a whole number") from None
    return slurm.JobRequest(**values)  # type: ignore[arg-type]


def job_command(task: "PipelineTask") -> list[str]:
    """The command a job runs: build exactly this task (tasks/job.py)."""
    cls = type(task)
    return [sys.executable, "-m", "tasks.job", cls.__module__, cls.__name__, json.dumps(task.to_str_params())]


def run_as_job(task: "PipelineTask") -> None:
    """Submit (or adopt) the job that builds `task`, wait for it, and check that it left a complete artifact."""
    final = task.artifact_dir()
    final.parent.mkdir(parents=True, exist_ok=True)
    id_file = final.parent / f"{final.name}.job"
    log_dir = Path(task.work_dir) / task.profile / task.task_name / "logs"
    job_id = _running_job(id_file)
    if job_id is None:
        log_pattern = log_dir / f"{task.stage}.{final.name}.%j.log"
        job_id = slurm.submit(job_command(task), f"{task.stage}-{task.task_name}", log_pattern, job_request(task),
                              Path.cwd())
        write_text(id_file, job_id + "\n")
        print(f"[slurm] {task}: job {job_id}", file=sys.stderr, flush=True)
    else:
        print(f"[slurm] {task}: waiting for job {job_id}, submitted by an earlier run", file=sys.stderr, flush=True)
    log = log_dir / f"{task.stage}.{final.name}.{job_id}.log"
    poll = float(luigi.configuration.get_config().get("cluster", "poll_seconds", "5"))
    with slurm.cancel_on_stop(job_id):
        ended = slurm.wait(job_id, poll)
    id_file.unlink(missing_ok=True)
    if not ended.succeeded or not task.complete():
        how = f"{ended.state}" + (f", exit code {ended.exit_code}" if ended.exit_code is not None else "")
        if ended.succeeded:
            how += ", but the artifact is not complete"
        last = "\n".join(slurm.tail(log, 15))
        raise slurm.SlurmError(f"Slurm job {job_id} for {task.stage} of {task.task_name} ended {how}; "
                               f"log: {log}" + (f"\n--- last lines of the log ---\n{last}" if last else ""))


def _running_job(id_file: Path) -> str | None:
    """The job an earlier (killed) worker submitted for this artifact, while Slurm still runs it."""
    try:
        job_id = id_file.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if job_id and slurm.status(job_id).active:
        return job_id
    id_file.unlink(missing_ok=True)
    return None
