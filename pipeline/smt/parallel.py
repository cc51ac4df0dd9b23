"""Decoding many sentences in worker processes, results in input order.

The decoder (phrase table + KenLM model) is built once in the parent and inherited by forked workers (no
pickling of the model). Sentences are handed out longest first, one at a time, so that two processes finish
together; each worker writes its sentences' lattices itself (``<lattice_dir>/<i>.fst``) and sends back the
1-best, the n-best hypotheses and sizes. ``workers <= 1`` decodes in this process.
"""
from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from tqdm import tqdm

from pipeline.smt.decoder import Decoder
from pipeline.smt.lattice import Hypothesis, fst_size, nbest, one_best, to_fst


@dataclass
class SentenceResult:
    index: int
    best: Hypothesis
    nbest: list[Hypothesis]
    source_words: int
    seconds: float  # search, n-best and lattice writing
    lattice_states: int = 0
    lattice_arcs: int = 0
    stats: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    decoder: Decoder
    sentences: Sequence[Sequence[str]]
    nbest: int = 0
    distinct: bool = False
    lattice_dir: Path | None = None
    forced: Sequence[Mapping[tuple[int, int], tuple[str, ...]]] | None = None  # per sentence (Decoder.decode)


_JOB: Job | None = None  # set in the parent before forking


def decode_sentence(job: Job, index: int) -> SentenceResult:
    started = time.perf_counter()
    graph = job.decoder.decode(job.sentences[index], job.forced[index] if job.forced is not None else None)
    best = one_best(graph)
    hyps = nbest(graph, job.nbest, distinct=job.distinct) if job.nbest > 0 else []
    result = SentenceResult(index=index, best=best, nbest=hyps, source_words=len(job.sentences[index]),
                            seconds=0.0, stats=graph.stats)
    if job.lattice_dir is not None:
        fst = to_fst(graph)
        fst.write(str(Path(job.lattice_dir) / f"{index}.fst"))
        result.lattice_states, result.lattice_arcs = fst_size(fst)
    result.seconds = time.perf_counter() - started
    return result


def _work(index: int) -> SentenceResult:
    assert _JOB is not None
    return decode_sentence(_JOB, index)


def decode_all(job: Job, workers: int = 1, desc: str = "pbmt") -> list[SentenceResult]:
    """Decode every sentence of the job; results in input order."""
    global _JOB
    if job.lattice_dir is not None:
        Path(job.lattice_dir).mkdir(parents=True, exist_ok=True)
    order = sorted(range(len(job.sentences)), key=lambda i: -len(job.sentences[i]))
    results: list[SentenceResult | None] = [None] * len(job.sentences)
    progress = tqdm(total=len(order), desc=desc, unit="sent", disable=None)
    try:
        if workers <= 1 or len(order) <= 1:
            for i in order:
                results[i] = decode_sentence(job, i)
                progress.update()
        else:
            _JOB = job
            context = multiprocessing.get_context("fork")
            with context.Pool(workers) as pool:
                for result in pool.imap_unordered(_work, order, chunksize=1):
                    results[result.index] = result
                    progress.update()
    finally:
        _JOB = None
        progress.close()
    return [r for r in results if r is not None]
