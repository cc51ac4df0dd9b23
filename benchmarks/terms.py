"""Benchmark: terminology constraints on a devtest set, with terms seeded from the reference.

For each sentence, up to --per-sentence terms are drawn (seeded) from the phrase pairs of the system's own PBMT
phrase table whose source side occurs in the source and whose target side occurs in the reference: the alignments
of the phrase table link them, as a customer's term base would. Kept: phrases of letters only, with a word of at
least 4 letters on each side, p(e|f) >= --min-probability, not overlapping another term of the sentence. Each
sentence gets its own terminology (Translator.translate_batch with per-line terms).

Reported, for every system given (the same terms for all): the share of terms in the output without and with the
constraints (a term counts when its words occur in the tokenized output, its first word capitalised or not), BLEU
without and with them (paired bootstrap, sacrebleu), and the words per minute of both runs (median of --runs,
side by side in one process). Prints a table and writes JSON.

    .venv/bin/python benchmarks/terms.py --systems DIR/FNMT,DIR/LNMT --source raw.en.gz --reference raw.de.gz \\
        --phrase-table DIR/LNMT/pbmt/phrase-table.npz --sentences 1000
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402


def seed_terms(table, source_words: list[str], reference_words: list[str], rng: random.Random, count: int,
               min_probability: float) -> list[tuple[str, str]]:
    """Up to `count` (source phrase, target phrase) pairs of the table found in the source and the reference."""
    import math

    def content(words: list[str]) -> bool:
        return all(w.isalpha() for w in words) and any(len(w) >= 4 for w in words)

    reference = " " + " ".join(reference_words) + " "
    candidates = []
    for n in range(1, min(3, table.max_length) + 1):
        for i in range(len(source_words) - n + 1):
            phrase = source_words[i:i + n]
            if not content(phrase):
                continue
            found = table.lookup(" ".join(phrase))
            for target, scores in zip(*found) if found else ():
                if content(target.split()) and f" {target} " in reference and \
                        math.exp(float(scores[2])) >= min_probability:
                    candidates.append((i, i + n, " ".join(phrase), target))
    rng.shuffle(candidates)
    chosen: list[tuple[int, int, str, str]] = []
    for start, end, source, target in candidates:
        if len(chosen) < count and all(end <= a or start >= b for a, b, _, _ in chosen) and \
                all(target != t for _, _, _, t in chosen):
            chosen.append((start, end, source, target))
    return [(source, target) for _, _, source, target in chosen]


def has_term(words: list[str], term: list[str]) -> bool:
    initial = [term[0][:1].upper() + term[0][1:], *term[1:]]
    return any(words[i:i + len(term)] in (term, initial) for i in range(len(words) - len(term) + 1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--systems", required=True, help="exported system folders, comma-separated (NMT systems)")
    p.add_argument("--source", required=True, help="raw source sentences (.gz allowed)")
    p.add_argument("--reference", required=True, help="raw references, line-aligned with --source")
    p.add_argument("--phrase-table", required=True, help="a PBMT phrase table in the fast form (pbmt/ of a hybrid)")
    p.add_argument("--sentences", type=int, default=1000)
    p.add_argument("--per-sentence", type=int, default=2, help="terms per sentence (at most)")
    p.add_argument("--min-probability", type=float, default=0.1, help="p(e|f) of a seeded term (at least)")
    p.add_argument("--runs", type=int, default=3, help="timed runs of each side (median)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default="results/benchmarks-local/terms.json")
    args = p.parse_args(argv)

    import torch

    from pipeline.deploy.system import load_system
    from pipeline.deploy.terms import Terminology
    from pipeline.deploy.translator import Translator
    from pipeline.evaluation.bleu import corpus_bleu
    from pipeline.evaluation.significance import paired_bootstrap
    from pipeline.smt.phrase_table import FastPhraseTable

    torch.set_num_threads(args.threads)
    sources = list(read_lines(Path(args.source)))[:args.sentences]
    references = list(read_lines(Path(args.reference)))[:len(sources)]
    table = FastPhraseTable.load(Path(args.phrase_table))
    report: dict = {"machine": machine(args.threads), "sentences": len(sources), "systems": []}
    rng = random.Random(args.seed)
    for folder in args.systems.split(","):
        system = load_system(Path(folder))
        plain_translator = Translator(system)
        tokenize_source = plain_translator.source.tokenizer.tokenize
        tokenize_target = plain_translator.target.tokenizer.tokenize
        if "seeded" not in report:  # the same terms for every system
            report["seeded"] = [seed_terms(table, plain_translator.source.words(s),
                                           plain_translator.target.words(r), rng, args.per_sentence,
                                           args.min_probability) for s, r in zip(sources, references)]
        seeded = report["seeded"]
        terminologies = [Terminology([(s, t, f"sentence {k + 1}") for s, t in pairs], tokenize_source)
                         if pairs else None for k, pairs in enumerate(seeded)]

        def run(terms) -> tuple[list[str], float]:
            translator = Translator(system, terms=None)
            started = time.perf_counter()
            out: list[str] = []
            for a in range(0, len(sources), translator.batch_lines):
                out += translator.translate_batch(sources[a:a + translator.batch_lines],
                                                  terms[a:a + translator.batch_lines] if terms else None)
            return out, time.perf_counter() - started

        timings: dict[str, list[float]] = {"plain": [], "terms": []}
        outputs: dict[str, list[str]] = {}
        for _ in range(args.runs):  # side by side, alternating
            for side, terms in (("plain", None), ("terms", terminologies)):
                outputs[side], seconds = run(terms)
                timings[side].append(seconds)
        words = sum(len(s.split()) for s in sources)
        total = sum(len(pairs) for pairs in seeded)
        present = {side: sum(has_term(tokenize_target(out), tokenize_target(t)) for out, pairs in
                             zip(outputs[side], seeded) for _, t in pairs) for side in outputs}
        bleu = {side: corpus_bleu(outputs[side], references, system.target).score for side in outputs}
        test = paired_bootstrap(("plain", outputs["plain"]), [("terms", outputs["terms"])], references,
                                system.target)
        entry = {"system": system.name, "folder": folder, "terms": total,
                 "sentences_with_terms": sum(bool(pairs) for pairs in seeded),
                 "term_rate": {side: round(present[side] / max(total, 1), 4) for side in present},
                 "bleu": {side: round(score, 2) for side, score in bleu.items()},
                 "bleu_p_value": next(r["p_value"] for r in test if r["metric"] == "BLEU"),
                 "seconds_median": {side: round(statistics.median(v), 3) for side, v in timings.items()},
                 "seconds_runs": timings,
                 "words_per_minute": {side: round(60 * words / statistics.median(v), 1)
                                      for side, v in timings.items()}}
        entry["speed_cost"] = round(entry["seconds_median"]["terms"] / entry["seconds_median"]["plain"], 3)
        report["systems"].append(entry)
        print(f"{system.name}: {total} terms in {entry['sentences_with_terms']} of {len(sources)} sentences; terms "
              f"present {100 * entry['term_rate']['plain']:.1f}% -> {100 * entry['term_rate']['terms']:.1f}%; BLEU "
              f"{entry['bleu']['plain']:.2f} -> {entry['bleu']['terms']:.2f} (p {entry['bleu_p_value']:.3f}); "
              f"{entry['words_per_minute']['plain']:.0f} -> {entry['words_per_minute']['terms']:.0f} wpm "
              f"({entry['speed_cost']:.2f}x the time)", flush=True)
    write_json(Path(args.json), report)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
