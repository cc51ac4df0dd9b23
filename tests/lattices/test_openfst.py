"""The OpenFst engine against the exact float64 engine and against path enumeration."""
import math
import random

import pytest

from lattices.evidence import evidence_space, nbest_strings
from lattices.lattice import Lattice, from_paths
from lattices.openfst import openfst_best_strings
from lattices.posteriors import forward_posteriors, ngram_posteriors, string_posteriors
from tests.lattices.helpers import assert_close, brute_force, fst_paths, random_fst


def _distinct_costs(strings, gap=1e-4) -> bool:
    costs = sorted(c for _, c in strings)
    return all(b - a > gap for a, b in zip(costs, costs[1:]))


@pytest.mark.parametrize("semiring", ["tropical", "log"])
def test_openfst_posteriors_agree_with_brute_force_to_float32_precision(semiring):
    rng = random.Random(21 if semiring == "log" else 22)
    for trial in range(40):
        fst = random_fst(rng, states=rng.randint(3, 11), alphabet=rng.randint(2, 5))
        paths = fst_paths(fst)
        alpha = rng.choice([1.0, 0.3, 2.5])
        got = ngram_posteriors(Lattice.from_fst(fst), 4, alpha, semiring, engine="openfst").as_dict()
        assert_close(got, brute_force(paths, 4, alpha, semiring), 1e-5)


@pytest.mark.parametrize("semiring", ["tropical", "log"])
def test_openfst_nbest_strings_are_the_exact_engines(semiring):
    rng = random.Random(5)
    compared = 0
    for trial in range(40):
        lattice = Lattice.from_fst(random_fst(rng, states=rng.randint(4, 9), alphabet=3))
        k = rng.randint(1, 8)
        exact = nbest_strings(lattice, k, semiring, 0.8)
        fast = openfst_best_strings(lattice.scaled(0.8), k, semiring)
        if not _distinct_costs(exact):  # near ties may be ranked either way in float32
            continue
        compared += 1
        assert [s for s, _ in fast] == [s for s, _ in exact]
        assert [c for _, c in fast] == pytest.approx([c for _, c in exact], rel=1e-6, abs=1e-6)
    assert compared > 20


def test_openfst_full_evidence_space_is_deterministic_with_the_best_derivations():
    rng = random.Random(3)
    for trial in range(20):
        lattice = Lattice.from_fst(random_fst(rng, states=rng.randint(3, 9), alphabet=3))
        fast = evidence_space(lattice, "tropical", 1.0, engine="openfst")
        exact = dict(evidence_space(lattice, "tropical", 1.0).paths())
        got = list(fast.paths())
        assert (fast.label != 0).all() and len(got) == len({s for s, _ in got}) == len(exact)
        for string, cost in got:
            assert cost == pytest.approx(exact[string], abs=1e-5)


def test_string_posteriors_equal_the_forward_algorithm_on_the_prefix_tree():
    rng = random.Random(9)
    for trial in range(30):
        strings = {tuple(rng.randint(4, 7) for _ in range(rng.randint(0, 6))): rng.uniform(0, 5) for _ in range(8)}
        items = list(strings.items())
        assert_close(string_posteriors(items, 3).as_dict(), forward_posteriors(from_paths(items), 3).as_dict(), 1e-12)


def test_an_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="unknown engine"):
        ngram_posteriors(Lattice.from_arcs(2, 0, [(0, 1, 4, 0.0)], {1: 0.0}), nbest=2, engine="fast")


def test_string_posteriors_renumber_huge_token_ids():
    strings = [((10 ** 9, 7, 10 ** 9), 0.0), ((7,), 1.0)]
    got = string_posteriors(strings, 4).as_dict()
    p = 1 / (1 + math.exp(-1.0))
    assert got[(7,)] == pytest.approx(1.0) and got[(10 ** 9, 7, 10 ** 9)] == pytest.approx(p)
    assert got[(10 ** 9,)] == pytest.approx(p) and len(got) == 5


def test_string_posteriors_with_too_many_types_for_integer_keys_give_the_same_sums():
    rng = random.Random(4)
    many = [(tuple(rng.randrange(4, 70000) for _ in range(40)), rng.uniform(0, 3)) for _ in range(500)]
    few = [(s, c) for s, c in many[:50]]
    small = [(tuple(4 + x % 5 for x in s), c) for s, c in few]
    small = list(dict(small).items())
    assert len(many) * (len({x for s, _ in many for x in s}) + 1) ** 4 >= 2 ** 62  # the fallback is exercised
    assert_close(string_posteriors(many, 4).as_dict(), forward_posteriors(from_paths(many), 4).as_dict(), 1e-12)
    assert_close(string_posteriors(small, 4).as_dict(), forward_posteriors(from_paths(small), 4).as_dict(), 1e-12)
