import random

import numpy as np

from lattices.lattice import Lattice
from lattices.lmatrix import build_lmatrix
from lattices.posteriors import ngram_posteriors
from lattices.theta import Theta
from tests.lattices.helpers import random_fst

THETA = Theta.from_precisions([60.0, 40.0, 30.0, 20.0])
VOCAB = 16


def random_lmatrix(rng: random.Random, sentence: int = 0, order: int = 4):
    lattice = Lattice.from_fst(random_fst(rng, states=rng.randint(4, 10), alphabet=6))
    return build_lmatrix(ngram_posteriors(lattice, order, 1.0), THETA, VOCAB, sentence)


def test_each_row_is_the_sum_of_its_terms():
    rng = random.Random(1)
    for trial in range(10):
        L = random_lmatrix(rng)
        post = L.posteriors.as_dict()
        dense = L.dense_rows(np.arange(L.num_rows))
        for r, h in enumerate(L.automaton.histories):
            expected = np.full(VOCAB, THETA.values[0])
            for y in range(VOCAB):
                for n in range(1, len(h) + 2):
                    ctx = h[len(h) - (n - 1):] if n > 1 else ()
                    expected[y] += THETA.values[n] * post.get(ctx + (y,), 0.0)
            np.testing.assert_allclose(dense[r], expected, rtol=1e-6, atol=1e-6)


def test_rows_are_the_histories_of_up_to_three_tokens_in_the_evidence():
    L = random_lmatrix(random.Random(2))
    grams = {g for g in L.posteriors.as_dict() if len(g) <= 3}
    assert L.automaton.histories[0] == () and set(L.automaton.histories[1:]) == grams
    # sparse: the stored part is far smaller than rows x vocabulary
    assert L.nnz < L.num_rows * VOCAB


def test_new_theta_without_recomputing_posteriors():
    L = random_lmatrix(random.Random(3))
    scaled = Theta.from_precisions([60.0, 40.0, 30.0, 20.0], "scaled", T=10)
    np.testing.assert_allclose(L.with_theta(scaled).dense_rows([0, 1]), L.dense_rows([0, 1]) / 10, rtol=1e-6)
