"""What a run will cost on this machine, said before it starts.

A run is a graph of stages. The minutes of each stage still to build come from:

- NMT training: the model's updates times the seconds an update takes here (pipeline/machine_speed.py), plus
  VALIDATION_SHARE for its validations;
- any other stage: the minutes an artifact of that stage took in a run of the same profile and task (the published
  results/<profile>/report_inputs.json, else results/reference/<profile>/, a run kept for the forecast alone: its
  stage times and artifact graph), times this machine's speed relative to that run's, which is the ratio of the
  seconds a Transformer update takes here to the seconds it took there; without such a run, the worker priorities'
  rough minutes per stage (tasks/worker_priority.py).

The wall time is the list schedule of those minutes on the run's workers, longest remaining chain first, as the
workers take them (tasks/worker_priority.py).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipeline.io import read_json

VALIDATION_SHARE = 0.1  # validations during training, on top of the updates (greedy decoding of the tuning sentences)


@dataclass(frozen=True)
class ReferenceRun:
    """A published run of one task: the seconds of each stage (all its artifacts), the systems it built (and whether
    with Table 2), and its Transformer's seconds per update."""

    task: str
    stage_seconds: dict[str, float]
    systems: tuple[str, ...]
    table2: bool
    transformer_seconds_per_update: float | None
    described: str  # "AMD EPYC, AVX-512, 2 workers, 2026-12-04, commit 80f5d64d75d1"


def reference_runs(folder: Path) -> dict[str, ReferenceRun]:
    """The published runs of a results folder by task ({} when it holds no report_inputs.json)."""
    path = Path(folder) / "report_inputs.json"
    if not path.is_file():
        return {}
    saved = read_json(path)
    runs = {}
    for task, times in saved.get("stage_times", {}).items():
        curve = saved.get("curves", {}).get(f"{task} TNMT transformer seed 1") or []
        last = curve[-1] if curve else None
        provenance = saved.get("provenance", {}).get(task, {})
        runs[task] = ReferenceRun(
            task, dict(times["stages"]), tuple(saved.get("systems", ())),
            any(name.startswith(f"figure2_{task}_") for name in saved.get("figures", [])),
            60 * last["minutes"] / last["update"] if last and last["update"] else None,
            f"{provenance.get('cpu', '?')}, {provenance.get('cpu_variant', '?')}, {provenance.get('workers', '?')} "
            f"worker(s), {provenance.get('date', '?')}, commit {provenance.get('commit', '?')}")
    return runs


@dataclass
class RunEstimate:
    """Minutes by task and stage, the wall time on the run's workers, and what the estimate rests on."""

    workers: int
    wall_minutes: float
    task_minutes: dict[str, float] = field(default_factory=dict)  # the work of each task, all stages
    stage_minutes: dict[str, dict[str, float]] = field(default_factory=dict)  # by task, then stage
    machine: dict[str, Any] = field(default_factory=dict)
    basis: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
