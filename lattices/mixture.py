"""Evidence of two kinds for one sentence: the n-gram posteriors of the PBMT lattice and those of the NMT's own
samples, mixed, and the L matrices of the mixture.

    p(u) = w * p_lattice(u) + (1 - w) * p_samples(u)          w in [0, 1]

A mixture of two distributions over strings has, for every n-gram u, the posterior p(u) = sum_s P(s) [u in s], which
is linear in P: so the mixture's n-gram posteriors are the same mixture of the two sets of posteriors, over the union
of their n-grams. w = 1 is the lattice's L, w = 0 the samples' alone.

    store = MixedEvidenceStore(lattice_store, {sentence: sample_posteriors(...)}, weight=0.5, theta=theta,
                               vocab_size=V)
    store.get([3, 4])       # [LMatrix] of sentences 3 and 4 under the mixture (the LMBR hook's MatrixSource)
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from lattices.lmatrix import LMatrix, build_lmatrix
from lattices.posteriors import NgramPosteriors
from lattices.theta import Theta

__all__ = ["MixedEvidenceStore", "mix_posteriors"]


def mix_posteriors(first: NgramPosteriors, second: NgramPosteriors, weight: float) -> NgramPosteriors:
    """weight * first + (1 - weight) * second over the union of their n-grams (orders up to the larger order), by
    order, then by tokens, as the posteriors of one evidence space are."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"the mixture weight must be in [0, 1], not {weight}")
    mixed: dict[tuple[int, ...], float] = {}
    for posteriors, share in ((first, weight), (second, 1.0 - weight)):
        if share == 0.0:
            continue
        for gram, value in zip(posteriors.ngrams, posteriors.values.tolist()):
            mixed[gram] = mixed.get(gram, 0.0) + share * value
    order = max(first.order, second.order)
    grams = sorted(mixed, key=lambda g: (len(g), g))
    values = np.clip(np.array([mixed[g] for g in grams], dtype=np.float64), 0.0, 1.0)
    return NgramPosteriors.from_ngrams(grams, values, order, min(first.margin, second.margin))


class MixedEvidenceStore:
    """L matrices of the mixture of a lattice store's posteriors (anything with ``get(sentences)`` of LMatrix) and
    each sentence's sample posteriors, under `theta`. weight 0 never reads the lattice store."""

    def __init__(self, lattices, samples: Mapping[int, NgramPosteriors], weight: float, theta: Theta,
                 vocab_size: int) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"the mixture weight must be in [0, 1], not {weight}")
        self.lattices, self.samples, self.weight = lattices, samples, float(weight)
        self.theta, self.vocab_size = theta, int(vocab_size)

    def __contains__(self, sentence: int) -> bool:
        return sentence in self.samples and (self.weight == 0.0 or sentence in self.lattices)

    def get(self, sentences: Sequence[int]) -> list[LMatrix]:
        """L of the given sentences, in order (KeyError for a sentence without samples or, when w > 0, a lattice)."""
        sentences = [int(s) for s in sentences]
        for s in sentences:
            if s not in self.samples:
                raise KeyError(s)
        lattices = self.lattices.get(sentences) if self.weight > 0 else [None] * len(sentences)
        out = []
        for sentence, lattice in zip(sentences, lattices):
            evidence = self.samples[sentence]
            if lattice is not None:
                evidence = mix_posteriors(lattice.posteriors, evidence, self.weight)
            out.append(build_lmatrix(evidence, self.theta, self.vocab_size, sentence,
                                     {"evidence": "mixture", "weight": self.weight}))
        return out
