"""comparison.{md,csv}: a user's run beside the published one of the same profile, cell by cell.

For every score of the user's report (task, system, Table 2 variant) that the published report also holds: both
BLEU scores, the difference and the same for chrF2; under the table, what produced each side (per task: commit,
version, machine, date), so that a difference can be read against a change of code or of CPU.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.io import write_text
from pipeline.report import render
from pipeline.report.merge import ReportInputs
from pipeline.report.provenance import describe


def _rounded(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None


def comparison_rows(ours: ReportInputs, published: ReportInputs) -> list[list[Any]]:
    theirs = {(r.task, r.system, r.variant): r for r in published.records}
    rows = []
    for record in ours.records:
        other = theirs.get((record.task, record.system, record.variant))
        if other is None:
            continue
        chrf = (record.chrf2 - other.chrf2) if record.chrf2 is not None and other.chrf2 is not None else None
        rows.append([record.task, record.system, record.variant or "-", round(record.bleu, 2), round(other.bleu, 2),
                     round(record.bleu - other.bleu, 2), _rounded(record.chrf2), _rounded(other.chrf2),
                     _rounded(chrf)])
    return rows


def write_comparison(out: Path, ours: ReportInputs, published: ReportInputs, published_folder: Path) -> list[Path]:
    """comparison.{md,csv} in `out` (nothing when no score is in both)."""
    rows = comparison_rows(ours, published)
    if not rows:
        return []
    header = ["task", "system", "variant", "BLEU (yours)", "BLEU (published)", "difference", "chrF2 (yours)",
              "chrF2 (published)", "difference"]
    tasks = list(dict.fromkeys(row[0] for row in rows))
    lines = ["", f"Published: `{published_folder}`. What produced each side:", ""]
    for task in tasks:
        for side, report in (("yours", ours), ("published", published)):
            if task in report.provenance:
                lines.append(f"- {task}, {side}: {describe(report.provenance[task])}")
    title = f"Your run beside the published one, profile {ours.profile}, {ours.eval_set} sets"
    paths = []
    for name, text in (("comparison.md", render.markdown(header, rows, title) + "\n".join(lines) + "\n"),
                       ("comparison.csv", render.csv_text(header, rows))):
        write_text(out / name, text)
        paths.append(out / name)
    return paths
