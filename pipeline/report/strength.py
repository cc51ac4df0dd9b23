"""strength_curve.{md,csv,png}: LMBR's gain over the NMT against the NMT's margin over the PBMT, one point per
snapshot of the Transformer's training (tasks/strength.py), with paired bootstrap intervals on both axes.

Each row (task added) is a StrengthCurve row: point, updates, model, tune_greedy_bleu, bleu {system: score}, margin
and gains {system: {difference, low, high, p_value, ...}}, chosen {length_penalty, nmt_lambda, search,
lattice_weight}.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from pipeline.io import write_text
from pipeline.report import render
from pipeline.report.png import pyplot, save_png

GAIN_LABELS = {"LTNMT": "LTNMT - TNMT", "TNMT-lat": "TNMT-lat - TNMT"}


def _interval(d: dict[str, Any]) -> str:
    return f"[{d['low']:.2f}, {d['high']:.2f}]"


def strength_table(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    header = ["task", "model", "updates", "tune BLEU (greedy)", "PBMT", "TNMT", "LTNMT", "TNMT-lat",
              "TNMT - PBMT", "95% interval", "LTNMT - TNMT", "95% interval", "p", "TNMT-lat - TNMT", "95% interval",
              "p", "lambda", "mu"]
    table = []
    for row in rows:
        bleu, margin, gains = row["bleu"], row["margin"], row["gains"]
        table.append([row["task"], row["model"], row["updates"], row["tune_greedy_bleu"], bleu["PBMT"], bleu["TNMT"],
                      bleu["LTNMT"], bleu["TNMT-lat"], margin["difference"], _interval(margin),
                      gains["LTNMT"]["difference"], _interval(gains["LTNMT"]), f"{gains['LTNMT']['p_value']:.3f}",
                      gains["TNMT-lat"]["difference"], _interval(gains["TNMT-lat"]),
                      f"{gains['TNMT-lat']['p_value']:.3f}", row["chosen"]["nmt_lambda"],
                      row["chosen"]["lattice_weight"]])
    return header, table


def plot_strength(rows: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """One panel per gain: the gain against TNMT - PBMT with both intervals, a line per task in update order."""
    plt = pyplot()

    fig, axes = plt.subplots(1, len(GAIN_LABELS), figsize=(10, 4), sharey=True)
    tasks = list(dict.fromkeys(row["task"] for row in rows))
    for ax, (system, label) in zip(axes, GAIN_LABELS.items()):
        for task in tasks:
            mine = sorted((r for r in rows if r["task"] == task), key=lambda r: r["updates"])
            x = [r["margin"]["difference"] for r in mine]
            y = [r["gains"][system]["difference"] for r in mine]
            xerr = [[v - r["margin"]["low"] for v, r in zip(x, mine)], [r["margin"]["high"] - v for v, r in zip(x, mine)]]
            yerr = [[v - r["gains"][system]["low"] for v, r in zip(y, mine)],
                    [r["gains"][system]["high"] - v for v, r in zip(y, mine)]]
            ax.errorbar(x, y, xerr=xerr, yerr=yerr, marker="o", capsize=2, label=task)
            for r, xi, yi in zip(mine, x, y):
                ax.annotate(str(r["updates"]), (xi, yi), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.axhline(0, color="grey", lw=0.8)
        ax.axvline(0, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("TNMT - PBMT (BLEU): the NMT's margin over the PBMT")
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("gain over TNMT (BLEU)")
    axes[-1].legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    return save_png(fig, path)


def write_strength_curve(out: Path, rows: Sequence[dict[str, Any]], profile: str, eval_set: str) -> list[Path]:
    """strength_curve.{md,csv,png} in `out` (nothing without rows)."""
    if not rows:
        return []
    header, table = strength_table(rows)
    title = (f"LMBR's gain against the NMT's strength: snapshots of the Transformer's training, profile {profile}, "
             f"{eval_set} sets")
    note = ("\nEach snapshot is the checkpoint of that update alone, the final model the average of the last ones "
            "(Table 1's TNMT). At each point TNMT's length penalty, LTNMT's lambda (with its gain form, p and r) and "
            "TNMT-lat's mu are tuned on the tuning set; LTNMT keeps the search form and evidence space of the final "
            "system. Differences are cased BLEU with 95% paired bootstrap intervals (1000 resamples); p is the share "
            "of resamples in which the difference does not keep its sign.\n")
    paths = []
    for name, text in (("strength_curve.md", render.markdown(header, table, title) + note),
                       ("strength_curve.csv", render.csv_text(header, table))):
        write_text(out / name, text)
        paths.append(out / name)
    paths.append(plot_strength(rows, out / "strength_curve.png", title))
    return paths
