"""Pairwise utilities for minimum Bayes-risk selection over a set of translations: sentence BLEU and chrF of every
candidate against every pseudo-reference, exactly as sacrebleu's `sentence_bleu` and `sentence_chrf` score one pair.

    u = bleu_matrix(candidates, samples, tokenize="13a")    # [H, R] float64, u[h, r] = sentence BLEU of h against r
    u = chrf_matrix(candidates, samples)                    # [H, R] chrF2 (char order 6, beta 2)
    c = chrf_aggregate(candidates, samples)                 # [H] chrF against the samples' mean n-gram counts

A pair costs sacrebleu's tokenization and n-gram extraction of both sentences; here every sentence is tokenized and
counted once, so the H x R pairs only intersect counters, and the scores come from sacrebleu's own formulas
(`BLEU.compute_bleu` with exp smoothing and effective order; `CHRF._compute_f_score`). tests/pipeline/mbr checks
every entry against sacrebleu's sentence scores.

Why no MBR library: `mbrs` does not resolve beside this project's pins (pip's dry run: its unbabel-comet needs
huggingface-hub < 1.0, the pin is 2.4.0), and the metrics it would add (COMET, BLEURT, BERTScore) are not what the
rows use; `fastchrf` resolves, but the sums here are sacrebleu's own, so every utility is the score Table 1's metrics
give the pair, with nothing more to install.

`chrf_aggregate` is reference aggregation (Vamvas and Sennrich 2024): the pseudo-references' n-gram counts are
averaged into one reference, and each candidate is scored once against it, so the cost is linear in the references.
It is not the mean of the pairwise chrF; it is the chrF against the averaged counts (fractional counts allowed).
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.metrics.helpers import extract_all_char_ngrams, extract_all_word_ngrams

__all__ = ["UTILITIES", "bleu_matrix", "chrf_aggregate", "chrf_matrix", "utility_matrix"]

MAX_ORDER = 4  # BLEU's n-gram orders


def _bleu_counts(metric: BLEU, sentences: Sequence[str]) -> list[tuple[Counter, int]]:
    """Each sentence tokenized as sentence_bleu does: (its word n-gram counts of orders 1-4, its length)."""
    return [extract_all_word_ngrams(metric._preprocess_segment(s), 1, MAX_ORDER) for s in sentences]


def bleu_matrix(candidates: Sequence[str], references: Sequence[str], tokenize: str = "13a") -> np.ndarray:
    """[H, R] sentence BLEU (0-100) of each candidate against each reference, as
    sacrebleu.sentence_bleu(candidate, [reference], tokenize=tokenize)."""
    metric = BLEU(tokenize=tokenize, effective_order=True)
    hyps, refs = _bleu_counts(metric, candidates), _bleu_counts(metric, references)
    out = np.zeros((len(hyps), len(refs)), dtype=np.float64)
    for i, (h_ngrams, h_len) in enumerate(hyps):
        total = [0] * MAX_ORDER
        for ngram, count in h_ngrams.items():
            total[len(ngram) - 1] += count
        for j, (r_ngrams, r_len) in enumerate(refs):
            correct = [0] * MAX_ORDER
            for ngram, count in h_ngrams.items():
                if ngram in r_ngrams:
                    correct[len(ngram) - 1] += min(count, r_ngrams[ngram])
            out[i, j] = BLEU.compute_bleu(correct, total, h_len, r_len, smooth_method="exp",
                                          effective_order=True, max_ngram_order=MAX_ORDER).score
    return out


def _chrf_counts(metric: CHRF, sentences: Sequence[str]) -> list[list[Counter]]:
    return [extract_all_char_ngrams(metric._preprocess_segment(s), metric.char_order, metric.whitespace)
            for s in sentences]


def _chrf_stats(hyp: list[Counter], ref: list[Counter] | list[dict[str, float]]) -> list[float]:
    """[hyp count, ref count, match] per order, as CHRF._get_match_statistics (a reference may hold mean counts)."""
    stats: list[float] = []
    for h, r in zip(hyp, ref):
        match = sum(min(count, r[ngram]) for ngram, count in h.items() if ngram in r)
        stats += [sum(h.values()) if r else 0, sum(r.values()), match]
    return stats


def chrf_matrix(candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """[H, R] chrF2 (char order 6, no word n-grams, beta 2) of each candidate against each reference, as
    sacrebleu.sentence_chrf(candidate, [reference])."""
    metric = CHRF()
    hyps, refs = _chrf_counts(metric, candidates), _chrf_counts(metric, references)
    return np.array([[metric._compute_f_score(_chrf_stats(h, r)) for r in refs] for h in hyps],
                    dtype=np.float64).reshape(len(hyps), len(refs))


def chrf_aggregate(candidates: Sequence[str], references: Sequence[str],
                   weights: Sequence[float] | None = None) -> np.ndarray:
    """[H] chrF2 of each candidate against the references' (weighted) mean n-gram counts, per order."""
    metric = CHRF()
    refs = _chrf_counts(metric, references)
    w = np.full(len(refs), 1.0 / len(refs)) if weights is None else np.asarray(weights, dtype=np.float64)
    mean: list[dict] = [{} for _ in range(metric.char_order)]
    for weight, ref in zip(w, refs):
        for order, counts in enumerate(ref):
            for ngram, count in counts.items():
                mean[order][ngram] = mean[order].get(ngram, 0.0) + weight * count
    return np.array([metric._compute_f_score(_chrf_stats(h, mean)) for h in _chrf_counts(metric, candidates)],
                    dtype=np.float64)


#: The utilities MBR selection may use, by name: [H, R] matrices of candidates against pseudo-references.
UTILITIES = {"bleu": bleu_matrix, "chrf": chrf_matrix}


def utility_matrix(name: str, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """[H, R] utilities of the named kind (UTILITIES); ValueError naming the known ones for another name."""
    if name not in UTILITIES:
        raise ValueError(f"unknown MBR utility {name!r} (known: {', '.join(UTILITIES)})")
    return UTILITIES[name](candidates, references)
