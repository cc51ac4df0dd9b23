import random

import pynini
import pytest

from lattices.evidence import nbest_strings
from lattices.lattice import Lattice, from_paths
from tests.lattices.helpers import fst_paths, random_fst, string_costs, top_strings


@pytest.mark.parametrize("semiring", ["tropical", "log"])
def test_nbest_strings_are_the_top_k_unique_strings(semiring):
    rng = random.Random(6)
    for trial in range(30):
        fst = random_fst(rng, states=rng.randint(4, 9), alphabet=3)
        costs = string_costs(fst_paths(fst), 1.0, semiring)
        k = rng.randint(1, len(costs) + 2)
        got = nbest_strings(Lattice.from_fst(fst), k, semiring)
        assert [s for s, _ in got] == top_strings(costs, k)
        assert all(abs(c - costs[s]) < 1e-9 for s, c in got)


def test_nbest_strings_match_pynini_shortestpath_unique():
    rng = random.Random(9)
    compared = 0
    for trial in range(30):
        fst = random_fst(rng, states=rng.randint(4, 9), alphabet=3)
        costs = string_costs(fst_paths(fst), 1.0, "tropical")
        ranked = sorted(costs.values())
        k = min(5, len(ranked))
        if k < len(ranked) and ranked[k] - ranked[k - 1] < 1e-4:
            continue  # a near tie at the cut: float32 (pynini) and float64 may pick differently
        expected = {s for s, _ in fst_paths(pynini.shortestpath(fst.copy().rmepsilon(), nshortest=k, unique=True))}
        assert {s for s, _ in nbest_strings(Lattice.from_fst(fst), k)} == expected
        compared += 1
    assert compared > 20


def test_prefix_tree_of_strings():
    lat = from_paths([((1, 2), 0.5), ((1,), 1.0), ((), 2.0), ((3, 2), 0.25)])
    assert sorted(lat.paths()) == sorted([((1, 2), 0.5), ((1,), 1.0), ((), 2.0), ((3, 2), 0.25)])
    with pytest.raises(ValueError, match="duplicate"):
        from_paths([((1,), 0.0), ((1,), 1.0)])
