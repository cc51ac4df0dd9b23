"""Render one table (a header and rows of cells) as Markdown, CSV or LaTeX."""
from __future__ import annotations

import csv
import io
from typing import Sequence

Cell = str | int | float | None


def _text(cell: Cell) -> str:
    if cell is None:
        return "-"
    if isinstance(cell, float):
        return f"{cell:.2f}"
    return str(cell)


def markdown(header: Sequence[str], rows: Sequence[Sequence[Cell]], title: str = "") -> str:
    lines = [f"## {title}", ""] if title else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(_text(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def csv_text(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([["" if c is None else c for c in row] for row in rows])
    return buffer.getvalue()


def _latex_escape(text: str) -> str:
    for char, escaped in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#")):
        text = text.replace(char, escaped)
    return text


def latex(header: Sequence[str], rows: Sequence[Sequence[Cell]], caption: str = "") -> str:
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}", r"\hline",
             " & ".join(_latex_escape(h) for h in header) + r" \\", r"\hline"]
    lines += [" & ".join(_latex_escape(_text(c)) for c in row) + r" \\" for row in rows]
    lines += [r"\hline", r"\end{tabular}"]
    if caption:
        lines.append(r"\caption{" + _latex_escape(caption) + "}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"
