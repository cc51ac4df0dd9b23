"""`lmbr posteriors LATTICE`: exact n-gram posteriors of one lattice file, as `posterior<TAB>n-gram` lines.

Lines are grouped by order (1 first), then by falling posterior. N-grams are written with the lattice's symbol
table (or, with --vocab, the target vocabulary's tokens), else as integers.
"""
from __future__ import annotations

import argparse
import math
import sys

from lattices.evidence import DEFAULT_MAX_STATES
from pipeline.errors import DataError


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or positive, not {text}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("posteriors", help="exact n-gram posteriors of a lattice (at least once per path)")
    p.add_argument("lattice", help="an OpenFst lattice file (docs/LATTICE_FORMAT.md)")
    p.add_argument("--order", type=int, choices=(1, 2, 3, 4), default=4, help="highest n-gram order (default 4)")
    p.add_argument("--alpha", type=_positive_float, default=None,
                   help="path scale: P(path) ~ exp(-alpha * cost); default: alpha of the lattices.json beside "
                        "the lattice's lattices/ folder, else 1")
    p.add_argument("--semiring", choices=("tropical", "log"), default="tropical",
                   help="strings with several derivations: best derivation (tropical, default) or summed (log)")
    p.add_argument("--nbest", type=_count, default=0,
                   help="evidence space: the K best unique strings (0, the default: the full lattice)")
    p.add_argument("--engine", choices=("exact", "openfst"), default="exact",
                   help="evidence space in float64 Python (exact, default) or OpenFst C++ (openfst: ~10x faster, "
                        "float32 tropical costs, posteriors to ~1e-5)")
    p.add_argument("--max-states", type=_count, default=DEFAULT_MAX_STATES,
                   help="tropical full lattice: past this many determinised states, prune to the widest cost margin "
                        f"that fits (default {DEFAULT_MAX_STATES}; 0: no bound); the margin is reported on stderr")
    p.add_argument("--vocab", default=None,
                   help="target vocabulary (BuildVocab's vocab.<tgt>.json): map words to NMT units first")
    p.add_argument("--codes", default=None, help="BPE codes (LearnBPE's codes.<tgt>), with --vocab")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lattices.fst_io import default_alpha, read_lattice
    from lattices.posteriors import format_posteriors, ngram_posteriors
    from lattices.units import TokenMapper, map_lattice

    if args.codes and not args.vocab:
        raise DataError("--codes needs --vocab (the target vocabulary the pieces map to)")
    lattice = read_lattice(args.lattice)
    if lattice.num_states == 0:
        print(f"lmbr posteriors: warning: {args.lattice} has no complete path (no final state reachable from the "
              "start): no n-gram has a posterior, and the sentence's L is Theta_0 everywhere", file=sys.stderr)
        return 0
    symbols = lattice.symbols
    if args.vocab:
        mapper = TokenMapper.from_files(args.codes, args.vocab)
        try:
            lattice = map_lattice(lattice, mapper)
        except ValueError as e:
            raise DataError(f"{args.lattice}: {e}") from None
        symbols = mapper.symbols()
    alpha = args.alpha if args.alpha is not None else (default_alpha(args.lattice) or 1.0)
    posteriors = ngram_posteriors(lattice, order=args.order, alpha=alpha, semiring=args.semiring,
                                  nbest=args.nbest, engine=args.engine, max_states=args.max_states)
    if math.isfinite(posteriors.margin):
        print(f"lmbr posteriors: {args.lattice}: determinised, the whole lattice would have more than "
              f"{args.max_states} states; kept the arcs on paths within {posteriors.margin:.6g} of the best path",
              file=sys.stderr)
    for line in format_posteriors(posteriors, symbols):
        print(line)
    return 0
