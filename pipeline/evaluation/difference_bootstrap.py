"""The BLEU difference of two systems on the same sentences, with a paired bootstrap interval.

sacrebleu's paired bootstrap gives each system's score with its own interval; a gain (LMBR over its NMT, an NMT over
the PBMT) needs the interval of the difference itself. Each resample draws the sentences with replacement, sums
both systems' per-sentence BLEU statistics over the same draw and takes the difference of their corpus BLEU; the
interval is the percentile interval of those differences, and the p-value the share of resamples whose difference
does not have the observed sign (a difference of 0 has p 1).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from pipeline.evaluation.choice_bootstrap import bleu_metric, bleu_of_statistics, sentence_statistics

SAMPLES, SEED = 1000, 12345


@dataclass(frozen=True)
class Difference:
    difference: float  # BLEU of the system minus BLEU of the baseline, on all the sentences
    low: float  # the percentile interval of the resamples' differences
    high: float
    p_value: float
    samples: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}


def resampled_differences(system: Sequence[str], baseline: Sequence[str], references: Sequence[str],
                          target_lang: str, samples: int = SAMPLES, seed: int = SEED) -> tuple[float, np.ndarray]:
    """(the difference on all sentences, the difference of each of `samples` resamples of the sentences)."""
    a = sentence_statistics(system, references, target_lang)
    b = sentence_statistics(baseline, references, target_lang)
    metric = bleu_metric(target_lang)
    observed = bleu_of_statistics(a.sum(axis=0), metric) - bleu_of_statistics(b.sum(axis=0), metric)
    rng = np.random.default_rng(seed)
    differences = np.empty(samples)
    for k in range(samples):
        drawn = rng.integers(0, len(references), size=len(references))
        differences[k] = (bleu_of_statistics(a[drawn].sum(axis=0), metric)
                          - bleu_of_statistics(b[drawn].sum(axis=0), metric))
    return observed, differences


def bleu_difference(system: Sequence[str], baseline: Sequence[str], references: Sequence[str], target_lang: str,
                    samples: int = SAMPLES, seed: int = SEED, confidence: float = 0.95) -> Difference:
    """The difference with its paired bootstrap interval and p-value (see the module docstring)."""
    observed, differences = resampled_differences(system, baseline, references, target_lang, samples, seed)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(differences, [tail, 100 - tail])
    if observed == 0:
        p_value = 1.0
    else:
        flipped = differences <= 0 if observed > 0 else differences >= 0
        p_value = (int(flipped.sum()) + 1) / (samples + 1)
    return Difference(float(observed), float(low), float(high), p_value, samples, confidence)
