"""Measurement: what each system of Table 1 outputs, beside its BLEU: length and loops.

For every task and system of a finished run, reads the system's translation of the evaluation split (the Luigi
artifact the run built) and reports cased BLEU, chrF2, the 1-gram precision, the output/reference length ratio and
the share of repeated 4-grams in the output (a 4-gram the same line has already produced: the loops of a weak
model exploiting per-step gains): LNMT's length ratio and its repeated 4-grams against PBMT's. Prints a table and writes JSON.

    .venv/bin/python benchmarks/output_stats.py --profile tiny --tasks all
    .venv/bin/python benchmarks/output_stats.py --profile medium --tasks ger-eng --out results/benchmarks/x.json
"""
from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from common import machine, output_scores, repeated_4grams  # noqa: E402
from pipeline.evaluation.bleu import bleu_tokenizer  # noqa: E402
from pipeline.evaluation.significance import chrf2  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from pipeline.vocab import UNK  # noqa: E402
from sacrebleu.metrics import BLEU  # noqa: E402

TASKS = ("chi-eng", "eng-ger", "eng-jpn", "ger-eng", "jpn-eng")


def distinct_unks(line: str) -> str:
    """`line` with its n-th ``<unk>`` replaced by a word of its own (UNKn): each stands for another source word."""
    count = itertools.count(1)
    return re.sub(re.escape(UNK), lambda _: f"UNK{next(count)}", line)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--profile", default="tiny")
    p.add_argument("--tasks", default="all", help=f"comma-separated of {','.join(TASKS)}, or all")
    p.add_argument("--work-dir", default="work", help="as the run was given it (artifact ids depend on it); "
                                                     "relative to the checkout")
    p.add_argument("--config-dir", default=str(REPO / "configs"))
    p.add_argument("--out", type=Path, default=None, help="JSON file (default: results/benchmarks-local/"
                                                           "output_stats_<profile>.json)")
    args = p.parse_args(argv)
    os.chdir(REPO)
    from pipeline.config import load_task
    from tasks.data import TokenizeSplit
    from tasks.report import resolve_eval_split
    from tasks.systems import ALL_SYSTEMS, translation_task

    tasks = TASKS if args.tasks == "all" else tuple(args.tasks.split(","))
    rows = []
    print(f"{'task':>8} {'system':>10} {'BLEU':>6} {'chrF2':>6} {'P1':>5} {'len':>5} {'repeated 4-grams':>20}")
    for task in tasks:
        common = {"task_name": task, "profile": args.profile, "work_dir": str(args.work_dir),
                  "config_dir": str(args.config_dir)}
        split = resolve_eval_split(load_task(task, Path(args.config_dir)), "devtest")
        raw = TokenizeSplit(split=split, **common)
        target = raw.config.target
        references = list(read_lines(raw.artifact_dir() / f"raw.{target}.gz"))
        tokenize = BLEU(tokenize=bleu_tokenizer(target)).tokenizer
        for system in ALL_SYSTEMS:
            decoding = translation_task(system)(split=split, **common)
            path = decoding.artifact_dir() / f"translation.{target}"
            if not path.exists():
                continue
            hypotheses = list(read_lines(path))
            row = {"task": task, "system": system, "split": split, **output_scores(hypotheses, references, target),
                   "chrf2": round(chrf2(hypotheses, references), 2)}
            # repeated 4-grams over BLEU's own tokens (Japanese has no spaces); BLEU's tokenizer splits "<unk>" into
            # "< unk >", so a chain of <unk> (one per untranslated source piece) counts as a loop there: the second
            # measure treats every <unk> as a word of its own
            repeats, total = repeated_4grams([tokenize(line) for line in hypotheses])
            distinct, _ = repeated_4grams([tokenize(distinct_unks(line)) for line in hypotheses])
            row.update(repeated_4grams=repeats, **{"4grams": total},
                       repeated_share=round(repeats / total, 3) if total else 0.0,
                       unk_lines=sum(UNK in line for line in hypotheses),
                       repeated_share_unk_distinct=round(distinct / total, 4) if total else 0.0)
            rows.append(row)
            print(f"{task:>8} {system:>10} {row['bleu']:6.2f} {row['chrf2']:6.2f} {row['precision_1']:5.1f} "
                  f"{row['length_ratio']:5.2f} {row['repeated_4grams']:>8} of {row['4grams']:<6} "
                  f"({100 * row['repeated_share']:.1f}%; {100 * row['repeated_share_unk_distinct']:.2f}% with each "
                  f"<unk> distinct, {row['unk_lines']} lines with <unk>)", flush=True)
    out = args.out or REPO / "results" / "benchmarks-local" / f"output_stats_{args.profile}.json"
    write_json(out, {"machine": machine(1), "profile": args.profile, "rows": rows})
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
