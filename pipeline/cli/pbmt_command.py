"""`lmbr pbmt INPUT --table T --lm LM [--weights W]`: phrase-based decoding of tokenized words, with lattices."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pipeline.errors import DataError
from pipeline.io import read_lines, write_json, write_lines
from pipeline.smt.decoder import DecoderSettings


def register(subparsers: argparse._SubParsersAction) -> None:
    d = DecoderSettings()
    p = subparsers.add_parser("pbmt", help="phrase-based decoding of tokenized words (1-best, n-best, lattices)")
    p.add_argument("input", help="tokenized, truecased source words, one sentence a line (.gz allowed)")
    p.add_argument("--table", required=True, help="phrase table: the fast form (phrase-table.npz) or Moses text")
    p.add_argument("--lm", required=True, help="KenLM model of the target words (ARPA or binary)")
    p.add_argument("--weights", help="weights JSON (from MERT); default: Moses' default weights")
    p.add_argument("--output", "-o", default="-", help="1-best words, one line per input line (default: stdout)")
    p.add_argument("--nbest", type=int, default=0, help="n-best size (0: none)")
    p.add_argument("--nbest-output", help="file of the n-best list in Moses format (needs --nbest)")
    p.add_argument("--lattices", help="folder for <i>.fst lattices and lattices.json (docs/LATTICE_FORMAT.md)")
    p.add_argument("--alpha", type=float, default=1.0, help="path scale recorded in lattices.json")
    p.add_argument("--workers", type=int, default=1, help="decoding processes")
    p.add_argument("--stack-limit", type=int, default=d.stack_limit, help="hypotheses per stack")
    p.add_argument("--beam-threshold", type=float, default=d.beam_threshold, help="Moses -b; 0: off")
    p.add_argument("--distortion-limit", type=int, default=d.distortion_limit, help="negative: unlimited")
    p.add_argument("--options-per-phrase", type=int, default=d.options_per_phrase, help="0: no cap")
    p.add_argument("--stats", action="store_true", help="print speed and lattice sizes as JSON on stderr")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import kenlm

    from pipeline.smt.decoder import Decoder
    from pipeline.smt.features import Weights
    from pipeline.smt.lattice import format_nbest
    from pipeline.smt.parallel import Job, decode_all
    from pipeline.smt.phrase_table import FastPhraseTable, PhraseTable
    from pipeline.smt.weights import load_weights

    if args.nbest_output and args.nbest <= 0:
        raise DataError("--nbest-output needs --nbest N with N > 0")
    started = time.perf_counter()
    sentences = [line.split() for line in read_lines(Path(args.input))]
    table_path = Path(args.table)
    if not table_path.is_file():
        raise FileNotFoundError(f"{table_path}: no such phrase table")
    table = FastPhraseTable.load(table_path) if table_path.suffix == ".npz" else PhraseTable.from_moses(table_path)
    weights = load_weights(Path(args.weights)).weights if args.weights else Weights.default(table.reordering)
    if not Path(args.lm).is_file():
        raise FileNotFoundError(f"{args.lm}: no such language model")
    settings = DecoderSettings(stack_limit=args.stack_limit, beam_threshold=args.beam_threshold,
                               distortion_limit=args.distortion_limit, options_per_phrase=args.options_per_phrase)
    decoder = Decoder(table.filter(sentences), kenlm.Model(args.lm), weights, settings)
    lattice_dir = Path(args.lattices) / "lattices" if args.lattices else None
    loaded = time.perf_counter()
    results = decode_all(Job(decoder, sentences, nbest=args.nbest, lattice_dir=lattice_dir), args.workers)
    seconds = time.perf_counter() - loaded
    best = [" ".join(r.best.words) for r in results]
    if args.output == "-":
        sys.stdout.write("".join(line + "\n" for line in best))
    else:
        write_lines(Path(args.output), best)
    if args.nbest_output:
        write_lines(Path(args.nbest_output), (line for r in results for line in format_nbest(r.index, r.nbest)))
    words = sum(r.source_words for r in results)
    stats = {"sentences": len(results), "source_words": words, "load_seconds": round(loaded - started, 3),
             "decode_seconds": round(seconds, 3), "words_per_minute": round(60 * words / max(seconds, 1e-9), 1),
             "lattice_states": sum(r.lattice_states for r in results),
             "lattice_arcs": sum(r.lattice_arcs for r in results)}
    if args.lattices:
        write_json(Path(args.lattices) / "lattices.json",
                   {"alpha": args.alpha, "sentences": len(results), "weights": weights.to_dict(),
                    "semiring": "tropical", "states": stats["lattice_states"], "arcs": stats["lattice_arcs"]})
    if args.stats:
        print(json.dumps(stats), file=sys.stderr)
    return 0
