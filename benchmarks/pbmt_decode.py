"""Benchmark: PBMT decoding speed (source words per minute) with and without lattice output, and lattice sizes.

By default it decodes the medium profile's de-en tuning set (ger-eng `dev`, newstest2013) with the medium profile's
phrase table, KenLM model and MERT weights (default weights when TunePBMT has not run), all located as Luigi
artifacts under --work-dir (``--build`` builds what is missing). Explicit ``--table/--lm/--weights/--input``
paths override. The compiled search and the Python reference search run alternately (``--engines``, ``--runs``;
medians reported), and the sha256 of their outputs (1-best and n-best words, scores and features, lattice files)
says whether they are identical. Run from anywhere:

    .venv/bin/python benchmarks/pbmt_decode.py --sentences 300 --processes 2 --stack-limit 200 --runs 3
"""
from __future__ import annotations

import argparse
import hashlib
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kenlm  # noqa: E402

from common import OWN_RESULTS, REPO, artifact_arguments, pbmt_inputs  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.io import read_lines  # noqa: E402
from pipeline.smt.decoder import Decoder, DecoderSettings  # noqa: E402
from pipeline.smt.features import Weights  # noqa: E402
from pipeline.smt.parallel import Job, decode_all  # noqa: E402
from pipeline.smt.phrase_table import FastPhraseTable  # noqa: E402
from pipeline.smt.weights import load_weights  # noqa: E402


