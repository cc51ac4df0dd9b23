import random

import pytest

from lattices.determinize import determinize
from lattices.lattice import Lattice
from tests.lattices.helpers import fst_paths, random_fst, string_costs


@pytest.mark.parametrize("semiring", ["tropical", "log"])
def test_determinisation_keeps_the_string_costs_and_is_deterministic(semiring):
    rng = random.Random(5)
    for trial in range(30):
        fst = random_fst(rng, states=rng.randint(3, 9), alphabet=3)
        det = determinize(Lattice.from_fst(fst), semiring)
        assert not (det.label == 0).any()
        pairs = list(zip(det.src.tolist(), det.label.tolist()))
        assert len(pairs) == len(set(pairs))
        got = dict(det.paths())
        assert len(got) == len(list(det.paths()))  # one path per string
        expected = string_costs(fst_paths(fst), 1.0, semiring)
        assert set(got) == set(expected)
        assert max(abs(got[s] - expected[s]) for s in expected) < 1e-9


def test_unknown_semiring_is_an_error():
    with pytest.raises(ValueError, match="semiring"):
        determinize(Lattice.from_arcs(2, 0, [(0, 1, 3, 0.0)], {1: 0.0}), "real")
