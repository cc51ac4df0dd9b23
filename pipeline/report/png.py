"""Figures of the report as PNG files: matplotlib without a screen, and a figure written atomically."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.io import atomic_path


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig: Any, path: Path) -> Path:
    """Lay the figure out, write it to `path` as PNG (120 dpi) atomically, and close it."""
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    pyplot().close(fig)
    return path
