"""Measurement: search errors of LMBR decoding against other outputs of the same sentences, under its own objective.

Each output line (BPE subwords, e.g. LNMT's and lattice MBR's bpe.<tgt>) is scored by DecodeLNMT's (or
DecodeLTNMT's) objective, lambda log P_NMT + L with the tuned theta, lambda and gain form, by forcing it: the decoder
with the LMBR hook and a one-path acceptor of that line (pipeline/decode/constraints.py), so the score is the one the
search itself would give the string. A line of another output that scores higher than the system's own is a search
error of the system: its search missed a string that its objective prefers. Prints, per other output, how many
sentences it wins, the mean score difference, and each output's BLEU; writes JSON.

    .venv/bin/python benchmarks/experiments/search_errors.py --profile medium --task ger-eng --system LNMT \\
        LNMT=work/medium/ger-eng/nmt-decode/LNMT-newstest2016-*/bpe.en MBR=work/medium/ger-eng/lattice-mbr/MBR-*/bpe.en \\
        --out results/benchmarks/search_errors_small_ger-eng.json
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import torch  # noqa: E402

from common import machine  # noqa: E402
from lattices.acceptor import Acceptor  # noqa: E402
from pipeline.decode import SearchSettings, decode_sources  # noqa: E402
from pipeline.decode.constraints import acceptor_hook_factory  # noqa: E402
from pipeline.decode.hooks import chain_factories  # noqa: E402
from pipeline.decode.lmbr_hook import lmbr_hook_factory  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from pipeline.nmt.system import load_system  # noqa: E402
from tasks.decode import DecodeLNMT, DecodeLTNMT  # noqa: E402


def forced_scores(task, outputs: list[list[str]], lines: int) -> list[list[float | None]]:
    """[output][line]: the objective of each output line (None: an empty line, or one outside the length limit)."""
    inputs = task.requires()
    ensemble, src_vocab, tgt_vocab = load_system(inputs["system"].artifact_dir() / "system.json")
    sources = [src_vocab.encode(line.split()) + [src_vocab.eos_id]
               for line in list(read_lines(inputs["subwords"].artifact_dir() / f"bpe.{task.config.source}.gz"))[:lines]]
    settings = SearchSettings(beam=1, max_length_a=0.0, max_length_b=1000, weight=task.nmt_lambda())
    lmbr = lmbr_hook_factory(task.lmatrix_store(), tgt_vocab.bos_id, vocab_size=len(tgt_vocab), gains=task.gains())
    scores = []
    for output in outputs:
        tokens = [tuple(tgt_vocab.encode(line.split())) for line in output[:lines]]
        forced = acceptor_hook_factory([Acceptor.from_strings([t]) for t in tokens], [len(t) + 1 for t in tokens],
                                       tgt_vocab.eos_id)
        results = decode_sources(ensemble, sources, settings, batch_sentences=16,
                                 hook_factory=chain_factories([lmbr, forced]))
        scores.append([hyps[0].score if hyps and hyps[0].tokens == t and t else None
                       for hyps, t in zip(results, tokens)])
    return scores


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("outputs", nargs="+", metavar="NAME=PATH", help="BPE outputs: the system's own first")
    p.add_argument("--profile", default="medium")
    p.add_argument("--task", required=True)
    p.add_argument("--system", choices=("LNMT", "LTNMT"), default="LNMT")
    p.add_argument("--split", help="the evaluated split (default: the task's devtest)")
    p.add_argument("--work-dir", default="work")
    p.add_argument("--lines", type=int, default=1000)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    named = [item.partition("=")[::2] for item in args.outputs]
    if any(not path for _, path in named):
        p.error("outputs are NAME=PATH")
    cls = DecodeLNMT if args.system == "LNMT" else DecodeLTNMT
    probe = cls(task_name=args.task, profile=args.profile, work_dir=args.work_dir, split="x")
    task = cls(task_name=args.task, profile=args.profile, work_dir=args.work_dir,
               split=args.split or probe.config.splits.devtest[0])
    outputs = [list(read_lines(Path(path))) for _, path in named]
    began = time.perf_counter()
    scores = forced_scores(task, outputs, args.lines)
    own = scores[0]
    rows = []
    for (name, _), other in zip(named[1:], scores[1:]):
        pairs = [(a, b) for a, b in zip(own, other) if a is not None and b is not None]
        wins = sum(b > a + 1e-4 for a, b in pairs)
        rows.append({"output": name, "sentences": len(pairs), "scores_higher": wins,
                     "scores_lower": sum(b < a - 1e-4 for a, b in pairs),
                     "mean_difference": round(sum(b - a for a, b in pairs) / max(len(pairs), 1), 4)})
        print(f"{name}: scores higher than {named[0][0]} under its objective on {wins} of {len(pairs)} sentences "
              f"(lower on {rows[-1]['scores_lower']}), mean difference {rows[-1]['mean_difference']:+.4f}")
    result = {"machine": machine(1), "task": args.task, "profile": args.profile, "system": args.system,
              "split": task.split, "lines": args.lines, "nmt_lambda": task.nmt_lambda(), "gains": task.gains(),
              "outputs": dict(named), "unscored": {name: sum(s is None for s in sc) for (name, _), sc in
                                                   zip(named, scores)},
              "rows": rows, "seconds": round(time.perf_counter() - began, 1)}
    if args.out:
        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
