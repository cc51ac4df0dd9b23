"""Figure 1 of the paper: where the time of each NMT system goes - phrase-based decoding, posteriors and L,
neural decoding - and its end-to-end words per minute, from the timings in the evaluation records. The rows over the
NMT's samples add their phases (sampling, MBR selection), shown only where such a row is in the report."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from pipeline.report.png import pyplot, save_png

#: Phases of the hybrid pipeline: (name in the records' timings, label). Loading and postprocessing are not shown.
PHASES = (("pbmt_decode", "phrase-based decoding"), ("posteriors_and_l", "posteriors + L"),
          ("nmt_decode", "neural decoding"))
#: The phases of the rows over the NMT's samples (tasks/sample_mbr.py).
SAMPLE_PHASES = (("nmt_sample", "NMT sampling"), ("mbr_selection", "MBR selection"))
NMT_SYSTEMS = ("FNMT", "LNMT", "TNMT", "LTNMT", "TNMT-MBR", "LTNMT-smp", "LTNMT-mix", "MBR-union")


def shown_phases(rows: Sequence[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    """PHASES, and the sample phases when a row spent time in them."""
    return PHASES + tuple(p for p in SAMPLE_PHASES if any(r.get(p[0]) for r in rows))


def time_breakdown(records: Sequence[Any]) -> list[dict[str, Any]]:
    """One row per (task, NMT system) with its phase seconds, total and end-to-end words per minute."""
    rows = []
    for r in records:
        if r.system not in NMT_SYSTEMS or not any(name in r.timings for name in ("nmt_decode", "nmt_sample")):
            continue
        phases = {name: float(r.timings.get(name, 0.0)) for name, _ in PHASES + SAMPLE_PHASES}
        total = sum(phases.values())
        wpm = round(60 * r.source_words / total, 1) if r.source_words and total > 0 else None
        rows.append({"task": r.task, "system": r.system, "variant": getattr(r, "variant", ""), **phases,
                     "total": round(total, 3), "wpm": wpm})
    return rows


def breakdown_table(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list]]:
    phases = shown_phases(rows)
    header = ["task", "system", *(label for _, label in phases), "total s", "words per minute"]
    return header, [[r["task"], _name(r), *(r[name] for name, _ in phases), r["total"], r["wpm"]] for r in rows]


def _name(row: dict[str, Any]) -> str:
    return f"{row['system']} ({row['variant']})" if row.get("variant") else row["system"]


def plot_time_breakdown(rows: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """Stacked horizontal bars, one per (task, system), written atomically as PNG."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.5))
    labels = [f"{r['task']} {_name(r)}" for r in rows]
    left = [0.0] * len(rows)
    for name, label in shown_phases(rows):
        widths = [r[name] for r in rows]
        ax.barh(labels, widths, left=left, label=label)
        left = [a + b for a, b in zip(left, widths)]
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return save_png(fig, path)
