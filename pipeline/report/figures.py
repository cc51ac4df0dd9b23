"""Figure 1 of the paper: where the time of each NMT system goes - phrase-based decoding, posteriors and L,
neural decoding - and its end-to-end words per minute, from the timings in the evaluation records."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from pipeline.report.png import pyplot, save_png

#: Phases of the hybrid pipeline: (name in the records' timings, label). Loading and postprocessing are not shown.
PHASES = (("pbmt_decode", "phrase-based decoding"), ("posteriors_and_l", "posteriors + L"),
          ("nmt_decode", "neural decoding"))
NMT_SYSTEMS = ("FNMT", "LNMT", "TNMT", "LTNMT")


def time_breakdown(records: Sequence[Any]) -> list[dict[str, Any]]:
    """One row per (task, NMT system) with its phase seconds, total and end-to-end words per minute."""
    rows = []
    for r in records:
        if r.system not in NMT_SYSTEMS or "nmt_decode" not in r.timings:
            continue
        phases = {name: float(r.timings.get(name, 0.0)) for name, _ in PHASES}
        total = sum(phases.values())
        wpm = round(60 * r.source_words / total, 1) if r.source_words and total > 0 else None
        rows.append({"task": r.task, "system": r.system, "variant": getattr(r, "variant", ""), **phases,
                     "total": round(total, 3), "wpm": wpm})
    return rows


def breakdown_table(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list]]:
    header = ["task", "system", *(label for _, label in PHASES), "total s", "words per minute"]
    return header, [[r["task"], _name(r), *(r[name] for name, _ in PHASES), r["total"], r["wpm"]] for r in rows]


def _name(row: dict[str, Any]) -> str:
    return f"{row['system']} ({row['variant']})" if row.get("variant") else row["system"]


def plot_time_breakdown(rows: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """Stacked horizontal bars, one per (task, system), written atomically as PNG."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.5))
    labels = [f"{r['task']} {_name(r)}" for r in rows]
    left = [0.0] * len(rows)
    for name, label in PHASES:
        widths = [r[name] for r in rows]
        ax.barh(labels, widths, left=left, label=label)
        left = [a + b for a, b in zip(left, widths)]
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return save_png(fig, path)
