import random

import numpy as np
import pytest

from lattices.lattice import Lattice
from lattices.lmatrix import build_lmatrix
from lattices.posteriors import ngram_posteriors
from lattices.row_automaton import RowAutomaton
from lattices.theta import Theta
from tests.lattices.helpers import random_fst

THETA = Theta.from_precisions([60.0, 40.0, 30.0, 20.0])


def longest_row_suffix(history, rows, max_history):
    tail = tuple(history[-max_history:]) if max_history else ()
    for j in range(len(tail), -1, -1):
        if tail[len(tail) - j:] in rows:
            return tail[len(tail) - j:]
    raise AssertionError("the empty history is always a row")


def direct_row(history, post, tokens, vocab_size, order):
    """Theta_0 + sum_n Theta_n p(last n-1 tokens of the history . y), straight from the posteriors."""
    row = np.full(vocab_size, THETA.values[0])
    for y in tokens:
        for n in range(1, order + 1):
            if len(history) >= n - 1:
                ctx = tuple(history[len(history) - (n - 1):]) if n > 1 else ()
                row[y] += THETA.values[n] * post.get(ctx + (y,), 0.0)
    return row


@pytest.mark.parametrize("order", [4, 2, 1])
def test_row_lookup_equals_direct_sum_over_suffixes_for_random_histories(order):
    rng = random.Random(order)
    vocab_size = 12
    for trial in range(15):
        lattice = Lattice.from_fst(random_fst(rng, states=rng.randint(4, 10), alphabet=5))
        posteriors = ngram_posteriors(lattice, order, 1.0)
        post = posteriors.as_dict()
        L = build_lmatrix(posteriors, THETA, vocab_size)
        auto = L.automaton
        rows = set(auto.histories)
        tokens = sorted({g[0] for g in post})
        for _ in range(40):
            history = [rng.randint(1, 7) for _ in range(rng.randint(0, 8))]  # 6, 7 never occur in a lattice
            row = auto.row_of(history)
            assert auto.histories[row] == longest_row_suffix(history, rows, order - 1)
            np.testing.assert_allclose(L.dense_rows([row])[0], direct_row(history, post, tokens, vocab_size, order),
                                       rtol=1e-6, atol=1e-6)


def test_vectorised_next_rows_equal_the_scalar_lookup_and_unknown_tokens_reset():
    auto = RowAutomaton.build([(1,), (2,), (1, 2), (2, 1), (1, 2, 1), (2, 1, 2)], 3)
    r12 = auto.row_of([1, 2])
    assert auto.histories[r12] == (1, 2)
    assert auto.histories[auto.next_row(r12, 1)] == (1, 2, 1)
    assert auto.histories[auto.row_of([1, 2, 1, 2])] == (2, 1, 2)
    assert auto.next_row(r12, 9) == 0
    rows = np.arange(auto.num_rows).repeat(4)
    tokens = np.tile([1, 2, 3, 9], auto.num_rows)
    expected = [auto.next_row(r, y) for r, y in zip(rows.tolist(), tokens.tolist())]
    assert auto.next_rows(rows, tokens).tolist() == expected


def test_rows_must_come_from_one_lattice():
    with pytest.raises(ValueError, match="prefix or suffix"):
        RowAutomaton.build([(1,), (1, 2)], 3)
