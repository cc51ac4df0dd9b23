"""Build time of every stage per task, read back from the signatures of a run's artifacts (each records its build
seconds), and the least wall time those builds need on a number of workers.

An artifact folder is `<work>/<profile>/<task>/<stage>/<artifact>/` with a `signature.json`. Only the artifacts of
the run count (the caller walks its task graph), each once, so the obsolete artifacts of earlier settings that a
work folder keeps are left out. A stage's time is the sum over its artifacts (e.g. both GRU seeds under `nmt`); with
several workers the stages of one task overlap, so the sum over stages is work, not the task's wall time.

`task_times` reads them once, when the run ends, into a plain record per task (TaskTimes) that the report folder
keeps (pipeline/report/merge.py): a later run that merges other tasks into the folder writes the table without the
earlier tasks' work folders.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from pipeline.io import write_text
from pipeline.report import render
from pipeline.report.png import pyplot, save_png

#: Stage folders in pipeline order, with the names the table shows; others follow in name order.
STAGES = (("tokenized", "tokenize"), ("truecaser", "truecaser"), ("truecased", "truecase"), ("bpe", "BPE learn"),
          ("subwords", "BPE apply"), ("vocab", "vocabulary"), ("roundtrip", "round trip"), ("lm", "KenLM"),
          ("align", "alignment"), ("phrases", "phrase table"), ("mert", "MERT"), ("pbmt", "PBMT decoding"),
          ("distill", "distillation"), ("lmatrix", "posteriors + L"), ("acceptors", "acceptors"),
          ("nmt", "NMT training"), ("nmt-average", "averaging"), ("nmt-system", "NMT system"), ("lmbr-tuning", "LMBR tuning"),
          ("search-tuning", "search tuning"), ("rescoring-tuning", "rescoring tuning"), ("mbr-tuning", "MBR tuning"),
          ("nmt-decode", "NMT decoding"),
          ("lattice-mbr", "lattice MBR"), ("speed", "speed figures"), ("bleu", "BLEU"),
          ("significance", "significance"))

#: {artifact folder: the folders of the artifacts it was built from}
ArtifactGraph = Mapping[Path, Sequence[Path]]
#: One task's times, as JSON: {"stages": {stage folder: seconds}, "chain_seconds": seconds of its longest chain of
#: builds (None where it was not kept), "chain": ["task stage", ...] along it}
TaskTimes = dict[str, Any]


def build_seconds(folder: Path) -> float | None:
    """The build seconds its signature records; None while the artifact is not finished."""
    signature = Path(folder) / "signature.json"
    if not signature.exists():
        return None
    return float(json.loads(signature.read_text(encoding="utf-8")).get("seconds", 0.0))


def stage_seconds(graph: ArtifactGraph, tasks: Sequence[str]) -> dict[str, dict[str, float]]:
    """{task: {stage folder: seconds summed over its finished artifacts}}, for the tasks named (in their order)."""
    times: dict[str, dict[str, float]] = {task: {} for task in tasks}
    for folder in sorted(set(map(Path, graph))):
        seconds, task, stage = build_seconds(folder), folder.parent.parent.name, folder.parent.name
        if seconds is not None and task in times:
            times[task][stage] = times[task].get(stage, 0.0) + seconds
    return times


def longest_chain(graph: ArtifactGraph) -> tuple[float, list[Path]]:
    """The chain of artifacts, each built from the one before, with the most build seconds (unfinished artifacts
    count 0): no schedule on any number of workers finishes before it. Returns (seconds, folders in build order)."""
    finish: dict[Path, tuple[float, Path | None]] = {}
    for root in graph:
        todo = [(Path(root), False)]
        while todo:  # iterative depth-first: the graphs of a paper run are deep
            folder, ready = todo.pop()
            if folder in finish:
                continue
            inputs = [Path(i) for i in graph.get(folder, ())]
            if not ready:
                todo.append((folder, True))
                todo.extend((i, False) for i in inputs if i not in finish)
                continue
            before = max(((finish[i][0], i) for i in inputs), default=(0.0, None), key=lambda pair: pair[0])
            finish[folder] = (before[0] + (build_seconds(folder) or 0.0), before[1])
    if not finish:
        return 0.0, []
    end = max(finish, key=lambda folder: finish[folder][0])
    chain, folder = [], end
    while folder is not None:
        chain.append(folder)
        folder = finish[folder][1]
    return finish[end][0], chain[::-1]


def task_times(graph: ArtifactGraph, tasks: Sequence[str]) -> dict[str, TaskTimes]:
    """{task: TaskTimes} for the tasks named that have a finished artifact in `graph` (a task's builds depend only
    on its own, so its longest chain is found in its part of the graph)."""
    times = {}
    for task, stages in stage_seconds(graph, tasks).items():
        if not stages:
            continue
        own = {folder: inputs for folder, inputs in graph.items() if Path(folder).parent.parent.name == task}
        seconds, chain = longest_chain(own)
        labels = dict.fromkeys(f"{folder.parent.parent.name} {folder.parent.name}" for folder in chain)
        times[task] = {"stages": stages, "chain_seconds": seconds, "chain": list(labels)}
    return times


def stage_table(times: dict[str, dict[str, float]]) -> tuple[list[str], list[list]]:
    """Rows: stages (minutes, one decimal); columns: tasks, then the stage's total."""
    tasks = list(times)
    rows = []
    for folder, name in _ordered(times):
        minutes = [times[t].get(folder, 0.0) / 60 for t in tasks]
        rows.append([name, *(round(m, 1) for m in minutes), round(sum(minutes), 1)])
    totals = [sum(times[t].values()) / 60 for t in tasks]
    rows.append(["all stages", *(round(m, 1) for m in totals), round(sum(totals), 1)])
    return ["stage (minutes)", *tasks, "all tasks"], rows


