"""`lmbr tokenize` and `lmbr detokenize`: the language's tokenizer as a filter from stdin to stdout."""
from __future__ import annotations

import argparse
import sys

from pipeline.config import TOKENIZERS
from pipeline.text import get_tokenizer

DEFAULT_TOKENIZER = {"zh": "jieba", "ja": "mecab"}


def register(subparsers: argparse._SubParsersAction) -> None:
    for name, help_text in (("tokenize", "tokenize stdin (normalize, tokenize, escape), one line at a time"),
                            ("detokenize", "detokenize stdin (unescape, rebuild spacing)")):
        p = subparsers.add_parser(name, help=help_text)
        p.add_argument("--lang", required=True, help="language code: en, de, zh, ja, ...")
        p.add_argument("--tokenizer", choices=TOKENIZERS, help="default: jieba for zh, mecab for ja, moses otherwise")
        p.set_defaults(run=run, direction=name)


def run(args: argparse.Namespace) -> int:
    tokenizer = get_tokenizer(args.tokenizer or DEFAULT_TOKENIZER.get(args.lang, "moses"), args.lang)
    for line in sys.stdin:
        line = line.rstrip("\n")
        if args.direction == "tokenize":
            print(" ".join(tokenizer.tokenize(line)))
        else:
            print(tokenizer.detokenize(line.split()))
    return 0
