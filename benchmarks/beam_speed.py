"""Benchmark: batched beam decoding speed, the data of the paper's Figures 2 and 3 (words per minute on the CPU).

(a) speed vs beam size (1, 2, 4, 8, 12): the batched decoder (one neural query per step for the B hypotheses of a
    sentence) against the unbatched reference (pipeline/decode/unbatched.py: one query per hypothesis), one
    sentence at a time, same model, same search; sentences whose outputs differ are recorded (float32 rounding).
(b) speed vs sentences per batch (1 to 32) at a fixed beam, sentences sorted by length or in input order; the speed-up
    is against 1 sentence per batch (beam batching alone).
(c) streaming refill (ALGORITHMS.md section 6) vs plain sentence batching, at the beam of (b) and --stream-pool
    sentences, in input order and sorted; differing outputs are recorded, as in (a) and (b).

Model: checkpoints given with --model (e.g. an NMTSystem / TrainNMT artifact folder of the medium profile), else
random weights at the --profile's sizes over a synthetic vocabulary (--random-vocab). Source: BPE lines of a split
(--source, e.g. the ApplyBPE artifact's bpe.de.gz of newstest2016), else synthetic sentences. Every configuration is
timed --runs times and the fastest run is kept (the machine is shared), with OMP_WAIT_POLICY=PASSIVE unless set
(spinning OpenMP threads make 2-thread runs 10-20x slower when the cores are oversubscribed). Words are source
words (BPE merged). Prints tables and writes JSON and two PNGs (matplotlib, Agg).

    .venv/bin/python benchmarks/beam_speed.py --model work/medium/ger-eng/nmt/gru-seed1-* \\
        --source work/medium/ger-eng/subwords/newstest2016-*/bpe.de.gz --threads 2
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# On a shared machine, OpenMP threads that spin while waiting for a descheduled partner make 2-thread runs of small
# operations 10-20x slower; passive waiting keeps the measurements meaningful (set before torch starts OpenMP).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from common import OWN_RESULTS, REPO, load_model, log, machine, source_ids  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.decode import SearchSettings, decode_sources  # noqa: E402
from pipeline.decode.speed import plot_speed, speed_vs_batch, speed_vs_beam, streaming_vs_batching  # noqa: E402
from pipeline.decode.unbatched import unbatched_decode  # noqa: E402


def plot(summary: dict, out: Path) -> list[Path]:
    where = summary["machine"].get("gpu") or f"{summary['machine']['torch_threads']} CPU threads"
    label = f"{'+'.join(summary['model']['architectures'])}, {where}"
    return plot_speed(summary.get("figure_a"), summary.get("figure_b"), label, summary["sentence_beam"],
                      out.with_name(out.stem))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", nargs="+", help="checkpoint files / NMT artifact folders (default: random weights)")
    p.add_argument("--architecture", default="gru", choices=("gru", "transformer"), help="for random weights")
    p.add_argument("--profile", default="medium", help="sizes of the random-weight model")
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
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (the paper's setting is a GPU)")
    p.add_argument("--runs", type=int, default=2, help="timed runs per configuration (the fastest is kept)")
    p.add_argument("--out", type=Path, default=OWN_RESULTS / "beam_speed.json")
    args = p.parse_args(argv)
    args.beams = [int(b) for b in args.beams.split(",")]
    args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]

    torch.set_num_threads(args.threads)
    model, vocab, model_info = load_model(args)
    summary = {"benchmark": "beam_speed", "command": " ".join([Path(sys.executable).name, *sys.argv]),
               "machine": machine(args.threads, args.device), "model": model_info, "runs": args.runs,
               "max_length": {"a": args.max_length_a, "b": args.max_length_b}, "sentence_beam": args.sentence_beam}
    figures = set(args.figures.split(","))
    max_length = (args.max_length_a, args.max_length_b)
    with torch.inference_mode():
        warm, _, _ = source_ids(args, vocab, 4)  # first calls allocate and load kernels: not timed
        decode_sources(model, warm, SearchSettings(beam=4), batch_sentences=4)
        unbatched_decode(model, warm[:1], SearchSettings(beam=2))
        if "a" in figures:
            ids, words, info = source_ids(args, vocab, args.sentences_a)
            summary["data_a"] = {**info, "batch_sentences": 1}
            summary["figure_a"] = speed_vs_beam(model, ids, words, args.beams, args.runs, max_length,
                                                log=log)
        if "b" in figures:
            ids, words, info = source_ids(args, vocab, args.sentences_b)
            summary["data_b"] = info
            summary["figure_b"] = speed_vs_batch(model, ids, words, args.batch_sizes, args.sentence_beam,
                                                 args.runs, max_length, log)
        if "c" in figures:
            ids, words, info = source_ids(args, vocab, args.sentences_b)
            summary["data_c"] = info
            summary["figure_c"] = streaming_vs_batching(model, ids, words, args.stream_pool, args.sentence_beam,
                                                        args.refill, args.runs, max_length, log)
    summary["machine"]["load_average_at_end"] = os.getloadavg()
    paths = plot(summary, args.out)
    summary["figures"] = [str(p) for p in paths]
    write_json(args.out, summary)
    print(f"wrote {args.out} and {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
