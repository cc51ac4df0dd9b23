"""Benchmark: the CPU decoding speed-ups of pipeline/nmt/speedups.py, each alone and all together, and threads.

One model (--model), the same sentences decoded in the same sorted batches at the same beam by: the baseline; each
speed-up alone (int8 dynamic quantisation; pre-computed embedding projections, GRU only); all of them; and the
baseline on 1 thread. Reports words per minute, the speed-up over the baseline and how many 1-best outputs equal
the baseline's. Fastest of --runs runs per configuration. Prints a table and writes JSON.

    .venv/bin/python benchmarks/cpu_speedups.py --model work/medium/ger-eng/nmt/gru-seed1-* \\
        --source work/medium/ger-eng/subwords/newstest2016-*/bpe.de.gz
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts OpenMP: see beam_speed.py

from common import OWN_RESULTS, REPO, load_model, machine, source_ids  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.decode.speed import timed, tokens_of  # noqa: E402
from pipeline.decode import SearchSettings, decode_sources  # noqa: E402
from pipeline.nmt.interface import Ensemble  # noqa: E402
from pipeline.nmt.speedups import CpuSpeedups, apply_speedups  # noqa: E402

import torch  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", nargs="+", required=True, help="checkpoint files / NMT artifact folders")
    p.add_argument("--source", required=True, help="BPE source lines")
    p.add_argument("--sentences", type=int, default=200)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--batch-sentences", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path, default=None, help="default: results/benchmarks-local/cpu_speedups_<arch>.json")
    p.set_defaults(random_vocab=0, architecture="gru", profile="medium")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    ensemble, vocab, model_info = load_model(args)
    ids, words, info = source_ids(args, vocab, args.sentences)
    settings = SearchSettings(beam=args.beam)
    is_gru = all(m.config.architecture == "gru" for m in ensemble.models)
    configurations = [("baseline", CpuSpeedups(), args.threads), ("int8", CpuSpeedups(int8=True), args.threads)]
    if is_gru:
        configurations += [("precompute_embeddings", CpuSpeedups(precompute_embeddings=True), args.threads),
                           ("all", CpuSpeedups(int8=True, precompute_embeddings=True), args.threads)]
    configurations.append(("baseline, 1 thread", CpuSpeedups(), 1))
    rows, reference = [], None
    for name, speedups, threads in configurations:
        torch.set_num_threads(threads)
        model = Ensemble([apply_speedups(m, speedups) for m in ensemble.models])
        seconds, out = timed(args.runs, lambda: decode_sources(model, ids, settings, args.batch_sentences, True))
        best = [hyps[0] for hyps in tokens_of(out)]
        reference = reference or best
        row = {"configuration": name, "speedups": speedups.names(), "threads": threads,
               "seconds": round(seconds, 3), "wpm": round(60 * sum(words) / seconds, 1),
               "same_1best": sum(a == b for a, b in zip(best, reference)), "sentences": len(best)}
        row["speedup"] = round(rows[0]["seconds"] / seconds, 3) if rows else 1.0
        rows.append(row)
        print(f"{name:24s} {row['wpm']:9.0f} wpm  {row['speedup']:.2f}x  same 1-best {row['same_1best']}/"
              f"{row['sentences']}", file=sys.stderr)
    arch = "+".join(model_info["architectures"])
    out = args.out or OWN_RESULTS / f"cpu_speedups_{arch}.json"
    summary = {"benchmark": "cpu_speedups", "command": " ".join([Path(sys.executable).name, *sys.argv]),
               "machine": machine(args.threads), "model": model_info, "data": info, "beam": args.beam,
               "batch_sentences": args.batch_sentences, "runs": args.runs, "results": rows}
    summary["machine"]["load_average_at_end"] = os.getloadavg()
    write_json(out, summary)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
