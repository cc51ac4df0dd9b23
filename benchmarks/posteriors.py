"""Benchmark: exact n-gram posteriors (orders 1-4) + the L matrix per sentence, full lattice vs n-best.

For every sentence: wall time of the posteriors (evidence space + forward algorithm), of building L and of adding
it to a shard file (each run writes its sentences to one shard, as BuildLMatrix does: lattices.lmatrix_shards; the
shard's final write is timed and counted too), peak Python-heap memory of both (tracemalloc, numpy included;
measured in a second pass so that tracing does not slow the timed pass), rows and stored entries of L. Reports
median and 90th percentile per mode, and the process's peak RSS. Also times the decoder's per-step operations (dense
L rows and next rows for a batch). Both evidence-space engines (lattices/openfst.py: OpenFst C++; exact: float64
Python) side by side, one process, one thread. With --lattices, the time to read and map each lattice is measured
too, and every mode is compared with the PBMT decoding of the same sentences, measured side by side: each of the
--runs runs first decodes them again in this process (the settings and inputs of the run that wrote the lattices,
lattices and n-best lists written as it did; benchmarks/pbmt_decode.py), then times every mode. The ratio is total
posteriors + L time (the shard included) over total PBMT time, per run; the report gives the median over runs
(the aims: full lattice <= 1.0, n-best <= 0.5), and also the ratio without the shard's final write.

Lattices: by default synthetic phrase-based search graphs generated here (seeded; 25 source words, monotone
stack decoding with recombination on the last two words and a stack limit, BPE-like 1-2 tokens per word, so
a few hundred hypothesis states and thousands of arcs); or a decoded split's folder (PBMT output,
docs/LATTICE_FORMAT.md) with --lattices, mapped to target units with --codes/--vocab.

    .venv/bin/python benchmarks/posteriors.py --sentences 20
    .venv/bin/python benchmarks/posteriors.py --lattices work/.../pbmt-xxx --codes .../codes.en \\
        --vocab .../vocab.en.json --runs 3 --no-heap
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import resource
import statistics
import sys
import time
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from common import OWN_RESULTS, REPO, redecode_seconds  # noqa: E402
from lattices.evidence import DEFAULT_MAX_STATES  # noqa: E402
from lattices.lattice import Lattice  # noqa: E402
from lattices.lmatrix import build_lmatrix  # noqa: E402
from lattices.lmatrix_shards import ShardWriter  # noqa: E402
from lattices.posteriors import ngram_posteriors  # noqa: E402
from lattices.theta import Theta  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.vocab import SPECIALS, Vocabulary  # noqa: E402

#: Theta from typical dev-set precisions (the numbers only scale L; they do not change the timings).
THETA = Theta.from_precisions([60.0, 35.0, 21.0, 13.0], "plain")


# ---------------------------------------------------------------------------------------------- synthetic data
def synthetic_lattice(rng: random.Random, vocab: Vocabulary, words: int = 25, stack: int = 24,
                      options: int = 3, max_phrase: int = 3) -> Lattice:
    """A phrase-based search graph over target tokens: hypotheses (source position, last two words) are states,
    phrase applications are chains of token arcs, recombined hypotheses keep all their incoming chains."""
    V = len(vocab)
    first = len(SPECIALS)

    def token() -> int:  # Zipf-like over the vocabulary
        return first + min(int(rng.paretovariate(1.1)) - 1, V - first - 1) if rng.random() < 0.5 \
            else rng.randrange(first, V)

    # each source word: a few candidate target words, each 1-2 BPE-like tokens
    candidates = [[tuple(token() for _ in range(rng.choice((1, 1, 1, 2)))) for _ in range(4)] for _ in range(words)]
    phrases: dict[tuple[int, int], list[tuple[tuple[tuple[int, ...], ...], float]]] = {}
    for j in range(words):
        for n in range(1, max_phrase + 1):
            if j + n <= words:
                opts = []
                for _ in range(options):
                    target = tuple(rng.choice(candidates[k]) for k in range(j, j + n) if rng.random() < 0.9)
                    opts.append((target or (rng.choice(candidates[j]),), rng.expovariate(0.5)))
                phrases[(j, n)] = opts
    arcs: list[tuple[int, int, int, float]] = [(0, 1, vocab.bos_id, 0.0)]
    next_state = 2
    # stacks[j]: recombination key (the last two target words) -> (state, best score)
    stacks: list[dict[tuple, tuple[int, float]]] = [{} for _ in range(words + 1)]
    stacks[0][()] = (1, 0.0)
    # pending[j]: phrase applications into stack j as (source state, key, score, target words, cost)
    pending: list[list[tuple[int, tuple, float, tuple, float]]] = [[] for _ in range(words + 1)]
    for j in range(words + 1):
        if j:  # recombine and prune the applications into stack j, then keep every chain into a survivor
            best: dict[tuple, float] = {}
            for _, key, score, _, _ in pending[j]:
                best[key] = min(best.get(key, float("inf")), score)
            for key in sorted(best, key=best.get)[:stack]:
                stacks[j][key] = (next_state, best[key])
                next_state += 1
            for src, key, _, target, cost in pending[j]:
                if key not in stacks[j]:
                    continue
                tokens = [t for word in target for t in word]
                q = src
                for k, t in enumerate(tokens):
                    if k == len(tokens) - 1:
                        nxt = stacks[j][key][0]
                    else:
                        nxt, next_state = next_state, next_state + 1
                    arcs.append((q, nxt, t, cost if k == 0 else 0.0))
                    q = nxt
        if j == words:
            break
        for key, (state, score) in stacks[j].items():
            for n in range(1, max_phrase + 1):
                for target, tm_cost in phrases.get((j, n), ()):
                    cost = tm_cost + rng.expovariate(0.4) * len(target)  # + an LM-like cost
                    pending[j + n].append((state, (key + target)[-2:], score + cost, target, cost))
    final = next_state
    for state, _ in stacks[words].values():
        arcs.append((state, final, vocab.eos_id, 0.0))
    return Lattice.from_arcs(final + 1, 0, arcs, {final: 0.0})


# ---------------------------------------------------------------------------------------------- measurement
def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, np.float64), q)) if values else float("nan")


def measure(lattice: Lattice, semiring: str, nbest: int, alpha: float, vocab_size: int, engine: str,
            max_states: int, heap: bool = True, shard: ShardWriter | None = None) -> dict:
    """One sentence, one mode: timed pass (with ``shard``, the L also goes into it, as the pipeline's stage
    writes it), then (``heap``) a traced pass for the memory peak."""
    started = time.perf_counter()
    posteriors = ngram_posteriors(lattice, 4, alpha, semiring, nbest, engine, max_states)
    middle = time.perf_counter()
    lmatrix = build_lmatrix(posteriors, THETA, vocab_size)
    built = time.perf_counter()
    if shard is not None:
        shard.add(lmatrix)
    finished = time.perf_counter()
    peaks = traced_peaks(lattice, semiring, nbest, alpha, vocab_size, engine, max_states, posteriors) if heap else ()
    return {"posteriors_s": middle - started, "lmatrix_s": built - middle, "shard_s": finished - built,
            "total_s": finished - started, "peak_mb": max(peaks) / 2 ** 20 if peaks else None,
            "ngrams": len(posteriors), "rows": lmatrix.num_rows, "nnz": lmatrix.nnz, "l_bytes": lmatrix.nbytes(),
            "margin": posteriors.margin if math.isfinite(posteriors.margin) else None, "lmatrix": lmatrix}


def shard_run(lattices: list[Lattice], args: argparse.Namespace, nbest: int, engine: str, vocab_size: int,
              heap: bool, keep: int) -> tuple[list[dict], float]:
    """One timed run of a mode over all sentences, written to a shard file as BuildLMatrix writes it; returns the
    per-sentence results (the L kept for the first `keep` sentences only, for the decoder step) and the seconds of
    the shard's final write."""
    results = []
    with tempfile.TemporaryDirectory() as folder, ShardWriter(Path(folder) / "shard.npz") as shard:
        for k, lattice in enumerate(lattices):
            result = measure(lattice, args.semiring, nbest, args.alpha, vocab_size, engine, args.max_states, heap,
                             shard)
            if k >= keep:
                del result["lmatrix"]
            results.append(result)
        started = time.perf_counter()
        shard.finish({"benchmark": "posteriors"})
        return results, time.perf_counter() - started


