"""NMT training where the compute is: each model of a run packed as a travelling job (pipeline/nmt/travelling_job.py)
into [TrainNMT] jobs_dir, so that `reproduce-table --train-jobs DIR` stops at the training stage and says which jobs to
run where; a later run adopts the trained results (TrainNMT.build) and finishes the tables."""
from __future__ import annotations

from pathlib import Path

import luigi

from pipeline.nmt.travelling_job import MANIFEST, job_status
from tasks.nmt import NmtModelTask, TrainNMT
from tasks.worker_priority import task_graph


class PackTrainingJob(NmtModelTask):
    """A TrainNMT model's training job, packed into its jobs_dir once the job's inputs are built (nothing to do
    when the model is built already)."""

    def requires(self) -> dict[str, luigi.Task]:
        return self.model().requires()

    def model(self) -> TrainNMT:
        return self.clone(TrainNMT)

    def output(self) -> luigi.LocalTarget:
        return luigi.LocalTarget(str(self.model().job_folder() / MANIFEST))

    def complete(self) -> bool:
        return self.model().complete() or Path(self.output().path).is_file()

    def run(self) -> None:
        self.model().pack_job()


def models_to_train(reports: list[luigi.Task]) -> list[TrainNMT]:
    """The TrainNMT tasks of the reports' graph that are not built yet, in a stable order."""
    found = {t.task_id: t for t in task_graph(reports) if isinstance(t, TrainNMT) and not t.complete()}
    return [found[key] for key in sorted(found)]


def waiting_jobs(models: list[TrainNMT]) -> list[tuple[TrainNMT, str]]:
    """(model, its job's status) of each model whose job has no result yet."""
    statuses = [(model, job_status(model.job_folder())) for model in models]
    return [(model, status) for model, status in statuses if status != "trained"]


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6


def waiting_message(waiting: list[tuple[TrainNMT, str]], jobs_dir: Path) -> str:
    """What reproduce-table prints when it stops at the training stage: the jobs, and how to run them."""
    lines = [f"reproduce-table: stopped at the training stage: {len(waiting)} training job(s) wait in {jobs_dir}:"]
    for model, status in waiting:
        folder = model.job_folder()
        lines.append(f"  {model.task_name} {model.architecture} seed {model.seed}: {folder.name} ({status}, "
                     f"{_size_mb(folder):.1f} MB)")
    lines += ["Train each on a machine with torch and this package (a GPU where there is one; no data folder, no "
              "Luigi), resumable after a kill:",
              *(f"  lmbr train-jobs train {model.job_folder()}" for model, _ in waiting),
              "or on a Slurm GPU partition: sbatch --gres=gpu:1 --wrap 'lmbr train-jobs train FOLDER'.",
              "Bring each folder back with its result/ (`lmbr train-jobs check FOLDER` verifies it), then run this "
              "command again: the results are adopted only when they come from exactly these jobs."]
    return "\n".join(lines)
