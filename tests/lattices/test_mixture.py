"""Mixed evidence: the n-gram posteriors of a mixture of two string distributions against enumeration, and the L
matrices of the mixed store against L built from those posteriors."""
from __future__ import annotations

import random

import numpy as np
import pytest

from lattices.lmatrix import build_lmatrix
from lattices.mixture import MixedEvidenceStore, mix_posteriors
from lattices.posteriors import sample_posteriors
from lattices.theta import Theta


def random_strings(rng: random.Random, n: int) -> list[tuple[int, ...]]:
    return [tuple(rng.randint(4, 9) for _ in range(rng.randint(1, 6))) for _ in range(n)]


def enumerated(distribution: dict[tuple[int, ...], float], order: int) -> dict[tuple[int, ...], float]:
    """p(u) = sum of P(s) over the strings s that contain u, by brute force."""
    found: dict[tuple[int, ...], float] = {}
    for string, p in distribution.items():
        grams = {string[i:i + n] for n in range(1, order + 1) for i in range(len(string) - n + 1)}
        for gram in grams:
            found[gram] = found.get(gram, 0.0) + p
    return found


def shares(strings: list[tuple[int, ...]]) -> dict[tuple[int, ...], float]:
    out: dict[tuple[int, ...], float] = {}
    for s in strings:
        out[s] = out.get(s, 0.0) + 1.0 / len(strings)
    return out


@pytest.mark.parametrize("weight", [0.0, 0.3, 1.0])
def test_the_mixtures_posteriors_are_those_of_the_mixed_distribution(weight):
    rng = random.Random(5)
    first, second = random_strings(rng, 12), random_strings(rng, 9)
    mixed = mix_posteriors(sample_posteriors(first, order=3), sample_posteriors(second, order=3), weight)
    distribution = {s: weight * shares(first).get(s, 0.0) + (1 - weight) * shares(second).get(s, 0.0)
                    for s in set(first) | set(second)}
    expected = {g: p for g, p in enumerated(distribution, 3).items() if p > 0}
    got = {g: p for g, p in mixed.as_dict().items() if p > 0}
    assert got.keys() == expected.keys()
    assert all(abs(got[g] - expected[g]) < 1e-12 for g in expected)
    assert list(mixed.lengths) == sorted(mixed.lengths)  # by order, then by tokens, as an evidence space's


def test_a_weight_outside_zero_one_is_refused():
    posteriors = sample_posteriors([(4, 5)], order=2)
    with pytest.raises(ValueError, match="mixture weight"):
        mix_posteriors(posteriors, posteriors, 1.5)


class Store:
    """A lattice store of fixed L matrices, counting its reads."""

    def __init__(self, matrices):
        self.matrices, self.reads = matrices, 0

    def get(self, sentences):
        self.reads += 1
        return [self.matrices[s] for s in sentences]

    def __contains__(self, sentence):
        return sentence in self.matrices


def test_the_stores_l_is_built_from_the_mixed_posteriors_and_weight_zero_never_reads_the_lattice():
    rng = random.Random(9)
    theta = Theta.from_p_r(0.6, 0.7)
    lattice_strings = {s: random_strings(rng, 10) for s in (3, 4)}
    lattices = Store({s: build_lmatrix(sample_posteriors(strings, order=4), theta, 12, s)
                      for s, strings in lattice_strings.items()})
    samples = {s: sample_posteriors(random_strings(rng, 16), order=4) for s in (3, 4)}
    for weight in (0.0, 0.5):
        store = MixedEvidenceStore(lattices, samples, weight, theta, 12)
        got = store.get([4, 3])
        for m, sentence in zip(got, (4, 3)):
            evidence = mix_posteriors(lattices.matrices[sentence].posteriors, samples[sentence], weight)
            want = build_lmatrix(evidence, theta, 12, sentence)
            assert m.sentence == sentence
            np.testing.assert_array_equal(m.uni_tokens, want.uni_tokens)
            np.testing.assert_array_equal(m.uni_values, want.uni_values)
            np.testing.assert_array_equal(m.hi_tokens, want.hi_tokens)
            np.testing.assert_array_equal(m.hi_values, want.hi_values)
    assert lattices.reads == 1  # only the weight 0.5 read the lattices
    with pytest.raises(KeyError):
        MixedEvidenceStore(lattices, samples, 0.0, theta, 12).get([7])
