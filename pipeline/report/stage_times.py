"""Wall time of every stage per task, read back from the artifacts' signatures (each records its build seconds).

Stages group the artifact folders of a work directory: `<work>/<profile>/<task>/<stage>/<artifact>/signature.json`.
A stage's time is the sum over its artifacts (e.g. both GRU seeds under `nmt`); with several Luigi workers the
stages of one task overlap, so the sum over stages is work, not the task's wall time.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from pipeline.io import atomic_path, write_text
from pipeline.report import render

#: Stage folders in pipeline order, with the names the table shows; others follow in name order.
STAGES = (("tokenized", "tokenize"), ("truecaser", "truecaser"), ("truecased", "truecase"), ("bpe", "BPE learn"),
          ("subwords", "BPE apply"), ("vocab", "vocabulary"), ("roundtrip", "round trip"), ("lm", "KenLM"),
          ("align", "alignment"), ("phrases", "phrase table"), ("mert", "MERT"), ("pbmt", "PBMT decoding"),
          ("lmatrix", "posteriors + L"), ("acceptors", "acceptors"), ("nmt", "NMT training"),
          ("nmt-average", "averaging"), ("nmt-system", "NMT system"), ("lmbr-tuning", "LMBR tuning"),
          ("rescoring-tuning", "rescoring tuning"), ("mbr-tuning", "MBR tuning"), ("nmt-decode", "NMT decoding"),
          ("lattice-mbr", "lattice MBR"), ("speed", "speed figures"), ("bleu", "BLEU"),
          ("significance", "significance"))


def stage_seconds(profile_dir: Path, tasks: Sequence[str]) -> dict[str, dict[str, float]]:
    """{task: {stage folder: seconds summed over its finished artifacts}}."""
    times: dict[str, dict[str, float]] = {}
    for task in tasks:
        per_stage: dict[str, float] = {}
        for signature in sorted((Path(profile_dir) / task).glob("*/*/signature.json")):
            stage = signature.parent.parent.name
            seconds = float(json.loads(signature.read_text(encoding="utf-8")).get("seconds", 0.0))
            per_stage[stage] = per_stage.get(stage, 0.0) + seconds
        times[task] = per_stage
    return times


def _ordered(times: dict[str, dict[str, float]]) -> list[tuple[str, str]]:
    present = {stage for per_stage in times.values() for stage in per_stage}
    known = [(folder, name) for folder, name in STAGES if folder in present]
    return known + [(folder, folder) for folder in sorted(present - {f for f, _ in STAGES})]


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


def write_stage_times(out: Path, profile_dir: Path, tasks: Sequence[str], title: str) -> list[Path]:
    """stage_times.{md,csv,png} in `out`."""
    times = stage_seconds(profile_dir, tasks)
    header, rows = stage_table(times)
    write_text(out / "stage_times.md", render.markdown(header, rows, title))
    write_text(out / "stage_times.csv", render.csv_text(header, rows))
    _plot(times, out / "stage_times.png", title)
    return [out / "stage_times.md", out / "stage_times.csv", out / "stage_times.png"]


def _plot(times: dict[str, dict[str, float]], path: Path, title: str) -> None:
    """Stacked horizontal bars: one bar per task, one segment per stage (minutes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