def traced_peaks(lattice: Lattice, semiring: str, nbest: int, alpha: float, vocab_size: int, engine: str,
                 max_states: int, posteriors) -> tuple[float, float]:
    """Peak traced bytes of the posteriors and of L (tracemalloc: slow, 10-30x on the largest lattices)."""
    tracemalloc.start()
    ngram_posteriors(lattice, 4, alpha, semiring, nbest, engine, max_states)
    _, peak_post = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    build_lmatrix(posteriors, THETA, vocab_size)
    _, peak_l = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak_post, peak_l


def decoder_step(matrices: list, beam: int, repeats: int, threads: int) -> dict:
    """Median time of the two per-step operations for one batch of len(matrices) sentences x beam."""
    import torch

    from lattices.batch import LMatrixBatch

    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        batch = LMatrixBatch(matrices)
        gen = torch.Generator().manual_seed(0)
        rows = torch.cat([torch.randint(int(batch.row_offsets[s]), int(batch.row_offsets[s + 1]), (beam,),
                                        generator=gen) for s in range(len(matrices))])
        tokens = torch.randint(0, batch.vocab_size, rows.shape, generator=gen)
        buffer = torch.empty(rows.numel(), batch.vocab_size)
        dense_s, next_s = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            batch.rows(rows, out=buffer)
            t1 = time.perf_counter()
            batch.next_rows(rows, tokens)
            t2 = time.perf_counter()
            dense_s.append(t1 - t0)
            next_s.append(t2 - t1)
    finally:
        torch.set_num_threads(saved)
    return {"sentences": len(matrices), "beam": beam, "hypotheses": int(rows.numel()), "vocab": batch.vocab_size,
            "rows_dense_ms": 1e3 * statistics.median(dense_s), "next_rows_ms": 1e3 * statistics.median(next_s),
            "torch_threads": threads}


