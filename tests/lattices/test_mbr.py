"""Lattice MBR (lattices/mbr.py): the exact argmax of the linear gain over the evidence space, against enumeration."""
from __future__ import annotations

import random

import numpy as np
import pytest

from lattices.acceptor import Acceptor
from lattices.lmatrix import build_lmatrix
from lattices.mbr import lattice_mbr
from lattices.posteriors import NgramPosteriors
from lattices.theta import Theta

BOS, EOS, VOCAB = 1, 2, 8
THETA = Theta.from_precisions([60.0, 35.0, 21.0, 13.0], "plain")


def linear_gain(tokens, posteriors: dict, theta: Theta) -> float:
    """Tromble et al.: Theta_0 per token (EOS included) + Theta_|u| p(u) for every occurrence of u in <s> y </s>."""
    string = (BOS, *tokens, EOS)
    total = (len(tokens) + 1) * theta.values[0]
    for j in range(1, len(string)):
        for i in range(max(0, j - 3), j + 1):
            total += theta.values[j - i + 1] * posteriors.get(string[i:j + 1], 0.0)
    return total


@pytest.mark.parametrize("seed", range(8))
def test_the_mbr_string_is_the_best_of_all_accepted_strings(seed):
    rng = random.Random(seed)
    strings = sorted({tuple(rng.randint(3, 7) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 12))})
    grams = set()
    for s in strings:
        padded = (BOS, *s, EOS)
        grams.update(padded[i:i + n] for n in range(1, 5) for i in range(len(padded) - n + 1))
    ngrams = tuple(sorted(grams, key=lambda g: (len(g), g)))
    posteriors = NgramPosteriors.from_ngrams(ngrams, np.asarray([rng.uniform(0.01, 1.0) for _ in ngrams]), 4)
    matrix = build_lmatrix(posteriors, THETA, VOCAB)
    result = lattice_mbr(Acceptor.from_strings(strings), matrix, BOS, EOS)
    post = posteriors.as_dict()
    scored = sorted((linear_gain(s, post, THETA), s) for s in strings)
    assert result.gain == pytest.approx(scored[-1][0], abs=1e-4)
    assert linear_gain(result.tokens, post, THETA) == pytest.approx(scored[-1][0], abs=1e-4)
    assert result.tokens in strings


def test_nothing_accepted_gives_none():
    matrix = build_lmatrix(NgramPosteriors.from_ngrams(((3,),), np.asarray([0.5]), 1), THETA, VOCAB)
    assert lattice_mbr(Acceptor.empty(), matrix, BOS, EOS) is None


def test_an_unreachable_state_that_feeds_the_lattice_changes_nothing():
    """State 3 has no way in from the start but an arc into state 2: levels stay consistent, the answer exact."""
    acceptor = Acceptor.build(5, [(0, 3, 1), (1, 4, 2), (3, 5, 2), (2, 6, 4), (0, 7, 4)], [4])
    ngrams = ((3,), (4,), (6,), (7,), (3, 4), (4, 6))
    posteriors = NgramPosteriors.from_ngrams(ngrams, np.asarray([0.9, 0.8, 0.7, 0.1, 0.8, 0.6]), 4)
    matrix = build_lmatrix(posteriors, THETA, VOCAB)
    post = posteriors.as_dict()
    strings = [(3, 4, 6), (7,)]
    result = lattice_mbr(acceptor, matrix, BOS, EOS)
    assert result.tokens == max(strings, key=lambda s: linear_gain(s, post, THETA))
    assert result.gain == pytest.approx(linear_gain(result.tokens, post, THETA), abs=1e-4)
