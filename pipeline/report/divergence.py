"""The report's record of decoding modes that part over float rounding (Figures 2-3, pipeline/decode/divergence.py).

Each figure JSON row holds comparisons (`comparison`, `sorted_comparison`, ...) of a mode's outputs with its
reference mode's. The table sums them per figure and comparison: sentences compared, identical, largest score gap.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from pipeline.decode.divergence import merge_comparisons

__all__ = ["divergence_table"]

MODES = {"comparison": "batched vs unbatched", "sorted_comparison": "sorted batches vs the first",
         "unsorted_comparison": "unsorted batches vs the first", "streaming_comparison": "streaming vs batched"}


def divergence_table(figures: Sequence[tuple[str, Path]]) -> tuple[list[str], list[list]]:
    """Rows (figure, modes, comparisons, sentences, identical, % identical, largest score gap) over the figure JSONs
    among `figures` ((name, file) pairs); no rows when none of them has comparisons."""
    header = ["figure", "modes", "configurations", "sentences", "identical", "% identical", "largest score gap"]
    rows = []
    for name, path in figures:
        if not name.endswith(".json"):
            continue
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        for key, label in MODES.items():
            found = [row[key] for row in data if isinstance(row, dict) and key in row]
            if found:
                total = merge_comparisons(found)
                share = 100.0 * total["identical"] / total["sentences"] if total["sentences"] else 100.0
                rows.append([name.removesuffix(".json"), label, total["comparisons"], total["sentences"],
                             total["identical"], round(share, 2), total["max_score_gap"]])
    return header, rows
