"""Benchmark: one beam search stepped with T threads against T searches in T processes of one thread each.

Why `lmbr serve` decodes in processes of one thread (pipeline/deploy/decoder_process.py): the same sources,
decoded by `decode_sources` (beam 4, sorted batches of 16) with a GRU of the medium profile's sizes and fixed random
weights (the speed of a step does not depend on what the weights learned), (a) with 1 thread, (b) with T threads,
(c) split into T interleaved parts decoded at once by T processes of one thread each (wall time until the last
ends). Median of --runs runs, the three alternating. Prints the times and the speed-ups and writes JSON.

    .venv/bin/python benchmarks/decode_processes.py --threads 2 --runs 3
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import machine  # noqa: E402
from pipeline.io import write_json  # noqa: E402

SIZES = {"src_vocab_size": 6900, "tgt_vocab_size": 5833, "embed_size": 256, "hidden_size": 256,
         "attention_size": 256}  # the medium profile's eng-ger GRU


def child(threads: int, part: int, parts: int, sentences: int) -> None:
    """A child process: builds the model and its part of the sources, says "ready", waits for a line on stdin,
    decodes, and prints its seconds."""
    import torch

    from pipeline.decode.batching import decode_sources
    from pipeline.decode.beam_search import SearchSettings
    from pipeline.nmt.gru import GruConfig, GruModel

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GruModel(GruConfig(pad_id=0, bos_id=1, eos_id=2, **SIZES)).eval()
    generator = torch.Generator().manual_seed(1)
    sources = [torch.randint(4, SIZES["src_vocab_size"], (int(torch.randint(8, 50, (1,), generator=generator)),),
                             generator=generator).tolist() + [2] for _ in range(sentences)]
    settings = SearchSettings(beam=4, max_length_a=1.0, max_length_b=5)
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.perf_counter()
    decode_sources(model, sources[part::parts], settings, batch_sentences=16)
    print(time.perf_counter() - started, flush=True)


def in_processes(args, threads: int, parts: int) -> float:
    """Wall seconds of `parts` processes with `threads` threads each decoding their parts at once, from the moment
    all are ready (start-up not counted) until the last ends."""
    children = [subprocess.Popen([sys.executable, __file__, "--child", f"{threads},{part},{parts}",
                                  "--sentences", str(args.sentences)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True) for part in range(parts)]
    for c in children:
        if c.stdout.readline().strip() != "ready":
            raise SystemExit("decode_processes: a child process failed to start")
    started = time.perf_counter()
    for c in children:
        c.stdin.write("go\n")
        c.stdin.flush()
    for c in children:
        c.stdout.readline()
    wall = time.perf_counter() - started
    for c in children:
        if c.wait() != 0:
            raise SystemExit("decode_processes: a child process failed")
    return wall


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--sentences", type=int, default=96)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", default="results/benchmarks-local/decode_processes.json")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(*map(int, args.child.split(",")), args.sentences)
        return 0
    modes = {"1 thread": (1, 1), f"{args.threads} threads": (args.threads, 1),
             f"{args.threads} processes x 1 thread": (1, args.threads)}
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.runs):  # the modes alternate, each in processes of its own
        for mode, (threads, parts) in modes.items():
            times[mode].append(round(in_processes(args, threads, parts), 3))
    median = {mode: statistics.median(t) for mode, t in times.items()}
    one = median["1 thread"]
    report = {"machine": machine(args.threads), "sentences": args.sentences, "beam": 4, "batch_sentences": 16,
              "model": {"architecture": "gru", **SIZES, "weights": "random, seed 0"},
              "note": "wall seconds from the moment every process is ready until the last one ends",
              "seconds": times, "median_seconds": median,
              "speedup_vs_one_thread": {mode: round(one / m, 3) for mode, m in median.items()}}
    for mode in modes:
        print(f"{mode:24s} {median[mode]:7.2f} s  runs {times[mode]}  {one / median[mode]:.2f}x one thread")
    write_json(Path(args.json), report)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
