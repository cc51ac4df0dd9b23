"""Measurement: two or more outputs of the same sentences against one reference, with paired bootstrap.

The first NAME=PATH is the baseline; every other output is compared with it (sacrebleu's paired bootstrap, BLEU and
chrF2, pipeline/evaluation/significance.py). Also prints each output's length ratio and its lines holding
``<unk>``. For before/after comparisons of one system, e.g. two artifacts of DecodeLNMT built by two commits:

    .venv/bin/python benchmarks/paired_outputs.py --reference work/small/ger-eng/tokenized/newstest2016-*/raw.en.gz \
        --lang en --lines 1000 before=<old artifact>/translation.en after=<new artifact>/translation.en \
        --out results/benchmarks/x.json
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from common import machine  # noqa: E402
from pipeline.evaluation.bleu import corpus_bleu  # noqa: E402
from pipeline.evaluation.significance import paired_bootstrap  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from pipeline.vocab import UNK  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("outputs", nargs="+", metavar="NAME=PATH", help="the baseline first, then the others")
    p.add_argument("--reference", required=True, type=Path, help="raw reference (.gz allowed)")
    p.add_argument("--lang", required=True, help="target language (the BLEU tokenizer)")
    p.add_argument("--lines", type=int, default=0, help="the first N reference lines (0: as many as the outputs)")
    p.add_argument("--samples", type=int, default=1000, help="bootstrap resamples")
    p.add_argument("--out", type=Path, help="JSON file")
    args = p.parse_args(argv)
    named = []
    for item in args.outputs:
        name, sep, path = item.partition("=")
        if not sep:
            p.error(f"{item!r}: expected NAME=PATH")
        named.append((name, list(read_lines(Path(path)))))
    references = list(read_lines(args.reference))
    references = references[:args.lines or len(named[0][1])]
    rows = []
    print(f"{'output':>12} {'BLEU':>6} {'chrF2':>6} {'length':>6} {'<unk> lines':>11}")
    for name, hypotheses in named:
        if len(hypotheses) != len(references):
            p.error(f"{name}: {len(hypotheses)} lines but {len(references)} references")
        bleu = corpus_bleu(hypotheses, references, args.lang)
        rows.append({"output": name, "bleu": round(bleu.score, 2),
                     "length_ratio": round(bleu.sys_len / bleu.ref_len, 3),
                     "unk_lines": sum(UNK in line for line in hypotheses)})
    tests = paired_bootstrap(named[0], named[1:], references, args.lang, args.samples)
    for row in rows:
        row["chrf2"] = next((t["score"] for t in tests if t["system"] == row["output"] and t["metric"] == "chrF2"),
                            next((t["baseline_score"] for t in tests if t["metric"] == "chrF2"), None))
        print(f"{row['output']:>12} {row['bleu']:6.2f} {row['chrf2']:6.2f} {row['length_ratio']:6.3f} "
              f"{row['unk_lines']:>11}")
    for t in tests:
        print(f"{t['system']} against {t['baseline']}, {t['metric']}: {t['score']:.2f} vs {t['baseline_score']:.2f}, "
              f"95% interval +-{t['ci']:.2f}, p {t['p_value']:.3f}")
    if args.out:
        write_json(args.out, {"machine": machine(1), "reference": str(args.reference), "lines": len(references),
                              "outputs": {name: item.split("=", 1)[1] for (name, _), item in zip(named, args.outputs)},
                              "rows": rows, "paired_bootstrap": tests})
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
