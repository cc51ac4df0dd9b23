"""Benchmark: what LMBR costs in the batched beam decoder - the same model and search with and without L.

The L matrices are built here from a decoded split's PBMT lattices (--lattices, with the target BPE codes and
vocabulary of the NMT model) with the OpenFst engine (200-best by default: the accelerated system's evidence
space); Theta from --precisions (the PBMT's BLEU precisions, in percent). Both decoders run the same sentences in
the same batches (sorted, --batch-sentences) at the same beam; LMBR scales log P_NMT by --nmt-lambda. Reported:
seconds, words per minute, decoder steps (rows advanced, summed over steps) and the time per 1000 row-steps, whose
ratio is the per-step overhead of gathering and adding L (LMBR changes the outputs, hence the number of steps).
Each configuration is timed --runs times, the fastest kept. Prints a table and writes JSON.

    .venv/bin/python benchmarks/lmbr_overhead.py --model work/medium/ger-eng/nmt/gru-seed1-* \\
        --source work/medium/ger-eng/subwords/newstest2016-*/bpe.de.gz \\
        --lattices work/medium/ger-eng/pbmt/newstest2016-* \\
        --codes work/medium/ger-eng/bpe/bpe-*/codes.en --vocab work/medium/ger-eng/vocab/vocab-*/vocab.en.json
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts OpenMP: see beam_speed.py

from common import OWN_RESULTS, REPO, load_model, machine, source_ids  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.decode.speed import QueryCounter, timed  # noqa: E402
from lattices.fst_io import lattice_paths  # noqa: E402
from lattices.lmatrix_shards import LMatrixStore, build_lmatrix_shard  # noqa: E402
from lattices.theta import Theta  # noqa: E402
from pipeline.decode import SearchSettings, decode_sources  # noqa: E402
from pipeline.decode.lmbr_hook import lmbr_hook_factory  # noqa: E402

import torch  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", nargs="+", required=True, help="checkpoint files / NMT artifact folders")
    p.add_argument("--source", required=True, help="BPE source lines of the split")
    p.add_argument("--lattices", type=Path, required=True, help="the split's DecodePBMT folder")
    p.add_argument("--codes", type=Path, required=True, help="target BPE codes (LearnBPE's codes.<tgt>)")
    p.add_argument("--vocab", type=Path, required=True, help="target vocabulary (BuildVocab's vocab.<tgt>.json)")
    p.add_argument("--precisions", default="58.62,27.50,14.50,8.00", help="PBMT BLEU precisions for theta")
    p.add_argument("--theta-convention", default="scaled", choices=("plain", "scaled"))
    p.add_argument("--nbest", type=int, default=200, help="evidence space (0: the full lattice)")
    p.add_argument("--sentences", type=int, default=200)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--batch-sentences", type=int, default=16)
    p.add_argument("--nmt-lambda", type=float, default=0.5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path, default=OWN_RESULTS / "lmbr_overhead.json")
    p.set_defaults(random_vocab=0, architecture="gru", profile="medium")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)

    model, vocab, model_info = load_model(args)
    args.source = str(args.source)
    ids, words, info = source_ids(args, vocab, args.sentences)
    theta = Theta.from_precisions([float(x) for x in args.precisions.split(",")], args.theta_convention)
    paths = lattice_paths(args.lattices)[: len(ids)]
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        shard = Path(tmp) / "shard-0.npz"
        stats = build_lmatrix_shard(paths, args.codes, args.vocab, theta, None, "tropical", args.nbest, shard,
                                    engine="openfst")
        build_seconds = time.perf_counter() - started
        store = LMatrixStore([shard])
        factory = lmbr_hook_factory(store, model.bos_id, vocab_size=model.tgt_vocab_size)
        runs = {}
        for name, hook, weight in (("plain", None, 1.0), ("lmbr", factory, args.nmt_lambda)):
            settings = SearchSettings(beam=args.beam, weight=weight)
            decode = lambda: decode_sources(model, ids, settings, args.batch_sentences, True,  # noqa: E731
                                            hook_factory=hook)
            seconds, _ = timed(args.runs, decode)
            counter = QueryCounter(model)  # one more, untimed run: the rows advanced by every step
            decode_sources(counter, ids, settings, args.batch_sentences, True, hook_factory=hook)
            runs[name] = {"seconds": round(seconds, 3), "wpm": round(60 * sum(words) / seconds, 1),
                          "row_steps": counter.rows, "ms_per_1000_row_steps": round(1e6 * seconds / counter.rows, 3)}
            print(f"{name:6s}: {runs[name]['wpm']:8.0f} wpm, {seconds:.2f} s, {counter.rows} row-steps, "
                  f"{runs[name]['ms_per_1000_row_steps']:.3f} ms per 1000 row-steps", file=sys.stderr)
    overhead = {"total_time": round(runs["lmbr"]["seconds"] / runs["plain"]["seconds"] - 1, 4),
                "per_row_step": round(runs["lmbr"]["ms_per_1000_row_steps"] / runs["plain"]["ms_per_1000_row_steps"]
                                      - 1, 4)}
    print(f"LMBR overhead: {100 * overhead['total_time']:+.1f}% total time, {100 * overhead['per_row_step']:+.1f}% "
          f"per row-step; L built in {build_seconds:.1f} s ({stats['rows']} rows)", file=sys.stderr)
    summary = {"benchmark": "lmbr_overhead", "command": " ".join([Path(sys.executable).name, *sys.argv]),
               "machine": machine(args.threads), "model": model_info, "data": info, "beam": args.beam,
               "batch_sentences": args.batch_sentences, "nmt_lambda": args.nmt_lambda, "nbest": args.nbest,
               "theta": theta.signature(), "lmatrix": {k: stats[k] for k in ("sentences", "rows", "nnz")},
               "lmatrix_build_seconds": round(build_seconds, 3), "runs": runs, "overhead": overhead}
    summary["machine"]["load_average_at_end"] = os.getloadavg()
    write_json(args.out, summary)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
