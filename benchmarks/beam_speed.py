"""Benchmark: batched beam decoding speed, the data of the paper's Figures 2 and 3 (words per minute on the CPU).

(a) speed vs beam size (1, 2, 4, 8, 12): the batched decoder (one neural query per step for the B hypotheses of a
    sentence) against the unbatched reference (pipeline/decode/unbatched.py: one query per hypothesis), one
    sentence at a time, same model, same search; the outputs must be identical (asserted).
(b) speed vs sentences per batch (1 to 32) at a fixed beam, sentences sorted by length or in input order; the speed-up
    is against 1 sentence per batch (beam batching alone).
(c) streaming refill (ALGORITHMS.md section 6) vs plain sentence batching, at the beam of (b) and --stream-pool
    sentences, in input order and sorted; the outputs must be identical (asserted).

Model: checkpoints given with --model (e.g. an NMTSystem / TrainNMT artifact folder of the small profile), else
random weights at the --profile's sizes over a synthetic vocabulary (--random-vocab). Source: BPE lines of a split
(--source, e.g. the ApplyBPE artifact's bpe.de.gz of newstest2016), else synthetic sentences. Every configuration is
timed --runs times and the fastest run is kept (the machine is shared), with OMP_WAIT_POLICY=PASSIVE unless set
(spinning OpenMP threads make 2-thread runs 10-20x slower when the cores are oversubscribed). Words are source
words (BPE merged). Prints tables and writes JSON and two PNGs (matplotlib, Agg).

    .venv/bin/python benchmarks/beam_speed.py --model work/small/ger-eng/nmt/gru-seed1-* \\
        --source work/small/ger-eng/subwords/newstest2016-*/bpe.de.gz --threads 2
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# On a shared machine, OpenMP threads that spin while waiting for a descheduled partner make 2-thread runs of small
# operations 10-20x slower; passive waiting keeps the measurements meaningful (set before torch starts OpenMP).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from pipeline.config import load_profile  # noqa: E402
from pipeline.decode import SearchSettings, decode_sources  # noqa: E402
from pipeline.decode.translate import load_models  # noqa: E402
from pipeline.decode.unbatched import unbatched_decode  # noqa: E402
from pipeline.io import read_lines  # noqa: E402
from pipeline.nmt.interface import Ensemble  # noqa: E402
from pipeline.nmt.models import build_model, model_config  # noqa: E402
from pipeline.text.bpe import merge_bpe  # noqa: E402
from pipeline.vocab import Vocabulary  # noqa: E402


def machine(threads: int) -> dict:
    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
            "torch_threads": threads, "load_average_at_start": os.getloadavg(), "device": "cpu",
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "")}


def load(args) -> tuple[Ensemble, Vocabulary, dict]:
    """The model (an Ensemble), its source vocabulary and a description."""
    if args.model:
        loaded = load_models(args.model, "cpu")
        members = loaded.ensemble.models
        return loaded.ensemble, loaded.src_vocab, {
            "kind": "trained", "files": [str(p) for p in loaded.members],
            "architectures": [m.config.architecture for m in members],
            "parameters": sum(m.num_parameters() for m in members), "vocab_sizes": [len(loaded.src_vocab),
                                                                                     len(loaded.tgt_vocab)]}
    words = [f"w{i}" for i in range(args.random_vocab - 4)]
    vocab = Vocabulary.build([words])
    profile = load_profile(args.profile)
    torch.manual_seed(1)
    model = build_model(model_config(args.architecture, getattr(profile.nmt, args.architecture), vocab, vocab)).eval()
    return Ensemble([model]), vocab, {"kind": f"random weights at the {args.profile} profile's sizes",
                                      "architectures": [args.architecture], "parameters": model.num_parameters(),
                                      "vocab_sizes": [len(vocab), len(vocab)]}


def sources(args, vocab: Vocabulary, count: int) -> tuple[list[list[int]], list[int], dict]:
    """`count` sources (ids + EOS) and their word counts: the first lines of --source, or synthetic ones."""
    if args.source:
        lines = [line.split() for _, line in zip(range(count), read_lines(Path(args.source))) if line.strip()]
        info = {"kind": "real", "file": str(args.source)}
    else:
        rng = random.Random(0)
        tokens = list(vocab.tokens[4:])
        lines = [rng.choices(tokens, k=min(60, max(3, int(rng.lognormvariate(3.1, 0.5))))) for _ in range(count)]
        info = {"kind": "synthetic"}
    ids = [vocab.encode(line) + [vocab.eos_id] for line in lines]
    return ids, [len(merge_bpe(line)) for line in lines], {**info, "sentences": len(ids),
                                                           "source_words": sum(len(merge_bpe(x)) for x in lines)}


def timed(runs: int, fn):
    """(fastest seconds, result of the last run)."""
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def tokens_of(results) -> list[list[tuple[int, ...]]]:
    return [[h.tokens for h in hyps] for hyps in results]


def figure_a(model, ids, words, args) -> list[dict]:
    rows = []
    for beam in args.beams:
        settings = SearchSettings(beam=beam, max_length_a=args.max_length_a, max_length_b=args.max_length_b)
        batched_s, batched = timed(args.runs, lambda: decode_sources(model, ids, settings, batch_sentences=1,
                                                                     sort=False))
        unbatched_s, unbatched = timed(args.runs, lambda: unbatched_decode(model, ids, settings))
        same = tokens_of(batched) == tokens_of(unbatched)
        differing = sum(a != b for a, b in zip(tokens_of(batched), tokens_of(unbatched)))
        row = {"beam": beam, "batched_seconds": round(batched_s, 3), "unbatched_seconds": round(unbatched_s, 3),
               "batched_wpm": round(60 * sum(words) / batched_s, 1),
               "unbatched_wpm": round(60 * sum(words) / unbatched_s, 1),
               "speedup": round(unbatched_s / batched_s, 2), "identical_outputs": same,
               "differing_sentences": differing,
               "target_tokens": sum(len(h[0].tokens) for h in batched)}
        rows.append(row)
        print(f"(a) beam {beam:2d}: batched {row['batched_wpm']:8.0f} wpm, unbatched {row['unbatched_wpm']:8.0f} "
              f"wpm, speed-up {row['speedup']:.2f}x, identical outputs: {same}", file=sys.stderr)
        if not args.allow_differences:
            assert same, f"beam {beam}: batched and unbatched outputs differ on {differing} sentences"
    return rows


def figure_b(model, ids, words, args) -> list[dict]:
    settings = SearchSettings(beam=args.sentence_beam, max_length_a=args.max_length_a,
                              max_length_b=args.max_length_b)
    rows, reference = [], None
    for batch in args.batch_sizes:
        row = {"batch_sentences": batch}
        for sort in (True, False):
            seconds, out = timed(args.runs, lambda: decode_sources(model, ids, settings, batch_sentences=batch,
                                                                   sort=sort))
            reference = reference or tokens_of(out)
            assert tokens_of(out) == reference, f"batch {batch}, sort {sort}: the outputs changed"
            key = "sorted" if sort else "unsorted"
            row[f"{key}_seconds"] = round(seconds, 3)
            row[f"{key}_wpm"] = round(60 * sum(words) / seconds, 1)
        rows.append(row)
    base = rows[0]["sorted_wpm"] if rows[0]["batch_sentences"] == 1 else None
    for row in rows:
        if base:
            row["sorted_speedup"] = round(row["sorted_wpm"] / base, 2)
            row["unsorted_speedup"] = round(row["unsorted_wpm"] / base, 2)
        print(f"(b) {row['batch_sentences']:2d} sentences: sorted {row['sorted_wpm']:8.0f} wpm "
              f"({row.get('sorted_speedup', 0):.2f}x), unsorted {row['unsorted_wpm']:8.0f} wpm "
              f"({row.get('unsorted_speedup', 0):.2f}x)", file=sys.stderr)
    return rows


def figure_c(model, ids, words, args) -> list[dict]:
    settings = SearchSettings(beam=args.sentence_beam, max_length_a=args.max_length_a,
                              max_length_b=args.max_length_b)
    rows, reference = [], None
    for sort in (False, True):
        row = {"sort": sort, "pool": args.stream_pool, "refill": args.refill}
        for mode, streaming in (("batched", False), ("streaming", True)):
            seconds, out = timed(args.runs, lambda: decode_sources(model, ids, settings, args.stream_pool, sort,
                                                                   streaming=streaming, refill=args.refill))
            reference = reference or tokens_of(out)
            assert tokens_of(out) == reference, f"{mode}, sort {sort}: the outputs changed"
            row[f"{mode}_seconds"] = round(seconds, 3)
            row[f"{mode}_wpm"] = round(60 * sum(words) / seconds, 1)
        row["streaming_speedup"] = round(row["streaming_wpm"] / row["batched_wpm"], 3)
        rows.append(row)
        print(f"(c) {'sorted' if sort else 'input order'}: batched {row['batched_wpm']:8.0f} wpm, streaming "
              f"{row['streaming_wpm']:8.0f} wpm ({row['streaming_speedup']:.2f}x), identical outputs", file=sys.stderr)
    return rows


def plot(summary: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    label = f"{'+'.join(summary['model']['architectures'])}, {summary['machine']['torch_threads']} CPU threads"
    if summary.get("figure_a"):
        rows = summary["figure_a"]
        fig, ax = plt.subplots(figsize=(5, 3.5))
        beams = [r["beam"] for r in rows]
        ax.plot(beams, [r["batched_wpm"] for r in rows], "o-", label="batched beam")
        ax.plot(beams, [r["unbatched_wpm"] for r in rows], "s--", label="unbatched")
        for r in rows:
            ax.annotate(f"{r['speedup']:.1f}x", (r["beam"], r["batched_wpm"]), textcoords="offset points",
                        xytext=(0, 6), ha="center", fontsize=8)
        ax.set(xlabel="beam size", ylabel="source words per minute", xticks=beams,
               title=f"Speed vs beam size ({label})")
        ax.legend()
        fig.tight_layout()
        paths.append(out.with_name(out.stem + "_beam.png"))
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)
    if summary.get("figure_b"):
        rows = summary["figure_b"]
        fig, ax = plt.subplots(figsize=(5, 3.5))
        sizes = [r["batch_sentences"] for r in rows]
        ax.plot(sizes, [r["sorted_wpm"] for r in rows], "o-", label="sorted by length")
        ax.plot(sizes, [r["unsorted_wpm"] for r in rows], "s--", label="unsorted")
        ax.set(xlabel="sentences per batch", ylabel="source words per minute",
               title=f"Speed vs sentences per batch (beam {summary['sentence_beam']}, {label})")
        ax.title.set_fontsize(9)
        ax.legend()
        fig.tight_layout()
        paths.append(out.with_name(out.stem + "_sentences.png"))
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", nargs="+", help="checkpoint files / NMT artifact folders (default: random weights)")
    p.add_argument("--architecture", default="gru", choices=("gru", "transformer"), help="for random weights")
    p.add_argument("--profile", default="small", help="sizes of the random-weight model")
    p.add_argument("--random-vocab", type=int, default=8000, help="vocabulary of the random-weight model")
    p.add_argument("--source", help="BPE source lines (default: synthetic sentences)")
    p.add_argument("--figures", default="a,b", help="which figures: a, b or a,b")
    p.add_argument("--sentences-a", type=int, default=40, help="sentences of figure (a)")
    p.add_argument("--sentences-b", type=int, default=192, help="sentences of figure (b)")
    p.add_argument("--beams", default="1,2,4,8,12")
    p.add_argument("--batch-sizes", default="1,2,3,5,7,10,16,24,32")
    p.add_argument("--sentence-beam", type=int, default=4, help="beam of figures (b) and (c)")
    p.add_argument("--stream-pool", type=int, default=16, help="figure (c): sentences per batch / in the pool")
    p.add_argument("--refill", type=float, default=1 / 6, help="figure (c): the streaming refill fraction")
    p.add_argument("--max-length-a", type=float, default=2.0)
    p.add_argument("--max-length-b", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=2, help="timed runs per configuration (the fastest is kept)")
    p.add_argument("--allow-differences", action="store_true", help="report, do not assert, differing outputs")
    p.add_argument("--out", type=Path, default=REPO / "results/benchmarks/beam_speed.json")
    args = p.parse_args(argv)
    args.beams = [int(b) for b in args.beams.split(",")]
    args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]

    torch.set_num_threads(args.threads)
    model, vocab, model_info = load(args)
    summary = {"benchmark": "beam_speed", "command": " ".join([Path(sys.executable).name, *sys.argv]),
               "machine": machine(args.threads), "model": model_info, "runs": args.runs,
               "max_length": {"a": args.max_length_a, "b": args.max_length_b}, "sentence_beam": args.sentence_beam}
    figures = set(args.figures.split(","))
    with torch.inference_mode():
        warm, _, _ = sources(args, vocab, 4)  # first calls allocate and load kernels: not timed
        decode_sources(model, warm, SearchSettings(beam=4), batch_sentences=4)
        unbatched_decode(model, warm[:1], SearchSettings(beam=2))
        if "a" in figures:
            ids, words, info = sources(args, vocab, args.sentences_a)
            summary["data_a"] = {**info, "batch_sentences": 1}
            summary["figure_a"] = figure_a(model, ids, words, args)
        if "b" in figures:
            ids, words, info = sources(args, vocab, args.sentences_b)
            summary["data_b"] = info
            summary["figure_b"] = figure_b(model, ids, words, args)
        if "c" in figures:
            ids, words, info = sources(args, vocab, args.sentences_b)
            summary["data_c"] = info
            summary["figure_c"] = figure_c(model, ids, words, args)
    summary["machine"]["load_average_at_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    paths = plot(summary, args.out)
    summary["figures"] = [str(p) for p in paths]
    args.out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
