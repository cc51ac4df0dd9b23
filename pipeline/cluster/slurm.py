"""Slurm batch jobs through its command-line clients: sbatch, squeue, scontrol, scancel.

A job is submitted with `sbatch --parsable`, polled with `squeue` until it leaves the queue, and its end state read
with `scontrol show -o job` (kept for MinJobAge seconds; no accounting daemon is needed). A job counts as done only
when Slurm says COMPLETED with exit code 0 *and* the caller's own check of its output passes (a misconfigured node
can report COMPLETED for a job that never ran). Stopping the waiting process cancels the job (scancel).
"""
from __future__ import annotations

import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from pipeline.errors import PipelineError

#: States of a job that is still queued or running (squeue's long names).
ACTIVE_STATES = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING",
                           "SIGNALING", "STAGE_OUT", "STOPPED", "REQUEUE_HOLD", "REQUEUE_FED"})


class SlurmError(PipelineError):
    """Slurm refused a request or a job ended badly; the message names the job and its log."""


@dataclass(frozen=True)
class JobRequest:
    """What one job asks of the cluster (0 / "" leave the partition's default)."""

    cores: int = 1
    memory_mb: int = 0
    time_minutes: int = 0
    partition: str = ""
    gpus: int = 0  # per node
    nodes: int = 1  # more than one: a data-parallel NMT training job (pipeline/nmt/launch.py), one task a node
    gres: str = ""  # generic resources as the site names them (gpu:1, gpu:a100:2), per node; in place of gpus

    def sbatch_options(self) -> list[str]:
        """Cores, memory and GPUs are per node: the job's script runs on its first node and, for a job of several
        nodes, starts one torchrun on each node with srun."""
        options = [f"--cpus-per-task={max(1, self.cores)}"]
        options += ["--ntasks=1", "--nodes=1"] if self.nodes <= 1 else [f"--nodes={self.nodes}",
                                                                         "--ntasks-per-node=1"]
        if self.memory_mb:
            options.append(f"--mem={self.memory_mb}M")
        if self.time_minutes:
            options.append(f"--time={self.time_minutes}")
        if self.partition:
            options.append(f"--partition={self.partition}")
        if self.gres:
            options.append(f"--gres={self.gres}")
        elif self.gpus:
            options.append(f"--gpus={self.gpus}" if self.nodes <= 1 else f"--gpus-per-node={self.gpus}")
        return options


@dataclass(frozen=True)
class JobStatus:
    job_id: str
    state: str            # COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, ... or an active state
    exit_code: int | None  # the job script's exit code; None while it runs or when Slurm no longer knows the job
    signal: int | None = None

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def succeeded(self) -> bool:
        return self.state == "COMPLETED" and self.exit_code == 0


def _run(args: Sequence[str]) -> str:
    try:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise SlurmError(f"{args[0]} not found: install Slurm's clients (scripts/slurm-local.sh install) or choose "
                         f"[cluster] scheduler = local") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(args[:2])} did not answer in 120 s: is slurmctld up?") from None
    if done.returncode != 0:
        raise SlurmError(f"{' '.join(shlex.quote(a) for a in args[:3])} ... failed: {done.stderr.strip()}")
    return done.stdout


def submit(command: Sequence[str], name: str, log_path: Path, request: JobRequest, workdir: Path) -> str:
    """Submit `command` as a batch job; its stdout and stderr go to `log_path`. Returns the job id."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    out = _run(["sbatch", "--parsable", f"--job-name={name}", f"--output={log_path}", f"--chdir={workdir}",
                "--export=ALL", *request.sbatch_options(), "--wrap",
                "exec " + " ".join(shlex.quote(c) for c in command)])
    job_id = out.strip().split(";")[0]
    if not job_id.isdigit():
        raise SlurmError(f"sbatch gave no job id for {name}: {out!r}")
    return job_id


def _fields(line: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in line.split() if "=" in item)


def status(job_id: str) -> JobStatus:
    """The job's state: squeue while it is queued or running, then scontrol's record of how it ended."""
    # squeue exits non-zero for an id it no longer knows: that, like an empty answer, means "not queued"
    queue = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=120)
    if queue.returncode == 0 and queue.stdout.strip():
        return JobStatus(job_id, queue.stdout.strip(), None)
    try:
        record = _fields(_run(["scontrol", "show", "-o", "job", job_id]))
    except SlurmError:  # past MinJobAge Slurm forgets the job
        return JobStatus(job_id, "UNKNOWN", None)
    state = record.get("JobState", "UNKNOWN")
    code, _, sig = record.get("ExitCode", "").partition(":")
    return JobStatus(job_id, state, int(code) if code.isdigit() else None, int(sig) if sig.isdigit() else None)


def cancel(job_id: str) -> None:
    subprocess.run(["scancel", job_id], capture_output=True, text=True, timeout=120)


def wait(job_id: str, poll_seconds: float = 5.0, on_poll: Callable[[JobStatus], None] | None = None) -> JobStatus:
    """Poll until the job leaves the queue; the final status."""
    while True:
        current = status(job_id)
        if on_poll:
            on_poll(current)
        if not current.active:
            return current
        time.sleep(poll_seconds)


class cancel_on_stop:
    """Context manager: a SIGTERM or SIGINT to the waiting process (a stopped Luigi worker), or any exception while
    waiting, cancels the jobs."""

    def __init__(self, *job_ids: str) -> None:
        self.job_ids = job_ids
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "cancel_on_stop":
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self._previous[sig] = signal.signal(sig, self._stop)
            except ValueError:  # not the main thread: leave the handlers (exceptions still cancel)
                pass
        return self

    def _stop(self, signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    def __exit__(self, kind, value, traceback) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        if kind is not None:
            for job_id in self.job_ids:
                cancel(job_id)


def tail(path: Path, lines: int = 20) -> Iterator[str]:
    """The last lines of a job log (for error messages); nothing when it is missing."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return iter(())
    return iter(text.splitlines()[-lines:])