def timed_decode(decoder: Decoder, sentences: list[list[str]], args: argparse.Namespace, lattices: bool,
                 desc: str) -> tuple[float, str, list]:
    """Wall seconds of one decoding of every sentence, the sha256 of its 1-best lines, n-best lists and lattice
    files, and the per-sentence results."""
    with tempfile.TemporaryDirectory(prefix="pbmt-bench-") as tmp:
        lattice_dir = Path(tmp) / "lattices" if lattices else None
        started = time.perf_counter()
        results = decode_all(Job(decoder, sentences, nbest=args.nbest, lattice_dir=lattice_dir), args.processes,
                             desc=desc)
        seconds = time.perf_counter() - started
        digest = hashlib.sha256()
        for r in results:
            for h in [r.best, *r.nbest]:
                digest.update(repr((h.words, h.score)).encode() + h.features.tobytes())
            if lattice_dir is not None:
                digest.update((lattice_dir / f"{r.index}.fst").read_bytes())
    return seconds, digest.hexdigest(), results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    artifact_arguments(p, "ger-eng")
    p.add_argument("--split", help="split to decode (default: the task's tuning split, dev)")
    p.add_argument("--build", action="store_true", help="build missing artifacts with Luigi first")
    p.add_argument("--build-weights", action="store_true", help="with --build: run MERT too (slow)")
    p.add_argument("--table", type=Path)
    p.add_argument("--lm", type=Path)
    p.add_argument("--weights", type=Path)
    p.add_argument("--input", type=Path)
    p.add_argument("--sentences", type=int, default=0, help="first N sentences (0: all)")
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--stack-limit", default="", help="comma-separated stack sizes (default: the profile's)")
    p.add_argument("--distortion-limit", type=int, help="default: the profile's")
    p.add_argument("--beam-threshold", type=float, help="default: the profile's")
    p.add_argument("--options-per-phrase", type=int, help="default: the profile's")
    p.add_argument("--nbest", type=int, default=0, help="n-best size drawn per sentence (0: none)")
    p.add_argument("--engines", default="compiled,python",
                   help="searches to time side by side: compiled (pbmt_search.cpp), python (the reference)")
    p.add_argument("--runs", type=int, default=1, help="runs per engine and setting (the median is reported)")
    p.add_argument("--out", type=Path, default=OWN_RESULTS / "pbmt_decode.json")
    args = p.parse_args(argv)

    from pipeline.config import load_profile

    pbmt = load_profile(args.profile, args.config_dir).pbmt
    paths = pbmt_inputs(args)
    sentences = [line.split() for line in read_lines(paths["input"])]
    sentences = sentences[:args.sentences] if args.sentences > 0 else sentences
    words = sum(map(len, sentences))
    started = time.perf_counter()
    table = FastPhraseTable.load(paths["table"]).filter(sentences)
    lm = kenlm.Model(str(paths["lm"]))
    weights = load_weights(paths["weights"]).weights if paths["weights"] else Weights.default(table.reordering)
    load_seconds = time.perf_counter() - started
    stacks = [int(s) for s in args.stack_limit.split(",") if s] or [pbmt.stack_limit]
    engines = [e for e in args.engines.split(",") if e]
    runs = []
    for stack in stacks:
        settings = DecoderSettings(
            stack_limit=stack,
            beam_threshold=pbmt.beam_threshold if args.beam_threshold is None else args.beam_threshold,
            distortion_limit=pbmt.distortion_limit if args.distortion_limit is None else args.distortion_limit,
            options_per_phrase=pbmt.options_per_phrase if args.options_per_phrase is None else args.options_per_phrase)
        decoders = {e: Decoder(table, lm, weights, settings, compiled=e == "compiled") for e in engines}
        for lattices in (False, True):
            timed: dict[str, list[float]] = {e: [] for e in engines}
            digests: dict[str, set[str]] = {e: set() for e in engines}
            stats: dict[str, list] = {}
            for repeat in range(args.runs):  # the engines alternate, run by run
                for engine in engines:
                    seconds, digest, results = timed_decode(decoders[engine], sentences, args, lattices,
                                                            f"{engine} stack {stack}{' +lattices' if lattices else ''}")
                    timed[engine].append(seconds)
                    digests[engine].add(digest)
                    stats[engine] = results
            for engine in engines:
                seconds = statistics.median(timed[engine])
                results = stats[engine]
                run = {"engine": engine, "stack_limit": stack, "lattices": lattices, "seconds": round(seconds, 3),
                       "runs_seconds": [round(t, 3) for t in timed[engine]],
                       "words_per_minute": round(60 * words / seconds, 1),
                       "hypotheses_per_word": round(sum(r.stats.get("hypotheses", 0) for r in results) / words, 2),
                       "outputs_sha256": sorted(digests[engine])}
                if lattices:
                    run["states_per_word"] = round(sum(r.lattice_states for r in results) / words, 2)
                    run["arcs_per_word"] = round(sum(r.lattice_arcs for r in results) / words, 2)
                runs.append(run)
                print(f"{engine} stack {stack} lattices={lattices}: {run['words_per_minute']:.0f} wpm",
                      file=sys.stderr)
            identical = len(set().union(*digests.values())) == 1
            for run in runs[-len(engines):]:
                run["identical_across_engines"] = identical
    summary = {
        "benchmark": "pbmt_decode", "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "task": args.task, "profile": args.profile, "input": str(paths["input"]), "sentences": len(sentences),
        "source_words": words, "processes": args.processes, "runs": args.runs, "engines": engines, "distortion_limit": settings.distortion_limit,
        "beam_threshold": settings.beam_threshold, "options_per_phrase": settings.options_per_phrase,
        "nbest": args.nbest, "weights": "MERT" if paths["weights"] else "Moses defaults",
        "filtered_phrase_pairs": len(table), "load_seconds": round(load_seconds, 3), "results": runs,
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine(), "python": platform.python_version(),
                    "load_average": os.getloadavg()},
        "reference": "Moses (2 processes, same data and machine kind): 12,282 wpm at stack 200 without its "
                     "search graph, about 6,700 wpm with -output-search-graph",
    }
    header = (f"{'engine':>8} {'stack':>6} {'lattices':>8} {'seconds':>8} {'wpm':>8} {'hyps/word':>9} {'states/word':>11} "
              f"{'arcs/word':>9}")
    print(f"{len(sentences)} sentences, {words} source words, {args.processes} processes, distortion limit "
          f"{settings.distortion_limit}, beam threshold {settings.beam_threshold}, "
          f"{settings.options_per_phrase} options per phrase")
    print(header)
    for r in runs:
        print(f"{r['engine']:>8} {r['stack_limit']:>6} {str(r['lattices']):>8} {r['seconds']:>8.2f} {r['words_per_minute']:>8.0f} "
              f"{r['hypotheses_per_word']:>9.1f} {r.get('states_per_word', float('nan')):>11.1f} "
              f"{r.get('arcs_per_word', float('nan')):>9.1f}")
    write_json(args.out, summary)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
