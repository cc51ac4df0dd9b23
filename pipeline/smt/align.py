"""Word alignment with eflomal (Östling & Tiedemann 2016) in both directions.

eflomal aligns source->target (forward) and target->source (reverse) in one run and writes both as Pharaoh
links ``i-j`` (source position i, target position j; 0-based) per line. It has no seed option: alignments are
not bit-for-bit reproducible between runs. Symmetrisation is ours (pipeline.smt.symmetrize).
"""
from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

log = logging.getLogger(__name__)

Links = list[tuple[int, int]]


@dataclass(frozen=True)
class AlignerSettings:
    """eflomal's options (its defaults): model 3 = HMM + fertility; samplers run in parallel threads."""

    model: int = 3
    samplers: int = 3
    rel_iterations: float = 1.0
    null_prior: float = 0.2


def parse_links(line: str) -> Links:
    """Pharaoh links ``"0-0 1-2"`` -> ``[(0, 0), (1, 2)]``."""
    links = []
    for item in line.split():
        i, _, j = item.partition("-")
        links.append((int(i), int(j)))
    return links


def format_links(links: Iterable[tuple[int, int]]) -> str:
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


def align(source: Sequence[str], target: Sequence[str],
          settings: AlignerSettings = AlignerSettings()) -> tuple[list[Links], list[Links]]:
    """Forward and reverse eflomal alignments of line-aligned tokenized text (one sentence a line).

    Both are lists of links (source position, target position) per sentence; empty lines give no links.
    """
    import eflomal  # imported here: the rest of pipeline.smt works without it

    if len(source) != len(target):
        raise ValueError(f"{len(source)} source lines but {len(target)} target lines")
    started = time.perf_counter()
    aligner = eflomal.Aligner(model=settings.model, n_samplers=settings.samplers,
                              rel_iterations=settings.rel_iterations, null_prior=settings.null_prior)
    with tempfile.TemporaryDirectory(prefix="eflomal-") as tmp:
        fwd, rev = Path(tmp) / "fwd", Path(tmp) / "rev"
        aligner.align(list(source), list(target), links_filename_fwd=str(fwd), links_filename_rev=str(rev),
                      quiet=True)
        forward = [parse_links(line) for line in fwd.read_text(encoding="utf-8").split("\n")[:len(source)]]
        reverse = [parse_links(line) for line in rev.read_text(encoding="utf-8").split("\n")[:len(source)]]
    for name, links in (("forward", forward), ("reverse", reverse)):
        if len(links) != len(source):
            raise RuntimeError(f"eflomal wrote {len(links)} {name} alignments for {len(source)} sentences")
    log.info("eflomal aligned %d sentence pairs in %.1f s", len(source), time.perf_counter() - started)
    return forward, reverse
