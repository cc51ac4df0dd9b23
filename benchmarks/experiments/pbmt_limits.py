"""Benchmark: PBMT search limits against speed and BLEU on held-out tuning sentences (how the accelerated system's
limits are chosen; paper, section 4.3: "tuned PBMT limits").

Every combination of stack limit, distortion limit and options per source phrase decodes the same sentences of the
task's tuning split, writing lattices as the pipeline does, in one process. Sentences are taken after the first
``--skip`` (MERT tunes its weights on the first 500), so the limits are chosen on lines the weights never saw.
BLEU is on the tokenized, truecased words against the tuning references (sacrebleu, tokenize none): a comparison
between limits, not the cased detokenized BLEU of the tables. The suggested limits are the fastest whose BLEU is
within ``--tolerance`` of the profile's own limits.

    .venv/bin/python benchmarks/experiments/pbmt_limits.py --task eng-ger --work-dir work --stacks 50,20,10,5 \\
        --distortions 6,4,3 --options 20,10,5
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import kenlm  # noqa: E402
import sacrebleu  # noqa: E402

from common import REPO, artifact_arguments, machine, pbmt_inputs  # noqa: E402
from pipeline.config import load_profile, load_task  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from pipeline.smt.decoder import Decoder, DecoderSettings  # noqa: E402
from pipeline.smt.features import Weights  # noqa: E402
from pipeline.smt.parallel import Job, decode_all  # noqa: E402
from pipeline.smt.phrase_table import FastPhraseTable  # noqa: E402
from pipeline.smt.weights import load_weights  # noqa: E402


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def decode_seconds(decoder: Decoder, sentences: list[list[str]], runs: int) -> tuple[float, list[str]]:
    """Median seconds of `runs` decodings (lattices written to a temporary folder) and the 1-best lines."""
    times, lines = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="pbmt-limits-") as tmp:
            started = time.perf_counter()
            results = decode_all(Job(decoder, sentences, lattice_dir=Path(tmp)), 1, desc="pbmt")
            times.append(time.perf_counter() - started)
        lines = [" ".join(r.best.words) for r in results]
    return statistics.median(times), lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    artifact_arguments(p, "eng-ger")
    p.add_argument("--skip", type=int, default=500, help="leave out the first N tuning sentences (MERT's)")
    p.add_argument("--sentences", type=int, default=300)
    p.add_argument("--stacks", default="50,20,10,5")
    p.add_argument("--distortions", default="6,4,3")
    p.add_argument("--options", default="20,10,5")
    p.add_argument("--runs", type=int, default=1, help="timed decodings per combination (median)")
    p.add_argument("--build", action="store_true", help="build the phrase table, LM and MERT weights first")
    p.add_argument("--tolerance", type=float, default=0.5, help="BLEU the suggestion may lose")
    p.add_argument("--out", type=Path, default=REPO / "results/benchmarks-local/pbmt_limits.json")
    args = p.parse_args(argv)
    args.table = args.lm = args.weights = args.input = None
    args.split, args.build_weights = "", True

    profile = load_profile(args.profile, args.config_dir)
    config = profile.pbmt
    paths = pbmt_inputs(args)
    target = load_task(args.task, args.config_dir).target
    window = slice(args.skip, args.skip + args.sentences)
    sentences = [line.split() for line in read_lines(paths["input"])][window]
    references = list(read_lines(Path(paths["input"]).parent / f"words.{target}.gz"))[window]
    words = sum(map(len, sentences))
    table = FastPhraseTable.load(paths["table"]).filter(sentences)
    lm = kenlm.Model(str(paths["lm"]))
    weights = load_weights(paths["weights"]).weights if paths["weights"] else Weights.default(table.reordering)

    grid = list(itertools.product(ints(args.stacks), ints(args.distortions), ints(args.options)))
    own = (config.stack_limit, config.distortion_limit, config.options_per_phrase)
    if own not in grid:
        grid.insert(0, own)
    rows = []
    for stack, distortion, options in grid:
        settings = DecoderSettings(stack_limit=stack, beam_threshold=config.beam_threshold,
                                   distortion_limit=distortion, options_per_phrase=options)
        seconds, lines = decode_seconds(Decoder(table, lm, weights, settings), sentences, args.runs)
        bleu = sacrebleu.corpus_bleu(lines, [references], tokenize="none", force=True).score
        rows.append({"stack_limit": stack, "distortion_limit": distortion, "options_per_phrase": options,
                     "seconds": round(seconds, 3), "words_per_minute": round(60 * words / seconds, 1),
                     "bleu": round(bleu, 2)})
        print(f"stack {stack:>3} distortion {distortion} options {options:>2}: {seconds:6.2f} s "
              f"{60 * words / seconds:8.0f} wpm  BLEU {bleu:5.2f}", flush=True)
    base = next(r for r in rows if (r["stack_limit"], r["distortion_limit"], r["options_per_phrase"]) == own)
    eligible = [r for r in rows if r["bleu"] >= base["bleu"] - args.tolerance]
    fastest = max(eligible, key=lambda r: r["words_per_minute"])
    print(f"profile's limits {own}: BLEU {base['bleu']}, {base['words_per_minute']:.0f} wpm; fastest within "
          f"{args.tolerance} BLEU: stack {fastest['stack_limit']}, distortion {fastest['distortion_limit']}, "
          f"options {fastest['options_per_phrase']}: BLEU {fastest['bleu']}, {fastest['words_per_minute']:.0f} wpm "
          f"({fastest['words_per_minute'] / base['words_per_minute']:.2f}x)")
    write_json(args.out, {
        "benchmark": "pbmt_limits", "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "task": args.task, "profile": args.profile, "input": str(paths["input"]), "first_sentence": args.skip,
        "sentences": len(sentences), "source_words": words, "processes": 1, "runs": args.runs,
        "beam_threshold": config.beam_threshold, "bleu": "sacrebleu, tokenized truecased words, tokenize none",
        "profile_limits": base, "tolerance": args.tolerance, "suggested": fastest, "grid": rows,
        "machine": machine(1)})
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
