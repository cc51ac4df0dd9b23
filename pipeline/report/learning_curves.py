"""Learning curves of the NMT models: greedy BLEU and validation loss on the tuning set at every checkpoint, against
updates and against minutes of training, read from each model's metrics.csv (pipeline/nmt/metrics.py)."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Sequence

from pipeline.io import write_text
from pipeline.report import render
from pipeline.report.png import pyplot, save_png

Curve = list[dict[str, float]]  # {"update", "minutes", "valid_bleu", "valid_loss"} per checkpoint, by update


def read_curve(metrics_csv: Path) -> Curve:
    """The validation rows of a training run's metrics.csv (ValueError naming the file and line when malformed)."""
    points = []
    with Path(metrics_csv).open(newline="", encoding="utf-8") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            if row.get("kind") != "valid":
                continue
            try:
                points.append({"update": int(row["update"]), "minutes": float(row["elapsed_s"]) / 60,
                               "valid_bleu": float(row["valid_bleu"]) if row.get("valid_bleu") else None,
                               "valid_loss": float(row["valid_loss"]) if row.get("valid_loss") else None})
            except (KeyError, TypeError, ValueError) as e:
                raise ValueError(f"{metrics_csv}, line {line}: not a validation row ({e})") from None
    return sorted(points, key=lambda p: p["update"])


def curve_table(curves: dict[str, Curve]) -> tuple[list[str], list[list[Any]]]:
    """One row per (model, checkpoint): the model's label, update, minutes, tuning-set BLEU and loss."""
    header = ["model", "update", "minutes", "tune BLEU (greedy)", "tune loss"]
    rows = [[label, p["update"], round(p["minutes"], 1), p["valid_bleu"], p["valid_loss"]]
            for label, curve in curves.items() for p in curve]
    return header, rows


def plot_learning_curves(curves: dict[str, Curve], path: Path, title: str) -> Path:
    """Two panels, BLEU against updates and against minutes, one line per model; written atomically as PNG."""
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for label, curve in curves.items():
        points = [p for p in curve if p["valid_bleu"] is not None]
        for ax, key in zip(axes, ("update", "minutes")):
            ax.plot([p[key] for p in points], [p["valid_bleu"] for p in points], marker=".", label=label)
    axes[0].set_xlabel("updates")
    axes[1].set_xlabel("minutes of training")
    axes[0].set_ylabel("tuning-set BLEU (greedy)")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    return save_png(fig, path)


def write_learning_curves(out: Path, curves: dict[str, Curve], profile: str,
                          guard_stops: Sequence[str] = ()) -> list[Path]:
    """learning_curves.{md,csv,png} in `out` (nothing when no model has a validation point).

    `guard_stops`: the models whose wall-clock guard (budget_seconds) stopped them before their fixed number of
    updates, one line each; the table says so under it, since such a model depends on the machine's speed.
    """
    if not any(curves.values()):
        return []
    header, rows = curve_table(curves)
    title = f"Learning curves of the NMT models on the tuning set, profile {profile}"
    table = render.markdown(header, rows, title)
    if guard_stops:
        table += ("\nCut by a declared wall-clock cap (budget_seconds) before max_updates, so these models and their "
                  "scores depend on the machine's speed:\n\n" + "".join(f"- {stop}\n" for stop in guard_stops))
    paths = []
    for name, text in (("learning_curves.md", table),
                       ("learning_curves.csv", render.csv_text(header, rows))):
        write_text(out / name, text)
        paths.append(out / name)
    paths.append(plot_learning_curves(curves, out / "learning_curves.png", title))
    return paths

