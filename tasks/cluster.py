"""Heavy stages as batch jobs: luigi.cfg's [cluster] section picks the scheduler and the resources of each job.

    [cluster]
    scheduler = local        # local | slurm
    poll_seconds = 5
    partition =              # every job's partition ('' : the cluster's default)
    time_minutes = 0         # every job's time limit (0: the partition's)
    decode_shards = 1        # jobs per decoded split (PBMT and NMT decoding), merged in order
    [cluster.nmt]            # one stage's requests (the stage names of the artifact folders)
    cores = 4                # per node
    memory_mb = 8000         # per node
    gpus = 1                 # per node
    gres = gpu:a100:1        # per node, as the site names it: --gres in place of --gpus
    nodes = 1                # NMT training only: nodes > 1 trains data-parallel across the job's nodes
    time_minutes = 600

The Luigi worker submits the task's build as a job (`python -m tasks.job`), polls it, cancels it when the worker is
stopped, and fails with the job's log path (and its last lines) when the job does not leave a complete artifact.
The job id is kept beside the artifact while the job runs, so that a worker killed and restarted waits for the job
it had submitted instead of starting a second one.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Protocol

import luigi.configuration

from pipeline.cluster import slurm
from pipeline.errors import ConfigError
from pipeline.io import write_text



class BatchStage(Protocol):
    """What this module needs of a stage (tasks/base.py's PipelineTask; the import runs base -> cluster)."""

    task_name: str
    profile: str
    work_dir: str
    stage: str
    batch: bool
    shardable: bool

    def needs(self) -> dict[str, int]: ...
    def artifact_dir(self) -> Path: ...
    def complete(self) -> bool: ...
    def to_str_params(self) -> dict[str, str]: ...
    def build_artifact(self, build: Callable[[Path], dict[str, Any]] | None = None) -> None: ...
    def merge_shards(self, parts: list[Path], out: Path) -> dict[str, Any]: ...

SCHEDULERS = ("local", "slurm")
REQUEST_KEYS = ("cores", "memory_mb", "time_minutes", "partition", "gpus", "nodes", "gres")
TEXT_KEYS = ("partition", "gres")
MULTI_NODE_STAGES = ("nmt",)  # stages that can use several nodes of one job (TrainNMT, through torchrun)


def scheduler() -> str:
    name = luigi.configuration.get_config().get("cluster", "scheduler", "local").strip() or "local"
    if name in ("sge", "lsf"):
        raise ConfigError(f"luigi.cfg [cluster] scheduler = {name!r}: not wired in yet (luigi.contrib.{name} has "
                          f"the job task to build on); use slurm or local")
    if name not in SCHEDULERS:
        raise ConfigError(f"luigi.cfg [cluster] scheduler = {name!r}: unknown (known: {', '.join(SCHEDULERS)})")
    return name


def submits(task: BatchStage) -> bool:
    """Whether `task` runs as a batch job here."""
    return task.batch and scheduler() != "local"


def job_request(task: BatchStage) -> slurm.JobRequest:
    """The task's needs (cores, memory, GPU), overridden by [cluster] and then by [cluster.<stage>]."""
    config = luigi.configuration.get_config()
    needs = task.needs()
    values: dict[str, object] = {"cores": needs["cpu"], "memory_mb": needs["memory_mb"], "gpus": needs.get("gpu", 0),
                                 "time_minutes": 0, "partition": "", "nodes": 1, "gres": ""}
    for section in ("cluster", f"cluster.{task.stage}"):
        if not config.has_section(section):
            continue
        for key in REQUEST_KEYS:
            if config.has_option(section, key):
                raw = config.get(section, key).strip()
                try:
                    values[key] = raw if key in TEXT_KEYS else int(raw)
                except ValueError:
                    raise ConfigError(f"luigi.cfg [{section}] {key} = {raw!r}: not a whole number") from None
    if values["nodes"] != 1 and (task.stage not in MULTI_NODE_STAGES or int(values["nodes"]) < 1):  # type: ignore
        raise ConfigError(f"luigi.cfg nodes = {values['nodes']} for stage {task.stage}: only "
                          f"{', '.join(MULTI_NODE_STAGES)} runs on several nodes (set nodes in [cluster.nmt])")
    return slurm.JobRequest(**values)  # type: ignore[arg-type]


def job_command(task: BatchStage) -> list[str]:
    """The command a job runs: build exactly this task (tasks/job.py)."""
    cls = type(task)
    return [sys.executable, "-m", "tasks.job", cls.__module__, cls.__name__, json.dumps(task.to_str_params())]


def shards(task: BatchStage) -> int:
    """Jobs to split the task into: [cluster] decode_shards for the sharded stages (decoding), else 1."""
    if not task.shardable:
        return 1
    raw = luigi.configuration.get_config().get("cluster", "decode_shards", "1").strip()
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"luigi.cfg [cluster] decode_shards = {raw!r}: must be a whole number >= 1")
    return int(raw)


