"""`lmbr bleu HYP REF --lang L`: cased BLEU with sacrebleu, the tokenizer chosen by target language."""
from __future__ import annotations

import argparse
import json

from pipeline.errors import DataError
from pipeline.evaluation import corpus_bleu
from pipeline.io import read_lines


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bleu", help="cased BLEU of detokenized text (sacrebleu)")
    p.add_argument("hypotheses", help="detokenized system output, one segment a line (.gz allowed)")
    p.add_argument("reference", help="reference, line-aligned with the hypotheses (.gz allowed)")
    p.add_argument("--lang", required=True, help="target language (ja uses ja-mecab, zh uses zh, others 13a)")
    p.add_argument("--json", action="store_true", help="print the score, precisions and signature as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    hypotheses, references = list(read_lines(args.hypotheses)), list(read_lines(args.reference))
    if len(hypotheses) != len(references):
        raise DataError(f"{args.hypotheses} has {len(hypotheses)} lines but {args.reference} has {len(references)}")
    score = corpus_bleu(hypotheses, references, args.lang)
    print(json.dumps(score.to_dict(), indent=2) if args.json else str(score))
    return 0
