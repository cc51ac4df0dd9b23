"""Decoding speed measurements behind the paper's Figures 2 and 3 (and streaming), shared by benchmarks/beam_speed.py
and the report's MeasureDecodingSpeed task.

- :func:`speed_vs_beam` (Figure 2): the batched decoder against the unbatched reference (one neural query per
  hypothesis), one sentence at a time, per beam size.
- :func:`speed_vs_batch` (Figure 3): sentences per batch at a fixed beam, sorted by length or in input order; the
  speed-up is against one sentence per batch (beam batching alone).
- :func:`streaming_vs_batching`: streaming refill against plain sentence batching, with the neural queries each
  made and the rows a query advanced on average (:class:`QueryCounter`).

The modes follow the same search, but float32 rounding depends on the shapes of the products: each row records the
sentences whose outputs differ from the reference mode (pipeline/decode/divergence.py) instead of failing.
Every configuration is timed `runs` times and the fastest run kept. Words are source words (BPE merged).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

from pipeline.decode.batching import decode_sources
from pipeline.decode.beam_search import SearchSettings
from pipeline.decode.divergence import compare_outputs, summary_line
from pipeline.decode.unbatched import unbatched_decode
from pipeline.io import atomic_path

__all__ = ["QueryCounter", "plot_speed", "speed_vs_batch", "speed_vs_beam", "streaming_vs_batching", "timed",
           "tokens_of"]


class QueryCounter:
    """A StepModel that counts the neural queries (``step`` calls) of the model it wraps and the rows they advance."""

    def __init__(self, model) -> None:
        self.model, self.queries, self.rows = model, 0, 0

    def step(self, state, prev):
        self.queries += 1
        self.rows += int(prev.shape[0])
        return self.model.step(state, prev)

    def __getattr__(self, name: str):
        return getattr(self.model, name)


def timed(runs: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """(fastest seconds, result of the last run)."""
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def tokens_of(results) -> list[list[tuple[int, ...]]]:
    return [[h.tokens for h in hyps] for hyps in results]


def _wpm(words: Sequence[int], seconds: float) -> float:
    return round(60 * sum(words) / seconds, 1)


def speed_vs_beam(model, ids: Sequence[Sequence[int]], words: Sequence[int], beams: Sequence[int], runs: int,
                  max_length: tuple[float, int] = (2.0, 10), log: Callable[[str], None] = lambda line: None) -> list[dict]:
    """Figure 2: batched vs unbatched words per minute and speed-up per beam size."""
    rows = []
    for beam in beams:
        settings = SearchSettings(beam=beam, max_length_a=max_length[0], max_length_b=max_length[1])
        batched_s, batched = timed(runs, lambda: decode_sources(model, ids, settings, batch_sentences=1, sort=False))
        unbatched_s, unbatched = timed(runs, lambda: unbatched_decode(model, ids, settings))
        comparison = compare_outputs(unbatched, batched)
        differing = comparison["sentences"] - comparison["identical"]
        row = {"beam": beam, "batched_seconds": round(batched_s, 3), "unbatched_seconds": round(unbatched_s, 3),
               "batched_wpm": _wpm(words, batched_s), "unbatched_wpm": _wpm(words, unbatched_s),
               "speedup": round(unbatched_s / batched_s, 2), "identical_outputs": differing == 0,
               "differing_sentences": differing, "comparison": comparison,
               "target_tokens": sum(len(h[0].tokens) for h in batched if h)}
        rows.append(row)
        log(f"(a) beam {beam:2d}: batched {row['batched_wpm']:8.0f} wpm, unbatched {row['unbatched_wpm']:8.0f} wpm, "
            f"speed-up {row['speedup']:.2f}x, {summary_line(comparison)}")
    return rows


def speed_vs_batch(model, ids: Sequence[Sequence[int]], words: Sequence[int], batch_sizes: Sequence[int], beam: int,
                   runs: int, max_length: tuple[float, int] = (2.0, 10),
                   log: Callable[[str], None] = lambda line: None) -> list[dict]:
    """Figure 3: words per minute per sentences-per-batch, sorted and unsorted; outputs compared with the first
    configuration's (the first batch size, sorted). One sentence per batch is one decoding whatever the order of the
    sentences (the same queries, one sentence at a time), so it is timed once and stands for both orders."""
    settings = SearchSettings(beam=beam, max_length_a=max_length[0], max_length_b=max_length[1])
    rows, reference = [], None
    for batch in batch_sizes:
        row: dict[str, Any] = {"batch_sentences": batch}
        for sort in (True, False):
            if batch == 1 and not sort:  # the sorted run of this batch size, just before
                seconds, out = one_at_a_time
            else:
                seconds, out = one_at_a_time = timed(runs, lambda: decode_sources(model, ids, settings,
                                                                                  batch_sentences=batch, sort=sort))
            reference = reference or out
            key = "sorted" if sort else "unsorted"
            row[f"{key}_comparison"] = compare_outputs(reference, out)
            row[f"{key}_seconds"] = round(seconds, 3)
            row[f"{key}_wpm"] = _wpm(words, seconds)
        rows.append(row)
    base = rows[0]["sorted_wpm"] if rows and rows[0]["batch_sentences"] == 1 else None
    for row in rows:
        if base:
            row["sorted_speedup"] = round(row["sorted_wpm"] / base, 2)
            row["unsorted_speedup"] = round(row["unsorted_wpm"] / base, 2)
        log(f"(b) {row['batch_sentences']:2d} sentences: sorted {row['sorted_wpm']:8.0f} wpm "
            f"({row.get('sorted_speedup', 0):.2f}x), unsorted {row['unsorted_wpm']:8.0f} wpm "
            f"({row.get('unsorted_speedup', 0):.2f}x); sorted: {summary_line(row['sorted_comparison'])}, "
            f"unsorted: {summary_line(row['unsorted_comparison'])}")
    return rows


def streaming_vs_batching(model, ids: Sequence[Sequence[int]], words: Sequence[int], pool: int, beam: int,
                          refill: float, runs: int, max_length: tuple[float, int] = (2.0, 10),
                          log: Callable[[str], None] = lambda line: None) -> list[dict]:
    """Streaming refill vs plain sentence batching, in input order and sorted; outputs compared with the first
    configuration's (plain batching in input order)."""
    settings = SearchSettings(beam=beam, max_length_a=max_length[0], max_length_b=max_length[1])
    rows, reference = [], None
    for sort in (False, True):
        row: dict[str, Any] = {"sort": sort, "pool": pool, "refill": refill}
        for mode, streaming in (("batched", False), ("streaming", True)):
            seconds, out = timed(runs, lambda: decode_sources(model, ids, settings, pool, sort,
                                                              streaming=streaming, refill=refill))
            reference = reference or out
            row[f"{mode}_comparison"] = compare_outputs(reference, out)
            row[f"{mode}_seconds"] = round(seconds, 3)
            row[f"{mode}_wpm"] = _wpm(words, seconds)
            counter = QueryCounter(model)  # one more, untimed run: how many queries, how full
            decode_sources(counter, ids, settings, pool, sort, streaming=streaming, refill=refill)
            row[f"{mode}_queries"] = counter.queries
            row[f"{mode}_rows_per_query"] = round(counter.rows / max(counter.queries, 1), 2)
        row["streaming_speedup"] = round(row["streaming_wpm"] / row["batched_wpm"], 3)
        rows.append(row)
        log(f"(c) {'sorted' if sort else 'input order'}: batched {row['batched_wpm']:8.0f} wpm "
            f"({row['batched_queries']} queries of {row['batched_rows_per_query']:.1f} rows), streaming "
            f"{row['streaming_wpm']:8.0f} wpm ({row['streaming_queries']} queries of "
            f"{row['streaming_rows_per_query']:.1f} rows; {row['streaming_speedup']:.2f}x), streaming: "
            f"{summary_line(row['streaming_comparison'])}")
    return rows


