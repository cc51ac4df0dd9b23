"""Benchmark: per-step against bounded LMBR gains over a lambda sweep, with the PBMT 1-best beside them.

Decodes a split's BPE source with an NMT system and the split's L (BuildLMatrix, theta from the PBMT's tune-set
precisions), for every lambda of --lambdas and both gain forms, and reports cased BLEU, the 1-gram precision, the
output/reference length ratio and the share of repeated 4-grams in the output (a 4-gram a sentence has already
produced; the loops of a weak model exploiting per-step gains), measured on the split given: tune choices on the
tuning split, report on devtest. Prints a table and writes JSON.

    .venv/bin/python benchmarks/experiments/lmbr_gains.py --work work/tiny/ger-eng --split newstest2016 --task ger-eng
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from common import machine, output_scores  # noqa: E402
from lattices.lmatrix_shards import LMatrixStore  # noqa: E402
from pipeline import config as configs  # noqa: E402
from pipeline.decode.beam_search import SearchSettings  # noqa: E402
from pipeline.decode.lmbr_hook import lmbr_hook_factory  # noqa: E402
from pipeline.decode.translate import load_models, translate_lines  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from pipeline.text import TextProcessor, Truecaser, get_tokenizer  # noqa: E402


def only(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise SystemExit(f"{folder}: expected one {pattern}, found {len(found)}")
    return found[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", type=Path, required=True, help="a task's folder of a run (work/<profile>/<task>)")
    p.add_argument("--task", required=True, help="the task config (languages)")
    p.add_argument("--split", required=True, help="the split decoded (its L and PBMT output must be built)")
    p.add_argument("--system", default="FNMT", help="the NMT system (NMTSystem) to decode with")
    p.add_argument("--lambdas", default="0.25,0.05,0.01,0.001")
    p.add_argument("--gains", default="per_step,bounded")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=REPO / "results/benchmarks-local/lmbr_gains.json")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    task = configs.load_task(args.task)
    src, tgt = task.source, task.target
    work = args.work
    models = load_models([only(work / "nmt-system", f"{args.system}-*/system.json")], "cpu")
    lines = list(read_lines(only(work / "subwords", f"{args.split}-*/bpe.{src}.gz")))
    references = list(read_lines(only(work / "tokenized", f"{args.split}-*/raw.{tgt}.gz")))
    store = LMatrixStore(sorted(only(work / "lmatrix", f"{args.split}-*/signature.json").parent.glob("shard-*.npz")))
    truecaser = Truecaser.load(only(work / "truecaser", f"*/truecase.{tgt}.json")) if task.languages[tgt].truecase \
        else None
    processor = TextProcessor(tokenizer=get_tokenizer(task.languages[tgt].tokenizer, tgt), truecaser=truecaser,
                              bpe=None)
    pbmt = list(read_lines(only(work / "pbmt", f"{args.split}-*/translation.{tgt}")))
    rows = [{"system": "PBMT 1-best", **output_scores(pbmt, references, tgt)}]
    print(f"{'system':>12} {'lambda':>7} {'gains':>9} {'BLEU':>6} {'P1':>5} {'len':>5} {'repeated 4-grams':>18}")
    print(f"{'PBMT':>12} {'':>7} {'':>9} {rows[0]['bleu']:6.2f} {rows[0]['precision_1']:5.1f} "
          f"{rows[0]['length_ratio']:5.2f} {rows[0]['repeated_4grams']:>8} of {rows[0]['4grams']}")
    for lam in (float(x) for x in args.lambdas.split(",")):
        for gains in args.gains.split(","):
            started = time.perf_counter()
            settings = SearchSettings(beam=args.beam, weight=lam)
            factory = lmbr_hook_factory(store, models.tgt_vocab.bos_id, vocab_size=len(models.tgt_vocab),
                                        gains=gains)
            out = translate_lines(lines, models, settings, processor, source=None, batch_sentences=8,
                                  hook_factory=factory)
            row = {"system": args.system, "lambda": lam, "gains": gains, **output_scores(out.text, references, tgt),
                   "seconds": round(time.perf_counter() - started, 1)}
            rows.append(row)
            print(f"{args.system:>12} {lam:7g} {gains:>9} {row['bleu']:6.2f} {row['precision_1']:5.1f} "
                  f"{row['length_ratio']:5.2f} {row['repeated_4grams']:>8} of {row['4grams']}", flush=True)
    write_json(args.out, {"machine": machine(args.threads), "work": str(work), "split": args.split,
                          "beam": args.beam, "rows": rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
