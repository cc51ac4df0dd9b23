"""What produced a report's numbers, written under each of its tables: per task, the commit and package version of
the code, the profile, the machine (CPU model, cores, vector variant), the date and the wall time.

A report folder may hold tasks from several runs (pipeline/report/merge.py), so the provenance is kept per task and
the footer groups the tasks that share one. The wall time of a task is the span of its artifacts' builds (from the
start of the first to the end of the last, over resumed runs too), which for a run from an empty work folder is the
run's own wall time; the command's own wall time is recorded beside it.
"""
from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipeline.io import read_json
from pipeline.machine import describe_cpu

PACKAGE = "lmbr-pipeline"


def code_version(repo: Path) -> dict[str, str]:
    """{"commit": short hash, with "+modified" when tracked files differ from it, "version": the package's}; "unknown"
    for what cannot be told (not a git checkout, the package not installed)."""
    commit = "unknown"
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        commit = head + ("+modified" if changed else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    try:
        package = version(PACKAGE)
    except PackageNotFoundError:
        package = "unknown"
    return {"commit": commit, "version": package}


def build_span_seconds(folders: Iterable[Path]) -> float | None:
    """Seconds from the start of the first build to the end of the last among the artifact folders (their
    signature.json: `finished` and `seconds`); None when none is finished."""
    starts, ends = [], []
    for folder in folders:
        path = Path(folder) / "signature.json"
        if not path.is_file():
            continue
        signature = read_json(path)
        finished = datetime.strptime(signature["finished"], "%Y-%m-%dT%H:%M:%S%z").timestamp()
        starts.append(finished - float(signature.get("seconds", 0.0)))
        ends.append(finished)
    return max(ends) - min(starts) if ends else None


def run_provenance(repo: Path, profile: str, command_seconds: float, build_seconds: float | None,
                   workers: int, estimate: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The provenance of one task of this run; `estimate`: the forecast made before the build
    (pipeline/run_estimate.py), kept beside the actual times."""
    cpu = describe_cpu()
    return {**code_version(repo), "profile": profile, "cpu": cpu.model, "cores": cpu.cores,
            "cpu_variant": cpu.variant, "workers": workers,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
            "build_minutes": round(build_seconds / 60, 1) if build_seconds is not None else None,
            "command_minutes": round(command_seconds / 60, 1), **({"estimate": dict(estimate)} if estimate else {})}


def describe(p: Mapping[str, Any]) -> str:
    """One provenance as a sentence, with its "note" after it where the report folder gives one (what a reader of
    the numbers must know that the fields cannot say: a stop and resume, another load on the machine)."""
    built = (f"its artifacts built over {p['build_minutes']} min" if p.get("build_minutes") is not None
             else "its build time not recorded")
    forecast = p.get("estimate")
    expected = (f"; expected before the build: {forecast['wall_minutes']} min of wall time for the run, "
                f"{forecast['task_work_minutes']} min of work for this task" if forecast else "")
    text = (f"commit {p['commit']} ({PACKAGE} {p['version']}), profile {p['profile']}, {p['cpu']} "
            f"({p['cores']} cores, {p['cpu_variant']}), {p.get('workers', '?')} worker(s), {p['date']}; {built} "
            f"(the command {p['command_minutes']} min){expected}")
    return f"{text}. {p['note']}" if p.get("note") else text


def footer(by_task: Mapping[str, Mapping[str, Any]], tasks: Iterable[str]) -> str:
    """Markdown lines for under a table of these tasks: the tasks sharing a provenance on one line; "" when none of
    them has one."""
    groups: dict[str, list[str]] = {}
    for task in tasks:
        if task in by_task:
            groups.setdefault(describe(by_task[task]), []).append(task)
    missing = [task for task in tasks if task not in by_task]
    lines = [f"- {', '.join(names)}: {text}" for text, names in groups.items()]
    if missing and lines:
        lines.append(f"- {', '.join(missing)}: produced before provenance was recorded")
    return "\nProduced by:\n\n" + "\n".join(lines) + "\n" if lines else ""
