"""Benchmark: round-trip fidelity of the text pipeline (raw line -> words -> subwords -> text).

For the target language of each of the five tasks, trains a truecaser (languages with case) and BPE codes on
the first --train-lines lines of the training file, runs every dev line through ``TextProcessor.words``,
``subwords`` and ``postprocess``, and scores the result against the original line with sacrebleu
(``ja-mecab`` for Japanese, ``13a`` otherwise). A perfect round trip gives BLEU 100 and no differing lines.
Prints a table and writes JSON. Run from anywhere:

    .venv/bin/python benchmarks/text_roundtrip.py [--data-dir DATA_FOLDER] [--show 20]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import sacrebleu  # noqa: E402

from common import machine  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.text import BpeSegmenter, TextProcessor, Truecaser, get_tokenizer, learn_bpe  # noqa: E402


@dataclass(frozen=True)
class Target:
    """One task's target side: where its text is and how it is processed and scored."""

    task: str
    pair: str
    lang: str
    tokenizer: str
    cased: bool
    bleu_tokenize: str


TARGETS = (
    Target("de-en", "de-en", "en", "moses", True, "13a"),
    Target("en-de", "de-en", "de", "moses", True, "13a"),
    Target("en-ja", "ja-en", "ja", "mecab", False, "ja-mecab"),
    Target("ja-en", "ja-en", "en", "moses", True, "13a"),
    Target("zh-en", "zh-en", "en", "moses", True, "13a"),
)


@dataclass
class Result:
    task: str
    lang: str
    dev_lines: int
    bleu: float
    differing_lines: int
    differing_beyond_spaces: int  # lines that still differ once all whitespace is removed
    seconds: float
    signature: str


def read_lines(path: Path, limit: int | None = None) -> list[str]:
    """The lines of a gzip text file without their line ends (at most ``limit``)."""
    if not path.is_file():
        raise SystemExit(f"missing data file {path} (see --data-dir)")
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as handle:
        return list(itertools.islice((line.rstrip("\n") for line in handle), limit))


def build_processor(target: Target, train: list[str], work: Path, merges: int) -> TextProcessor:
    """Train the truecaser and the BPE codes of ``target`` on ``train`` lines."""
    tokenizer = get_tokenizer(target.tokenizer, target.lang, cache_dir=work / "cache")
    tokenized = [tokenizer.tokenize(line) for line in train]
    truecaser = Truecaser.train(tokenized) if target.cased else None
    words = [truecaser.truecase(tokens) for tokens in tokenized] if truecaser else tokenized
    codes = work / f"codes.{target.lang}"
    learn_bpe((" ".join(line) for line in words), merges, codes)
    return TextProcessor(tokenizer, truecaser, BpeSegmenter(codes))


def round_trip(target: Target, data_dir: Path, train_lines: int, merges: int, show: int) -> Result:
    start = time.perf_counter()
    train = read_lines(data_dir / target.pair / f"train.{target.lang}.gz", train_lines)
    dev = read_lines(data_dir / target.pair / f"dev.{target.lang}.gz")
    with tempfile.TemporaryDirectory() as tmp:
        processor = build_processor(target, train, Path(tmp), merges)
        hyps = [processor.postprocess(processor.subwords(processor.words(line))) for line in dev]
    bleu = sacrebleu.BLEU(tokenize=target.bleu_tokenize)
    score = bleu.corpus_score(hyps, [dev])
    differing = [(ref, hyp) for ref, hyp in zip(dev, hyps) if ref != hyp]
    for ref, hyp in differing[:show]:
        print(f"  {target.task} ref: {ref}\n  {target.task} hyp: {hyp}", file=sys.stderr)
    return Result(
        task=target.task,
        lang=target.lang,
        dev_lines=len(dev),
        bleu=round(score.score, 2),
        differing_lines=len(differing),
        differing_beyond_spaces=sum("".join(ref.split()) != "".join(hyp.split()) for ref, hyp in differing),
        seconds=round(time.perf_counter() - start, 1),
        signature=str(bleu.get_signature()),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=os.environ.get("MT_DATA_DIR"),
                        help="the data folder <pair>/<split>.<lang>.gz (default: $MT_DATA_DIR)")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks-local" / "text_roundtrip.json")
    parser.add_argument("--train-lines", type=int, default=20000)
    parser.add_argument("--merges", type=int, default=4000)
    parser.add_argument("--tasks", nargs="*", default=[t.task for t in TARGETS], help="a subset of the tasks")
    parser.add_argument("--show", type=int, default=0, help="print this many differing lines per task to stderr")
    args = parser.parse_args(argv)
    if args.data_dir is None:
        parser.error("name the data folder: --data-dir DIR or $MT_DATA_DIR")

    results = []
    print(f"{'task':6} {'lang':4} {'lines':>6} {'BLEU':>7} {'differ':>7} {'beyond-spaces':>13} {'sec':>6}")
    for target in TARGETS:
        if target.task in args.tasks:
            r = round_trip(target, args.data_dir, args.train_lines, args.merges, args.show)
            results.append(r)
            print(f"{r.task:6} {r.lang:4} {r.dev_lines:6d} {r.bleu:7.2f} {r.differing_lines:7d} "
                  f"{r.differing_beyond_spaces:13d} {r.seconds:6.1f}", flush=True)
    payload = {"benchmark": "text_roundtrip", "command": " ".join([Path(sys.executable).name, *sys.argv]),
               "machine": machine(1), "train_lines": args.train_lines, "merges": args.merges,
               "results": [asdict(r) for r in results]}
    write_json(args.out, payload)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