def load_lattices(args: argparse.Namespace) -> tuple[list[Lattice], int, str, list[float], list[int]]:
    """The lattices in target units, the vocabulary size, a description, the seconds to read and map each, and
    their sentence indices (none for synthetic lattices)."""
    if args.lattices is None:
        vocab = Vocabulary(SPECIALS + tuple(f"tok{i}" for i in range(args.vocab_size - len(SPECIALS))))
        rng = random.Random(args.seed)
        lattices = [synthetic_lattice(rng, vocab, words=args.words, stack=args.stack)
                    for _ in range(args.sentences)]
        return lattices, len(vocab), f"synthetic (seed {args.seed}, {args.words} words, stack {args.stack})", [], []
    from lattices.fst_io import lattice_paths, read_lattice
    from lattices.units import TokenMapper, map_lattice

    if args.vocab is None:
        raise SystemExit("--lattices needs --vocab (and --codes for BPE units)")
    mapper = TokenMapper.from_files(args.codes, args.vocab)
    lattices, seconds = [], []
    paths = lattice_paths(args.lattices)
    if args.lines:
        by_line = {int(p.stem): p for p in paths}
        paths = [by_line[int(x)] for x in args.lines.split(",")]
    for path in paths[: args.sentences]:
        started = time.perf_counter()
        lattices.append(map_lattice(read_lattice(path), mapper))
        seconds.append(time.perf_counter() - started)
    return lattices, len(mapper.vocab), str(args.lattices), seconds, [int(p.stem) for p in paths[: args.sentences]]


