"""The compiled reading of n-shortest FSTs against pynini's own path iterator, bit for bit."""
import random

import numpy as np
import pynini
import pytest

from lattices.fst_binary import arrays_from_fst, standard_arrays
from lattices.lattice import Lattice
from lattices.openfst import openfst_best_paths, openfst_best_strings
from lattices.path_kernels import enumerate_paths
from lattices.posteriors import ngram_posteriors, string_posteriors
from tests.lattices.helpers import random_fst


def iterator_strings(fst: pynini.Fst) -> list[tuple[tuple[int, ...], float]]:
    """Every path of an acyclic FST through pynini's path iterator: labels without epsilons, cost as printed."""
    found = []
    paths = fst.paths()
    while not paths.done():
        found.append((tuple(x for x in paths.ilabels() if x), float(paths.weight().to_string())))
        paths.next()
    return found


def test_standard_arrays_read_the_fst_as_stored():
    rng = random.Random(4)
    for trial in range(20):
        fst = random_fst(rng, states=rng.randint(3, 12), alphabet=5)
        num_states, start, src, dst, label, cost, final = standard_arrays(fst)
        expected = arrays_from_fst(fst)
        assert (num_states, start) == expected[:2]
        for got, want in zip((src, dst, label, cost, final), (expected[2], expected[3], expected[4], expected[6],
                                                             expected[7])):
            assert np.array_equal(got.astype(np.float64), want)
        assert cost.dtype == final.dtype == np.float32


def test_enumerated_paths_are_the_iterators_with_the_same_float32_costs():
    rng = random.Random(11)
    for trial in range(60):
        fst = random_fst(rng, states=rng.randint(3, 10), alphabet=4, eps=0.3)  # epsilons on the paths
        tokens, offsets, costs, grams, prefix, last, gram_order = enumerate_paths(*standard_arrays(fst), 3)
        got = sorted((tuple(tokens[offsets[p]:offsets[p + 1]].tolist()), float(f"{costs[p]:.9g}"))
                     for p in range(costs.size))
        assert got == sorted(iterator_strings(fst))
        for p in range(costs.size):  # every n-gram id ending at a token spells the tokens before it
            path = tokens[offsets[p]:offsets[p + 1]].tolist()
            for t in range(len(path)):
                for n in range(3):
                    g = grams[offsets[p] + t, n]
                    if n + 1 > t + 1:
                        assert g == -1
                        continue
                    spelled = []
                    while g != -1:
                        spelled.insert(0, int(last[g]))
                        g = prefix[g]
                    assert spelled == path[t - n:t + 1] and gram_order[grams[offsets[p] + t, n]] == n + 1


@pytest.mark.parametrize("semiring", ["tropical", "log"])
def test_openfst_best_strings_are_the_path_iterators_bit_for_bit(semiring):
    rng = random.Random(7 if semiring == "log" else 8)
    for trial in range(40):
        lattice = Lattice.from_fst(random_fst(rng, states=rng.randint(3, 10), alphabet=3))
        k = rng.randint(1, 12)
        fst = lattice.to_fst("standard" if semiring == "tropical" else "log64")
        fst = pynini.rmepsilon(fst)
        if semiring == "tropical":
            best = pynini.shortestpath(fst, nshortest=k, unique=True)
        else:
            best = pynini.shortestpath(pynini.arcmap(pynini.determinize(fst, delta=1e-9), map_type="to_std"),
                                       nshortest=k)
        expected = sorted(iterator_strings(best), key=lambda sc: (sc[1], sc[0]))[:k]
        assert openfst_best_strings(lattice, k, semiring) == expected


@pytest.mark.parametrize("semiring", ["tropical", "log"])
def test_nbest_posteriors_from_the_fst_equal_the_direct_sum_over_strings_bit_for_bit(semiring):
    rng = random.Random(13)
    for trial in range(40):
        lattice = Lattice.from_fst(random_fst(rng, states=rng.randint(3, 12), alphabet=3))
        k, order, alpha = rng.randint(1, 30), rng.randint(1, 4), rng.choice([1.0, 0.4])
        got = ngram_posteriors(lattice, order, alpha, semiring, nbest=k, engine="openfst")
        expected = string_posteriors(openfst_best_strings(lattice.scaled(alpha), k, semiring), order)
        assert np.array_equal(got.tokens, expected.tokens)
        assert np.array_equal(got.values, expected.values)  # the same sums, added in the same order


def test_nbest_posteriors_of_an_empty_lattice_and_bad_arguments():
    empty = Lattice.empty()
    assert openfst_best_paths(empty, 5, "tropical", 4) is None
    assert ngram_posteriors(empty, 4, nbest=5, engine="openfst").values.size == 0
    lattice = Lattice.from_fst(random_fst(random.Random(1)))
    with pytest.raises(ValueError, match="n-best size must be positive"):
        openfst_best_paths(lattice, 0, "tropical", 4)
    with pytest.raises(ValueError, match="order must be at least 1"):
        ngram_posteriors(lattice, 0, nbest=3, engine="openfst")
    with pytest.raises(ValueError, match="unknown semiring"):
        ngram_posteriors(lattice, 4, nbest=3, semiring="real", engine="openfst")
