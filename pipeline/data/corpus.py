"""Parallel corpora: reading with validation, seeded subsampling, and cleaning of training pairs."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from pipeline.errors import DataError
from pipeline.io import count_lines, read_lines


def read_parallel(source: Path, target: Path) -> tuple[list[str], list[str]]:
    """The lines of two line-aligned files; different line counts or invalid UTF-8 raise DataError."""
    n_source, n_target = count_lines(source), count_lines(target)
    if n_source != n_target:
        raise DataError(f"{source} has {n_source} lines but {target} has {n_target} lines: the files are not line-aligned")
    return list(read_lines(source)), list(read_lines(target))


def subsample(total: int, size: int, seed: int) -> list[int]:
    """Sorted indices of a seeded random sample of `size` out of `total` (all when size is 0 or >= total)."""
    if size <= 0 or size >= total:
        return list(range(total))
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(total, size=size, replace=False).tolist())


@dataclass
class CleaningStats:
    """What cleaning removed from a training corpus, pair by pair (each pair counted once, first reason wins)."""

    input_pairs: int = 0
    kept_pairs: int = 0
    empty: int = 0
    too_short: int = 0
    too_long: int = 0
    bad_ratio: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def clean_pairs(source: Sequence[Sequence[str]], target: Sequence[Sequence[str]], *, min_tokens: int,
                max_tokens: int, max_ratio: float) -> tuple[list[int], CleaningStats]:
    """Indices of the tokenized pairs to keep for training, and the counts of what was removed and why."""
    stats = CleaningStats(input_pairs=len(source))
    keep = []
    for i, (s, t) in enumerate(zip(source, target, strict=True)):
        ls, lt = len(s), len(t)
        if ls == 0 or lt == 0:
            stats.empty += 1
        elif min(ls, lt) < min_tokens:
            stats.too_short += 1
        elif max(ls, lt) > max_tokens:
            stats.too_long += 1
        elif max(ls, lt) > max_ratio * min(ls, lt):
            stats.bad_ratio += 1
        else:
            keep.append(i)
    stats.kept_pairs = len(keep)
    return keep, stats
