"""How often a tuning grid's choice repeats when its tuning sentences are drawn again (bootstrap resampling).

A grid's choice is the point of highest corpus BLEU on the tuning sentences. Drawing as many sentences again with
replacement and choosing again, many times, gives each point's share of the choices: a choice that the resamples
repeat is one that another draw of tuning data from the same source would repeat. Each resample's BLEU is summed from
the per-sentence n-gram statistics (sacrebleu's, the same as its paired bootstrap), so a point costs one tokenization
of its outputs, not one per resample.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from sacrebleu.metrics import BLEU

from pipeline.evaluation.bleu import bleu_tokenizer


def bleu_metric(target_lang: str) -> BLEU:
    """The cased corpus BLEU of pipeline/evaluation/bleu.py for the target language."""
    return BLEU(tokenize=bleu_tokenizer(target_lang), lowercase=False)


def sentence_statistics(hypotheses: Sequence[str], references: Sequence[str], target_lang: str) -> np.ndarray:
    """sacrebleu's BLEU statistics of each sentence: [sentences, 2 + 2 * 4] (lengths, then matches and totals)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    return np.asarray(bleu_metric(target_lang)._extract_corpus_statistics(list(hypotheses), [list(references)]),
                      dtype=np.int64)


def bleu_of_statistics(statistics: np.ndarray, target_lang: str | BLEU) -> float:
    """The corpus BLEU of summed statistics ([2 + 2 * 4]), as sacrebleu computes it (the language's metric, or the
    metric itself when it is at hand)."""
    metric = target_lang if isinstance(target_lang, BLEU) else bleu_metric(target_lang)
    return float(metric._compute_score_from_stats(statistics.tolist()).score)


def choice_shares(outputs: Sequence[Sequence[str]], references: Sequence[str], target_lang: str,
                  samples: int = 1000, seed: int = 12345) -> tuple[list[float], int]:
    """Each grid point's share of the choices over `samples` bootstrap resamples of the tuning sentences, and the
    point chosen on the sentences as they are.

    outputs[i] are point i's outputs of the tuning sentences (in grid order, each as many as there are references).
    The best BLEU wins and a tie goes to the earlier point, as the tuning's own choice (lmbr_tuning.choose, tie 0).
    """
    if not outputs:
        raise ValueError("no grid points")
    statistics = np.stack([sentence_statistics(texts, references, target_lang) for texts in outputs])
    metric = bleu_metric(target_lang)  # one for every resample
    chosen_as_is = _best([bleu_of_statistics(s.sum(axis=0), metric) for s in statistics])
    rng = np.random.default_rng(seed)
    counts = np.zeros(len(outputs), dtype=np.int64)
    for _ in range(samples):
        drawn = rng.integers(0, len(references), size=len(references))
        summed = statistics[:, drawn].sum(axis=1)  # [points, 2 + 2 * 4]
        counts[_best([bleu_of_statistics(row, metric) for row in summed])] += 1
    return (counts / samples).tolist(), chosen_as_is


def _best(scores: Sequence[float]) -> int:
    """The index of the highest score, the first of equal ones."""
    return max(range(len(scores)), key=lambda i: (scores[i], -i))