def least_wall_time(times: Mapping[str, TaskTimes], workers: int) -> str:
    """A sentence: the work, the longest chain and the wall time no run on `workers` workers can beat."""
    work = sum(sum(t["stages"].values()) for t in times.values()) / 60
    known = [t for t in times.values() if t["chain_seconds"] is not None]  # None: a chain not kept
    longest = max(known, key=lambda t: t["chain_seconds"], default={"chain_seconds": 0.0, "chain": []})
    bound = max(work / max(1, workers), longest["chain_seconds"] / 60)
    return (f"{work:.1f} minutes of work; the longest chain of builds {longest['chain_seconds'] / 60:.1f} minutes "
            f"({' -> '.join(longest['chain'])}); so at least {bound:.1f} minutes of wall time on {workers} worker(s) "
            "of the same speed.")


def _ordered(times: dict[str, dict[str, float]]) -> list[tuple[str, str]]:
    present = {stage for per_stage in times.values() for stage in per_stage}
    known = [(folder, name) for folder, name in STAGES if folder in present]
    return known + [(folder, folder) for folder in sorted(present - {f for f, _ in STAGES})]


def write_stage_times(out: Path, times: Mapping[str, TaskTimes], tasks: Sequence[str], title: str,
                      workers: int = 1) -> list[Path]:
    """stage_times.{md,csv,png} in `out` from `times` (task_times'). A task with no times (a merged task whose
    report kept none) gets no column of zeros: the table leaves it out and names it."""
    stages = {task: times[task]["stages"] for task in tasks if task in times}
    unknown = [task for task in tasks if task not in times]
    header, rows = stage_table(stages)
    note = f"No stage times for {', '.join(unknown)}: this report holds none of their builds.\n" if unknown else ""
    write_text(out / "stage_times.md", render.markdown(header, rows, title) + "\n"
               + least_wall_time({task: times[task] for task in stages}, workers) + "\n" + note)
    write_text(out / "stage_times.csv", render.csv_text(header, rows))
    _plot(stages, out / "stage_times.png", title)
    return [out / "stage_times.md", out / "stage_times.csv", out / "stage_times.png"]


def _plot(times: dict[str, dict[str, float]], path: Path, title: str) -> None:
    """Stacked horizontal bars: one bar per task, one segment per stage (minutes)."""
    plt = pyplot()

    tasks = list(times)
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(tasks) + 2.2))
    left = [0.0] * len(tasks)
    colours = plt.get_cmap("tab20")
    for k, (folder, name) in enumerate(_ordered(times)):
        widths = [times[t].get(folder, 0.0) / 60 for t in tasks]
        if sum(widths) < 0.05:  # stages of seconds would only crowd the legend
            continue
        ax.barh(tasks, widths, left=left, label=name, color=colours(k % 20))
        left = [a + b for a, b in zip(left, widths)]
    ax.invert_yaxis()
    ax.set_xlabel("minutes (summed over the stage's artifacts)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    save_png(fig, path)
