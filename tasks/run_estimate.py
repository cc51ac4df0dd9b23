"""reproduce-table's forecast: the minutes of every stage a run still has to build, from this machine's measured
speed (pipeline/machine_speed.py) and the published run of the same profile (pipeline/run_estimate.py), and the wall
time of their schedule on the run's workers."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import luigi

from pipeline.list_schedule import schedule_minutes
from pipeline.machine import describe_cpu
from pipeline.machine_speed import TrainingSpeed, gemm_gflops, training_speed
from pipeline.run_estimate import VALIDATION_SHARE, ReferenceRun, RunEstimate, reference_runs
from tasks.base import PipelineTask
from tasks.nmt import TrainNMT
from tasks.worker_priority import STAGE_MINUTES, expected_minutes, task_graph


class _Speeds:
    """Training probes, measured once per (architecture, recipe, threads)."""

    def __init__(self) -> None:
        self.measured: dict[tuple, TrainingSpeed] = {}

    def of(self, model: TrainNMT, threads: int) -> TrainingSpeed:
        recipe = model.arch_profile()
        vocab = recipe.vocab_size or model.profile_config.bpe.merges + 1000
        key = (model.architecture, repr(recipe), threads, vocab)
        if key not in self.measured:
            self.measured[key] = training_speed(model.architecture, recipe, threads, vocab, updates=3, warmup=1)
        return self.measured[key]


def _training_minutes(model: TrainNMT, speeds: _Speeds) -> float:
    if model.jobs_dir:
        return 0.0  # trained elsewhere
    training = model.arch_profile().training
    updates = training.max_updates or training.budget_seconds / speeds.of(model, model.processes).seconds_per_update
    return updates * speeds.of(model, model.processes).seconds_per_update * (1 + VALIDATION_SHARE) / 60


def _scale(model: TrainNMT | None, reference: ReferenceRun | None, speeds: _Speeds, ref_threads: int) -> float | None:
    """This machine's seconds per Transformer update over the reference run's (validations included there)."""
    if model is None or reference is None or not reference.transformer_seconds_per_update:
        return None
    here = speeds.of(model, ref_threads).seconds_per_update * (1 + VALIDATION_SHARE)
    return here / reference.transformer_seconds_per_update


def _per_artifact(report: luigi.Task, reference: ReferenceRun) -> dict[str, float]:
    """The reference's seconds per artifact of each stage: its stage seconds over the artifacts of that stage in
    the graph of the reference's own systems (and Table 2 where it had one)."""
    variants = tuple(report.profile_config.variants) if reference.table2 else ()
    built = report.clone(type(report), systems=reference.systems, variants=variants, strength_curve=False)
    counts: dict[str, int] = {}
    for task in task_graph([built]):
        if isinstance(task, PipelineTask) and task.stage:
            counts[task.stage] = counts.get(task.stage, 0) + 1
    return {stage: seconds / max(1, counts.get(stage, 1)) for stage, seconds in reference.stage_seconds.items()}


def _relative_seconds(task: PipelineTask, per_artifact: dict[str, float]) -> float | None:
    """A stage the reference run did not build: its expected minutes against a neural decoding's (STAGE_MINUTES),
    times the reference's seconds of one neural decoding (None without one)."""
    decoding = per_artifact.get("nmt-decode")
    return None if decoding is None else decoding * expected_minutes(task) / STAGE_MINUTES["nmt-decode"]


def _shown(folder: Path) -> str:
    """`folder` relative to the checkout where it is inside it."""
    try:
        return Path(folder).resolve().relative_to(Path(__file__).resolve().parents[1]).as_posix()
    except ValueError:
        return str(folder)


