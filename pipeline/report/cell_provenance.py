"""The provenance of each cell of a report: the code, machine and date of the build that scored it.

A cell (one score of results.json) carries `run`: the commit and package version of the code that built its
evaluation artifact, that machine's CPU and vector variant, and the date (`cell_run`, from the artifact's
signature.json). A rerun that finds the artifact built keeps its provenance, so merging a partial rerun
(pipeline/report/merge.py) changes the provenance of the cells it rebuilt and of nothing else. Under each table,
`cells_footer` names the builds its cells come from and says when the table mixes commits or machines.

A cell scored before cells carried their own provenance takes its task's (the run provenance kept per task), and the
footer says so.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

RUN_FIELDS = ("commit", "version", "cpu", "cpu_variant", "date")


def cell_run(signature: Mapping[str, Any]) -> dict[str, Any]:
    """A cell's provenance from its evaluation artifact's signature.json; "unknown" for what an artifact built
    before signatures recorded it cannot tell (its date is always known)."""
    code = signature.get("code", {})
    cpu = signature.get("cpu", {})
    return {"commit": code.get("commit", "unknown"), "version": code.get("version", "unknown"),
            "cpu": cpu.get("model", "unknown"), "cpu_variant": cpu.get("variant", "unknown"),
            "date": str(signature.get("finished", "unknown"))[:10]}


def with_task_fallback(run: Mapping[str, Any] | None, task_provenance: Mapping[str, Any] | None) -> dict[str, Any]:
    """`run`, or for a cell without one the fields of its task's provenance, marked `per_task`."""
    if run:
        return dict(run)
    source = task_provenance or {}
    return {**{key: source.get(key, "unknown") for key in RUN_FIELDS}, "per_task": True}


def _key(run: Mapping[str, Any]) -> tuple:
    return tuple(run.get(key, "unknown") for key in RUN_FIELDS) + (bool(run.get("per_task")),)


def _cells_text(cells: Sequence[tuple[str, str]], tasks: Sequence[str], systems_of: Mapping[str, set[str]]) -> str:
    """"ger-eng (all), eng-ger (PBMT, TNMT)": a task's cells, "all" when they are every cell of that task here."""
    parts = []
    for task in tasks:
        mine = [system for t, system in cells if t == task]
        if mine:
            parts.append(f"{task} ({'all' if set(mine) == systems_of[task] else ', '.join(mine)})")
    return "; ".join(parts)


def cells_footer(cells: Iterable[tuple[str, str, Mapping[str, Any]]], tasks: Sequence[str]) -> str:
    """Markdown for under a table of these (task, system, run) cells: the builds they come from, and the mix."""
    cells = list(cells)
    if not cells:
        return ""
    systems_of: dict[str, set[str]] = {}
    groups: dict[tuple, list[tuple[str, str]]] = {}
    runs: dict[tuple, Mapping[str, Any]] = {}
    for task, system, run in cells:
        systems_of.setdefault(task, set()).add(system)
        groups.setdefault(_key(run), []).append((task, system))
        runs[_key(run)] = run
    lines = []
    for key, members in groups.items():
        run = runs[key]
        text = (f"commit {run['commit']} (lmbr-pipeline {run['version']}), {run['cpu']} ({run['cpu_variant']}), "
                f"{run['date']}")
        if run.get("per_task"):
            text += " (the task's run: recorded per task before cells carried their own)"
        lines.append(f"- {text}: {_cells_text(members, tasks, systems_of)}")
    mixed = []
    for field, word in (("commit", "commits"), ("cpu_variant", "CPU variants"), ("cpu", "CPU models")):
        values = {run.get(field) for run in runs.values()} - {"unknown", None}
        if len(values) > 1:
            mixed.append(f"{len(values)} {word} ({', '.join(sorted(map(str, values)))})")
    unknown = any(run.get("commit") == "unknown" for run in runs.values())
    listed = ", ".join(mixed[:-1]) + f" and {mixed[-1]}" if len(mixed) > 1 else "".join(mixed)
    summary = (f"This table mixes {listed}." if mixed
               else "Every cell of this table with a known commit comes from one commit on one kind of machine."
               if unknown else "Every cell of this table comes from one commit on one kind of machine.")
    if unknown:
        summary += " Some cells were built before artifacts recorded their commit."
    return "\nCells by the build that scored them:\n\n" + "\n".join(lines) + f"\n\n{summary}\n"
