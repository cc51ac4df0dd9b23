"""Word alignment with eflomal (Östling & Tiedemann 2016) in both directions, seeded.

eflomal aligns source->target (forward) and target->source (reverse) in one run and writes both as Pharaoh
links ``i-j`` (source position i, target position j; 0-based) per line. Its released sampler draws its seed from
/dev/urandom and hands random states to its parallel samplers in thread order; scripts/build-eflomal.sh builds it
with the seed read from ``EFLOMAL_SEED`` and the states split in sampler order, so the same seed gives the same
alignments (on one machine: the binary is built with -march=native). The eflomal Python package writes the input
files; the seedable binary (``tools/eflomal/bin/eflomal``) aligns. Symmetrisation is ours (pipeline.smt.symmetrize).
"""
from __future__ import annotations

import logging
import math
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

log = logging.getLogger(__name__)

Links = list[tuple[int, int]]


@dataclass(frozen=True)
class AlignerSettings:
    """eflomal's options (its defaults): model 3 = HMM + fertility; samplers run in parallel threads; the seed of
    the samplers' random states."""

    model: int = 3
    samplers: int = 3
    rel_iterations: float = 1.0
    null_prior: float = 0.2
    seed: int = 1


def locate_eflomal(tools_dir: Path) -> Path:
    """The seedable eflomal binary in ``tools_dir/eflomal/bin``; FileNotFoundError says how to build it."""
    binary = Path(tools_dir) / "eflomal" / "bin" / "eflomal"
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise FileNotFoundError(f"the seedable eflomal aligner {binary} is missing: run `make install` "
                                "(scripts/build-eflomal.sh builds it)")
    return binary


def iterations(settings: AlignerSettings, sentences: int) -> tuple[int, int, int]:
    """Sampling iterations of IBM1, HMM and fertility models: eflomal's own rule, rel_iterations x 5000 / sqrt(n)."""
    iters = max(2, int(round(settings.rel_iterations * 5000 / math.sqrt(max(sentences, 1)))))
    quarter = max(1, iters // 4)
    return {1: (iters, 0, 0), 2: (max(2, quarter), iters, 0)}.get(settings.model, (max(2, quarter), quarter, iters))


def parse_links(line: str) -> Links:
    """Pharaoh links ``"0-0 1-2"`` -> ``[(0, 0), (1, 2)]``."""
    links = []
    for item in line.split():
        i, _, j = item.partition("-")
        links.append((int(i), int(j)))
    return links


def format_links(links: Iterable[tuple[int, int]]) -> str:
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


def align(source: Sequence[str], target: Sequence[str], binary: Path,
          settings: AlignerSettings = AlignerSettings()) -> tuple[list[Links], list[Links]]:
    """Forward and reverse eflomal alignments of line-aligned tokenized text (one sentence a line), by the seedable
    eflomal `binary` (:func:`locate_eflomal`).

    Both are lists of links (source position, target position) per sentence; empty lines give no links.
    """
    import eflomal  # imported here: the rest of pipeline.smt works without it

    if len(source) != len(target):
        raise ValueError(f"{len(source)} source lines but {len(target)} target lines")
    started = time.perf_counter()
    aligner = eflomal.Aligner(model=settings.model, n_samplers=settings.samplers,
                              rel_iterations=settings.rel_iterations, null_prior=settings.null_prior)
    with tempfile.TemporaryDirectory(prefix="eflomal-") as tmp:
        folder = Path(tmp)
        with (folder / "src").open("wb") as src, (folder / "tgt").open("wb") as tgt:
            aligner.prepare_files(list(source), src, list(target), tgt, None, None)
        counts = iterations(settings, len(source))
        command = [str(binary), "-m", str(settings.model), "-s", str(folder / "src"), "-t", str(folder / "tgt"),
                   "-n", str(settings.samplers), "-N", str(settings.null_prior), "-q",
                   "-f", str(folder / "fwd"), "-r", str(folder / "rev")]
        for model, count in enumerate(counts[:settings.model], start=1):
            command += [f"-{model}", str(count)]
        done = subprocess.run(command, env={**os.environ, "EFLOMAL_SEED": str(settings.seed)},
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"eflomal failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        forward, reverse = ([parse_links(line) for line in
                             (folder / name).read_text(encoding="utf-8").split("\n")[:len(source)]]
                            for name in ("fwd", "rev"))
    for name, links in (("forward", forward), ("reverse", reverse)):
        if len(links) != len(source):
            raise RuntimeError(f"eflomal wrote {len(links)} {name} alignments for {len(source)} sentences")
    log.info("eflomal aligned %d sentence pairs in %.1f s (seed %d)", len(source), time.perf_counter() - started,
             settings.seed)
    return forward, reverse