def estimate_run(reports: list[luigi.Task], workers: int, results: Path) -> RunEstimate:
    """The forecast of building what the reports still need (a few seconds of probes first)."""
    graph = [t for t in task_graph(reports) if isinstance(t, PipelineTask) and t.stage]
    todo = {t.task_id for t in graph if not t.complete()}
    if not todo:
        return RunEstimate(workers=workers, wall_minutes=0.0, machine={"cpu": str(describe_cpu()), "training": []},
                           basis=["nothing left to build"])
    references = reference_runs(results)
    speeds = _Speeds()
    transformer = {t.task_name: t for t in graph if isinstance(t, TrainNMT) and t.architecture == "transformer"}
    cores = describe_cpu().cores
    minutes: dict[str, float] = {}
    stage_minutes: dict[str, dict[str, float]] = {}
    basis: set[str] = set()
    scales: dict[str, float | None] = {}
    per_artifact = {r.task_name: _per_artifact(r, references[r.task_name]) for r in reports
                    if r.task_name in references}
    for task in graph:
        if task.task_id not in todo:
            minutes[task.task_id] = 0.0
            continue
        name, stage = task.task_name, task.stage
        if task.task_name not in scales:
            reference = references.get(name)
            scales[name] = _scale(transformer.get(name), reference, speeds, 1)
            basis.add(f"{name}: scaled from the run in {_shown(results)} ({reference.described})" if scales[name]
                      else f"{name}: no run of this profile to scale from; rough stage minutes")
        if isinstance(task, TrainNMT):
            value = _training_minutes(task, speeds)
        else:
            scale = scales[name]
            seconds = None
            if scale:
                seconds = per_artifact.get(name, {}).get(stage)
                seconds = _relative_seconds(task, per_artifact.get(name, {})) if seconds is None else seconds
            value = seconds / 60 * scale if seconds is not None else expected_minutes(task) * (scale or 1)
            if task.parallel and task.processes > 1:
                value /= task.processes  # the published runs gave each stage one process (2 workers, 2 cores)
        minutes[task.task_id] = value
        stage_minutes.setdefault(name, {})
        stage_minutes[name][stage] = stage_minutes[name].get(stage, 0.0) + value
    needs = {t.task_id: [d.task_id for d in luigi.task.flatten(t.requires()) if d.task_id in minutes] for t in graph}
    wall = schedule_minutes(needs, minutes, workers)
    machine: dict[str, Any] = {"cpu": str(describe_cpu()), "gflops_1_thread": gemm_gflops(1),
                               f"gflops_{cores}_threads": gemm_gflops(cores),
                               "training": [s.to_dict() for s in speeds.measured.values()]}
    return RunEstimate(workers=workers, wall_minutes=round(wall, 1),
                       task_minutes={k: round(sum(v.values()), 1) for k, v in stage_minutes.items()},
                       stage_minutes={k: {s: round(m, 2) for s, m in v.items()} for k, v in stage_minutes.items()},
                       machine=machine, basis=sorted(basis))


def describe_estimate(estimate: RunEstimate) -> str:
    """What reproduce-table prints before the build."""
    machine = estimate.machine
    gflops = [f"{v} GFLOP/s on {k.split('_')[1]} thread(s)" for k, v in machine.items() if k.startswith("gflops_")]
    lines = [f"reproduce-table: this machine: {machine['cpu']}"
             + (f"; fp32 matrix products {', '.join(gflops)}" if gflops else "")]
    for speed in machine["training"]:
        lines.append(f"  a {speed['architecture']} update of {speed['max_tokens']} tokens: "
                     f"{speed['seconds_per_update']:.2f} s on {speed['threads']} thread(s)")
    for task, total in estimate.task_minutes.items():
        stages = sorted(estimate.stage_minutes[task].items(), key=lambda kv: -kv[1])[:4]
        lines.append(f"  {task}: about {total:.0f} min of work ({', '.join(f'{s} {m:.0f}' for s, m in stages)})")
    lines.append(f"reproduce-table: expected wall time: about {estimate.wall_minutes:.0f} min on {estimate.workers} "
                 "worker(s)")
    lines += [f"  {line}" for line in estimate.basis]
    return "\n".join(lines)
