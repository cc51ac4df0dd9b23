"""Training metrics: rows appended to a CSV file (and TensorBoard scalars when tensorboard is installed).

A resumed run first drops the rows written after the checkpoint it resumes from (the killed run's tail), so the
file reads as one uninterrupted run.
"""
from __future__ import annotations

import csv
import logging
import math
from pathlib import Path
from typing import Any

from pipeline.io import write_text

COLUMNS = ("kind", "update", "epoch", "elapsed_s", "lr", "train_loss", "train_nll", "target_tokens_per_s",
           "valid_loss", "valid_ppl", "valid_bleu")
_LOG = logging.getLogger(__name__)


class MetricsLog:
    """CSV at `path` with COLUMNS; kind is "train" (running averages) or "valid" (at a checkpoint)."""

    def __init__(self, path: Path, resume_update: int = 0, tensorboard_dir: Path | None = None) -> None:
        self.path = Path(path)
        self._truncate(resume_update)
        self._writer = None
        if tensorboard_dir is not None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard is optional
                _LOG.debug("tensorboard is not installed: metrics go to %s only", self.path)
            else:
                self._writer = SummaryWriter(str(tensorboard_dir), purge_step=resume_update + 1)

    def _truncate(self, update: int) -> None:
        """Keep the header and the rows up to `update` (and drop a half-written last line)."""
        kept = []
        if self.path.is_file():
            with self.path.open(newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    try:
                        if None not in row and int(row["update"]) <= update:
                            kept.append(row)
                    except (TypeError, ValueError):
                        continue
        lines = [",".join(COLUMNS)] + [",".join(row.get(c) or "" for c in COLUMNS) for row in kept]
        write_text(self.path, "\n".join(lines) + "\n")

    def write(self, kind: str, update: int, **values: Any) -> None:
        row = {"kind": kind, "update": update, **values}
        unknown = set(row) - set(COLUMNS)
        if unknown:
            raise ValueError(f"unknown metrics columns {sorted(unknown)}")
        with self.path.open("a", encoding="utf-8") as f:
            f.write(",".join(_format(row.get(c)) for c in COLUMNS) + "\n")
        if self._writer is not None:
            for key, value in values.items():
                if isinstance(value, (int, float)) and key not in ("epoch", "elapsed_s"):
                    self._writer.add_scalar(f"{kind}/{key}", value, update)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def _format(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return str(value)