def pbmt_reference(folder: Path | None, workers: int) -> dict | None:
    """CPU seconds per sentence of the PBMT decoding that wrote the lattices (its artifact's signature.json), its
    wall time times its worker processes (the profile's pbmt.workers, both busy throughout)."""
    if folder is None or not (folder / "signature.json").exists():
        return None
    stats = json.loads((folder / "signature.json").read_text(encoding="utf-8")).get("stats", {})
    decode = stats.get("timings", {}).get("pbmt_decode")
    if not decode or not stats.get("sentences"):
        return None
    return {"decode_wall_s": decode, "workers": workers, "sentences": stats["sentences"],
            "cpu_s_per_sentence": decode * workers / stats["sentences"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lattices", type=Path, default=None, help="a decoded split's folder (lattices/<i>.fst)")
    parser.add_argument("--codes", type=Path, default=None, help="BPE codes of the target (with --lattices)")
    parser.add_argument("--vocab", type=Path, default=None, help="target vocabulary JSON (with --lattices)")
    parser.add_argument("--sentences", type=int, default=20, help="sentences to measure (first N)")
    parser.add_argument("--no-heap", action="store_true",
                        help="skip the traced pass (peak heap per sentence): far faster on lattices of 100k states")
    parser.add_argument("--lines", default="", help="with --lattices: these sentence indices (comma-separated)")
    parser.add_argument("--max-states", type=int, default=DEFAULT_MAX_STATES,
                        help="bound on a determinised full lattice (0: none; lattices.pruning)")
    parser.add_argument("--words", type=int, default=25, help="synthetic: source words per sentence")
    parser.add_argument("--stack", type=int, default=24, help="synthetic: stack limit (hypotheses per stack)")
    parser.add_argument("--vocab-size", type=int, default=32000, help="synthetic: target vocabulary size")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--semiring", choices=("tropical", "log"), default="tropical")
    parser.add_argument("--nbest", type=int, default=200, help="n of the n-best mode")
    parser.add_argument("--engines", default="openfst,exact", help="evidence-space engines to compare")
    parser.add_argument("--pbmt-workers", type=int, default=2,
                        help="decoding processes of the PBMT run that wrote the lattices (its recorded time)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs (each with its side-by-side PBMT decoding)")
    parser.add_argument("--no-pbmt", action="store_true", help="no side-by-side PBMT decoding")
    parser.add_argument("--work-dir", type=Path, default=REPO / "work", help="where the lattices' inputs are")
    parser.add_argument("--beam", type=int, default=12, help="decoder step: beam per sentence")
    parser.add_argument("--batch", type=int, default=7, help="decoder step: sentences per batch")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="decoder step: torch threads (on a busy 2-core machine 2 threads is slower)")
    parser.add_argument("--out", type=Path, default=OWN_RESULTS / "posteriors.json")
    args = parser.parse_args(argv)

    lattices, vocab_size, source, read_seconds, indices = load_lattices(args)
    modes = {f"{label} ({engine})": (nbest, engine) for engine in args.engines.split(",")
             for label, nbest in (("full", 0), (f"{args.nbest}-best", args.nbest))}
    side_by_side = bool(indices) and not args.no_pbmt and (args.lattices / "signature.json").exists()
    for nbest, engine in modes.values():  # compile (numba) and warm up outside the timed runs
        measure(lattices[0], args.semiring, nbest, args.alpha, vocab_size, engine, args.max_states, False)
    pbmt_seconds: list[float] = []
    totals: dict[str, list[float]] = {name: [] for name in modes}
    timed: dict[str, list[list[dict]]] = {name: [] for name in modes}
    writes: dict[str, list[float]] = {name: [] for name in modes}
    for run in range(args.runs):
        if side_by_side:
            pbmt_seconds.append(redecode_seconds(args.lattices, indices, args.work_dir))
            print(f"run {run + 1}: PBMT {pbmt_seconds[-1]:.2f} s", file=sys.stderr)
        for name, (nbest, engine) in modes.items():
            # the first run's L of the first --batch sentences serve the decoder step
            results, write_s = shard_run(lattices, args, nbest, engine, vocab_size, not args.no_heap and run == 0,
                                         args.batch if run == 0 else 0)
            timed[name].append(results)
            totals[name].append(sum(r["total_s"] for r in results) + write_s)
            writes[name].append(write_s)
            print(f"run {run + 1}: {name}: {totals[name][-1]:.2f} s (shard write {write_s:.2f} s)", file=sys.stderr)
    summary: dict = {}
    per_sentence: dict = {}
    step: dict = {}
    for name in modes:
        runs = [dict(first, **{key: statistics.median(result[i][key] for result in timed[name])
                               for key in ("posteriors_s", "lmatrix_s", "shard_s", "total_s")})
                for i, first in enumerate(timed[name][0])]  # per sentence: the median over runs
        stats = {}
        for key in ("posteriors_s", "lmatrix_s", "shard_s", "total_s", "peak_mb", "ngrams", "rows", "nnz", "l_bytes"):
            values = [r[key] for r in runs if r[key] is not None]
            if not values:  # --no-heap
                continue
            stats[key] = {"median": statistics.median(values), "p90": percentile(values, 90)}
        stats["pruned"] = sum(r["margin"] is not None for r in runs)
        stats["shard_write_s"] = {"median": statistics.median(writes[name]), "per_run": writes[name]}
        summary[name] = stats
        per_sentence[name] = [{k: v for k, v in r.items() if k != "lmatrix"} for r in runs]
        step[name] = decoder_step([r["lmatrix"] for r in runs[: args.batch]], args.beam, 50, args.torch_threads)

    sizes = {"states": [lat.num_states for lat in lattices], "arcs": [lat.num_arcs for lat in lattices]}
    rows = [("sentences", *[str(len(lattices))] * len(modes)),
            ("lattice states (median)", *[f"{statistics.median(sizes['states']):.0f}"] * len(modes)),
            ("lattice arcs (median)", *[f"{statistics.median(sizes['arcs']):.0f}"] * len(modes))]
    labels = [("posteriors s", "posteriors_s", "{:.3f}"), ("L build s", "lmatrix_s", "{:.3f}"),
              ("add to the shard s", "shard_s", "{:.4f}"), ("posteriors + L + shard s", "total_s", "{:.3f}"),
              ("peak heap MB", "peak_mb", "{:.1f}"),
              ("n-grams (orders 1-4)", "ngrams", "{:.0f}"), ("rows of L", "rows", "{:.0f}"),
              ("stored entries (nnz)", "nnz", "{:.0f}"), ("L storage KB", "l_bytes", "{:.0f}")]
    for label, key, fmt in labels:
        if key not in summary[next(iter(modes))]:
            continue
        cells = []
        for name in modes:
            s = summary[name][key]
            scale = 1 / 1024 if key == "l_bytes" else 1
            cells.append(f"{fmt.format(s['median'] * scale)} / {fmt.format(s['p90'] * scale)}")
        rows.append((f"{label} (median / p90)", *cells))
    rows.append((f"pruned to fit {args.max_states} states", *[str(summary[n]["pruned"]) for n in modes]))
    rows.append((f"step: dense rows [{args.batch}x{args.beam}, V] ms ({args.torch_threads} thr)",
                 *[f"{step[n]['rows_dense_ms']:.2f}" for n in modes]))
    rows.append(("step: next rows ms", *[f"{step[n]['next_rows_ms']:.3f}" for n in modes]))
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    width = max(len(r[0]) for r in rows)
    header = ("", *modes)
    col = max(len(c) for r in rows + [header] for c in r[1:])
    print(f"{'':<{width}}  " + "  ".join(f"{h:>{col}}" for h in modes))
    for r in rows:
        print(f"{r[0]:<{width}}  " + "  ".join(f"{c:>{col}}" for c in r[1:]))
    print(f"source: {source}; semiring {args.semiring}; alpha {args.alpha}; peak RSS {peak_rss_mb:.0f} MB")
    read_map = {"median": statistics.median(read_seconds), "p90": percentile(read_seconds, 90),
                "total": sum(read_seconds)} if read_seconds else None
    ratios = {}
    if pbmt_seconds:
        extra = read_map["total"] if read_map else 0.0
        for name in modes:
            per_run = [total / pbmt for total, pbmt in zip(totals[name], pbmt_seconds)]
            with_read = [(total + extra) / pbmt for total, pbmt in zip(totals[name], pbmt_seconds)]
            unwritten = [(total - write) / pbmt for total, write, pbmt in zip(totals[name], writes[name], pbmt_seconds)]
            ratios[name] = {"posteriors_and_l": statistics.median(per_run), "per_run": per_run,
                            "with_read_and_map": statistics.median(with_read),
                            "without_shard_write": statistics.median(unwritten),
                            "without_shard_write_per_run": unwritten}
            print(f"{name}: posteriors + L = {statistics.median(per_run):.3f}x the PBMT decoding of the same "
                  f"{len(lattices)} sentences (median of {args.runs} runs: {statistics.median(totals[name]):.2f} s vs "
                  f"{statistics.median(pbmt_seconds):.2f} s; {statistics.median(unwritten):.3f}x without the shard's "
                  f"final write), {statistics.median(with_read):.3f}x with reading and mapping the lattices "
                  f"({extra:.2f} s)")

    import torch

    result = {
        "benchmark": "posteriors",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "source": source, "sentences": len(lattices), "semiring": args.semiring, "alpha": args.alpha,
        "vocab_size": vocab_size, "max_states": args.max_states,
        "modes": {k: {"nbest": v[0], "engine": v[1]} for k, v in modes.items()},
        "lattice_sizes": sizes, "summary": summary,
        "decoder_step": step, "per_sentence": per_sentence, "peak_rss_mb": peak_rss_mb,
        "runs": args.runs, "totals_s": totals, "pbmt_side_by_side_s": pbmt_seconds,
        "pbmt_reference": pbmt_reference(args.lattices, args.pbmt_workers) if indices else None,
        "read_and_map_s": read_map, "ratio_to_pbmt": ratios,
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine(), "python": platform.python_version(),
                    "numpy": np.__version__, "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                    "posterior_threads": 1, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
    }
    write_json(args.out, result)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
