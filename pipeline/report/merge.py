"""A report folder merged with a later run's numbers: a run of some tasks or systems replaces their cells and keeps
the others, each with the signature of the run that made it.

Beside the tables, the folder keeps what they were written from in `report_inputs.json` (the profile, the evaluation
set, the tasks and systems, the data rows, the significance rows, the figures' names, the learning curves, the
wall-clock guard's stops, the artifact graph, and each task's provenance and stage times); the scores themselves,
each with its signature, are results.json. A later run into the same folder merges its inputs into those:

- a score (a cell of Table 1, Table 2, the chrF table and Figure 1) by task, system and variant;
- a data row, a provenance (pipeline/report/provenance.py), the stage times (pipeline/report/stage_times.py) and
  the strength curve's rows (pipeline/report/strength.py) by task, a learning curve by model, a guard stop by model, a figure by file name, an artifact of the graph by folder;
- a significance row by (task, system, baseline, metric); an earlier row whose system or baseline was scored again
  and not compared again is dropped, since one of its two scores has changed.

A folder of another profile or evaluation set
is not merged into (`check_mergeable`). A folder written before `report_inputs.json` existed gives its scores
(results.json) and figures alone; one written before the stage times were kept gives those its graph's artifacts
still hold.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Sequence

from pipeline.errors import PipelineError
from pipeline.io import read_json, write_json
from pipeline.report.learning_curves import Curve
from pipeline.report.stage_times import TaskTimes, task_times
from pipeline.report.tables import Record

__all__ = ["INPUTS_FILE", "ReportInputs", "check_mergeable", "load_inputs", "merge", "save_inputs"]

INPUTS_FILE = "report_inputs.json"
FIGURE_PATTERNS = ("figure2_*.png", "figure2_*.json", "figure3_*.png", "figure3_*.json")


@dataclass
class ReportInputs:
    """What a report folder's tables are written from (pipeline/report/tables.py, learning_curves.py,
    stage_times.py)."""

    profile: str
    eval_set: str
    tasks: list[str] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    data_rows: list[dict[str, Any]] = field(default_factory=list)
    significance: list[dict[str, Any]] = field(default_factory=list)
    figures: list[tuple[str, Path]] = field(default_factory=list)  # (name in the folder, file it is copied from)
    curves: dict[str, Curve] = field(default_factory=dict)  # by "task system architecture seed N"
    guard_stops: list[str] = field(default_factory=list)  # "task architecture seed N: ..."
    graph: dict[Path, list[Path]] = field(default_factory=dict)  # artifact folder: the folders it is built from
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)  # by task (pipeline/report/provenance.py)
    stage_times: dict[str, TaskTimes] = field(default_factory=dict)  # by task (pipeline/report/stage_times.py)
    strength: list[dict[str, Any]] = field(default_factory=list)  # strength-curve rows (pipeline/report/strength.py)


def save_inputs(out: Path, inputs: ReportInputs) -> Path:
    """`out`/report_inputs.json (the scores are in results.json, written with the tables)."""
    write_json(out / INPUTS_FILE, {
        "profile": inputs.profile, "eval_set": inputs.eval_set, "tasks": inputs.tasks, "systems": inputs.systems,
        "data_rows": inputs.data_rows, "significance": inputs.significance,
        "figures": [name for name, _ in inputs.figures], "curves": inputs.curves, "guard_stops": inputs.guard_stops,
        "graph": {str(folder): [str(p) for p in inputs] for folder, inputs in inputs.graph.items()},
        "provenance": inputs.provenance, "stage_times": inputs.stage_times, "strength": inputs.strength})
    return out / INPUTS_FILE


def load_inputs(out: Path) -> ReportInputs | None:
    """The inputs of the report in `out`; None when it holds none. A folder with results.json but no
    report_inputs.json (written before it existed) gives its scores and figures, its profile and evaluation set
    unknown ("")."""
    out = Path(out)
    if not (out / "results.json").exists():
        return None
    known = {f.name for f in fields(Record)}
    records = [Record(**{k: v for k, v in record.items() if k in known}) for record in read_json(out / "results.json")]
    if not (out / INPUTS_FILE).exists():
        names = sorted({path.name for pattern in FIGURE_PATTERNS for path in out.glob(pattern)})
        return ReportInputs(profile="", eval_set="", tasks=list(dict.fromkeys(r.task for r in records)),
                            systems=list(dict.fromkeys(r.system for r in records if r.system != "ROUNDTRIP")),
                            records=records, figures=[(name, out / name) for name in names])
    saved = read_json(out / INPUTS_FILE)
    graph = {Path(folder): [Path(p) for p in inputs] for folder, inputs in saved["graph"].items()}
    return ReportInputs(
        profile=saved["profile"], eval_set=saved["eval_set"], tasks=saved["tasks"], systems=saved["systems"],
        records=records, data_rows=saved["data_rows"], significance=saved["significance"],
        figures=[(name, out / name) for name in saved["figures"] if (out / name).exists()], curves=saved["curves"],
        guard_stops=saved["guard_stops"],
        graph=graph, provenance=saved.get("provenance", {}),
        stage_times=saved["stage_times"] if "stage_times" in saved else task_times(graph, saved["tasks"]),
        strength=saved.get("strength", []))


def check_mergeable(previous: ReportInputs | None, profile: str, eval_set: str, out: Path) -> None:
    """PipelineError when the report in `out` is of another profile or evaluation set (its cells would sit in one
    table with this run's under one caption)."""
    if previous is None or not previous.profile:
        return
    if (previous.profile, previous.eval_set) != (profile, eval_set):
        raise PipelineError(f"{out} holds the report of profile {previous.profile} on the {previous.eval_set} sets, "
                            f"not {profile} on {eval_set}: choose another --out")


def _ordered(names: Sequence[str], order: Sequence[str]) -> list[str]:
    """`names` without repeats, those of `order` first in its order, the others after in their own."""
    unique = list(dict.fromkeys(names))
    return [n for n in order if n in unique] + [n for n in unique if n not in order]


def _model(label: str) -> str:
    """"task system architecture seed N" (a curve) or "task architecture seed N: ..." (a stop) -> "task
    architecture seed N"."""
    words = label.split(":")[0].split()
    return " ".join([words[0], *words[-3:]])


def merge(old: ReportInputs | None, new: ReportInputs, task_order: Sequence[str] = (),
          system_order: Sequence[str] = ()) -> ReportInputs:
    """`new`'s cells over `old`'s (see the module docstring). Tasks and systems in the order of `task_order` and
    `system_order` where they name them, the others in the order they came (the earlier run's first). With no `old`,
    `new` in that order: a rerun of the same run writes the same folder."""
    old = old or ReportInputs(profile=new.profile, eval_set=new.eval_set)
    tasks = _ordered([*old.tasks, *new.tasks], task_order)
    systems = _ordered([*old.systems, *new.systems], system_order)
    task_rank = {task: k for k, task in enumerate(tasks)}
    by_task = lambda task: task_rank.get(task, len(tasks))  # noqa: E731

    cell = lambda r: (r.task, r.system, r.variant)  # noqa: E731
    scored = {cell(r) for r in new.records}
    records = list(new.records) + [r for r in old.records if cell(r) not in scored]
    variants = list(dict.fromkeys(r.variant for r in records))
    system_rank = {system: k for k, system in enumerate(systems)}
    records.sort(key=lambda r: (by_task(r.task), r.system == "ROUNDTRIP", variants.index(r.variant),
                                system_rank.get(r.system, len(systems))))

    rescored = {(r.task, r.system) for r in new.records if not r.variant}
    compared = {(r["task"], r["system"], r["baseline"], r["metric"]) for r in new.significance}
    significance = list(new.significance) + [
        r for r in old.significance if (r["task"], r["system"], r["baseline"], r["metric"]) not in compared
        and (r["task"], r["system"]) not in rescored and (r["task"], r["baseline"]) not in rescored]
    significance.sort(key=lambda r: by_task(r["task"]))

    data_rows = {row["task"]: row for row in old.data_rows} | {row["task"]: row for row in new.data_rows}
    figures = dict(old.figures) | dict(new.figures)  # (an earlier figure keeps its place)
    curves = {**old.curves, **new.curves}
    retrained = {_model(label) for label in new.curves} | {_model(stop) for stop in new.guard_stops}
    guard_stops = sorted([stop for stop in old.guard_stops if _model(stop) not in retrained] + list(new.guard_stops))
    return ReportInputs(
        profile=new.profile, eval_set=new.eval_set, tasks=tasks, systems=systems, records=records,
        data_rows=sorted(data_rows.values(), key=lambda row: by_task(row["task"])), significance=significance,
        figures=list(figures.items()), curves=dict(sorted(curves.items(), key=lambda kv: by_task(kv[0].split()[0]))),
        guard_stops=guard_stops, graph={**old.graph, **new.graph}, provenance={**old.provenance, **new.provenance},
        stage_times={**old.stage_times, **new.stage_times},
        strength=sorted([r for r in old.strength if r["task"] not in {n["task"] for n in new.strength}]
                        + list(new.strength), key=lambda r: (by_task(r["task"]), r["updates"])))