def plot_speed(figure_a: Sequence[dict] | None, figure_b: Sequence[dict] | None, label: str, beam_b: int,
               stem: Path) -> list[Path]:
    """PNGs of Figure 2 (`<stem>_beam.png`) and Figure 3 (`<stem>_sentences.png`), written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    if figure_a:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        beams = [r["beam"] for r in figure_a]
        ax.plot(beams, [r["batched_wpm"] for r in figure_a], "o-", label="batched beam")
        ax.plot(beams, [r["unbatched_wpm"] for r in figure_a], "s--", label="unbatched")
        for r in figure_a:
            ax.annotate(f"{r['speedup']:.1f}x", (r["beam"], r["batched_wpm"]), textcoords="offset points",
                        xytext=(0, 6), ha="center", fontsize=8)
        ax.set(xlabel="beam size", ylabel="source words per minute", xticks=beams,
               title=f"Speed vs beam size ({label})")
        ax.legend()
        paths.append(_save(fig, stem.with_name(stem.name + "_beam.png")))
    if figure_b:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        sizes = [r["batch_sentences"] for r in figure_b]
        ax.plot(sizes, [r["sorted_wpm"] for r in figure_b], "o-", label="sorted by length")
        ax.plot(sizes, [r["unsorted_wpm"] for r in figure_b], "s--", label="unsorted")
        ax.set(xlabel="sentences per batch", ylabel="source words per minute",
               title=f"Speed vs sentences per batch (beam {beam_b}, {label})")
        ax.title.set_fontsize(9)
        ax.legend()
        paths.append(_save(fig, stem.with_name(stem.name + "_sentences.png")))
    return paths


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
    return path