def run_as_job(task: BatchStage) -> None:
    """Build `task` by batch jobs: one job, or `shards` jobs whose parts (consecutive pieces of the split, each
    written atomically and kept across reruns) this worker then merges in order."""
    final = task.artifact_dir()
    final.parent.mkdir(parents=True, exist_ok=True)
    n = shards(task)
    if n == 1:
        _run_jobs(task, {"": job_command(task)})
        if not task.complete():
            raise slurm.SlurmError(f"the Slurm job for {task.stage} of {task.task_name} completed but left no "
                                   f"complete artifact at {final}; see {_log_dir(task)}")
        return
    folder = final.parent / f"{final.name}.parts"
    parts = [folder / f"{k:03d}" for k in range(n)]
    _run_jobs(task, {f".{k:03d}": job_command(task) + [str(k), str(n), str(part)]
                     for k, part in enumerate(parts) if not part.exists()})
    missing = [str(part) for part in parts if not part.exists()]
    if missing:
        raise slurm.SlurmError(f"the Slurm jobs of {task.stage} of {task.task_name} left no part {', '.join(missing)}")
    task.build_artifact(lambda out: {**task.merge_shards(parts, out), "shards": n})
    shutil.rmtree(folder, ignore_errors=True)


def _log_dir(task: BatchStage) -> Path:
    return Path(task.work_dir) / task.profile / task.task_name / "logs"


def _run_jobs(task: BatchStage, commands: dict[str, list[str]]) -> None:
    """Submit (or adopt) one job per command, wait for all, and raise naming every job that did not succeed."""
    final = task.artifact_dir()
    jobs: dict[str, tuple[str, Path]] = {}
    for suffix, command in commands.items():
        id_file = final.parent / f"{final.name}{suffix}.job"
        job_id = _running_job(id_file)
        if job_id is None:
            pattern = _log_dir(task) / f"{task.stage}.{final.name}{suffix}.%j.log"
            job_id = slurm.submit(command, f"{task.stage}-{task.task_name}", pattern, job_request(task), Path.cwd())
            write_text(id_file, job_id + "\n")
            print(f"[slurm] {task}: job {job_id}", file=sys.stderr, flush=True)
        else:
            print(f"[slurm] {task}: waiting for job {job_id}, submitted by an earlier run", file=sys.stderr,
                  flush=True)
        jobs[job_id] = (suffix, id_file)
    poll = float(luigi.configuration.get_config().get("cluster", "poll_seconds", "5"))
    failures = []
    with slurm.cancel_on_stop(*jobs):
        for job_id, (suffix, id_file) in jobs.items():
            ended = slurm.wait(job_id, poll)
            id_file.unlink(missing_ok=True)
            if not ended.succeeded:
                log = _log_dir(task) / f"{task.stage}.{final.name}{suffix}.{job_id}.log"
                how = ended.state + (f", exit code {ended.exit_code}" if ended.exit_code is not None else "")
                last = "\n".join(slurm.tail(log, 15))
                failures.append(f"Slurm job {job_id} for {task.stage} of {task.task_name} ended {how}; log: {log}"
                                + (f"\n--- last lines of the log ---\n{last}" if last else ""))
    if failures:
        raise slurm.SlurmError("\n".join(failures))


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
