import math
import random

import numpy as np
import pytest

from lattices.lattice import Lattice
from lattices.posteriors import forward_posteriors, ngram_posteriors
from tests.lattices.helpers import (GOLDEN_ARCS, GOLDEN_FINAL, GOLDEN_POSTERIORS, assert_close, brute_force,
                                    fst_paths, make_fst, random_fst)


def golden_lattice(extra_arcs=()) -> Lattice:
    arcs = GOLDEN_ARCS + list(extra_arcs)
    return Lattice.from_arcs(1 + max(max(s, d) for s, d, _, _ in arcs), 0, arcs, {GOLDEN_FINAL: 0.0})


@pytest.mark.parametrize("semiring", ["tropical", "log"])
def test_golden_lattice_gives_the_published_posteriors(semiring):
    got = ngram_posteriors(golden_lattice(), order=4, alpha=1.0, semiring=semiring).as_dict()
    for ngram, expected in GOLDEN_POSTERIORS.items():
        assert got[ngram] == pytest.approx(expected, abs=1e-5)


def test_golden_lattice_with_a_repeated_ngram_counts_it_once_per_path():
    # a sixth path 1 933 150 24 150 2 (cost 37.654 + 1.5) reads "150" twice and "24 150" once
    lattice = golden_lattice([(4, 8, 24, 1.5), (8, 6, 150, 0.0)])
    costs = {(1, 933, 18, 24, 150, 2): 4.738, (1, 933, 150, 2): 0.0, (1, 933, 150, 23): 5.906,
             (1, 933, 226, 150, 2): 5.521, (1, 933, 508, 150, 2): 8.223, (1, 933, 150, 24, 150, 2): 1.5}
    weights = {s: math.exp(-c) for s, c in costs.items()}
    z = sum(weights.values())
    got = ngram_posteriors(lattice, order=4, alpha=1.0).as_dict()
    assert got[(150,)] == pytest.approx(1.0, abs=1e-12)  # not the expected count 1 + P(last path)
    assert got[(24, 150)] == pytest.approx((weights[(1, 933, 18, 24, 150, 2)] + weights[(1, 933, 150, 24, 150, 2)]) / z,
                                           abs=1e-12)
    assert got[(150, 2)] == pytest.approx(1 - weights[(1, 933, 150, 23)] / z, abs=1e-12)
    assert got[(150, 24, 150, 2)] == pytest.approx(weights[(1, 933, 150, 24, 150, 2)] / z, abs=1e-12)
    # and, with alpha = 0.5, equal to enumeration
    paths = [(s, 37.654 + c) for s, c in costs.items()]
    assert_close(ngram_posteriors(lattice, 4, 0.5).as_dict(), brute_force(paths, 4, 0.5), 1e-12)


@pytest.mark.parametrize("semiring", ["tropical", "log"])
def test_forward_algorithm_equals_brute_force_on_random_lattices(semiring):
    rng = random.Random(7 if semiring == "log" else 8)
    checked_duplicates = checked_repeats = 0
    for trial in range(60):
        fst = random_fst(rng, states=rng.randint(3, 11), alphabet=rng.randint(2, 5))
        paths = fst_paths(fst)
        strings = [s for s, _ in paths]
        checked_duplicates += len(set(strings)) < len(strings)
        checked_repeats += any(len(set(s)) < len(s) for s in strings)
        alpha = rng.choice([1.0, 0.3, 2.5])
        order = rng.randint(1, 4)
        got = ngram_posteriors(Lattice.from_fst(fst), order, alpha, semiring).as_dict()
        assert_close(got, brute_force(paths, order, alpha, semiring), 1e-9)
    assert checked_duplicates > 10 and checked_repeats > 10  # the cases that matter were exercised


@pytest.mark.parametrize("semiring", ["tropical", "log"])
def test_nbest_evidence_equals_brute_force_over_the_top_k_strings(semiring):
    rng = random.Random(11)
    for trial in range(40):
        fst = random_fst(rng, states=rng.randint(4, 9), alphabet=3)
        paths = fst_paths(fst)
        k = rng.randint(1, 6)
        got = ngram_posteriors(Lattice.from_fst(fst), 4, 0.8, semiring, nbest=k).as_dict()
        assert_close(got, brute_force(paths, 4, 0.8, semiring, nbest=k), 1e-9)


def test_semirings_differ_only_where_strings_have_several_derivations():
    # two derivations of "5 6" (costs 1 and 1), one of "5 7" (cost 1)
    arcs = [(0, 1, 5, 0.0), (1, 3, 6, 1.0), (0, 2, 5, 0.0), (2, 3, 6, 1.0), (1, 3, 7, 1.0)]
    lattice = Lattice.from_arcs(4, 0, arcs, {3: 0.0})
    trop = ngram_posteriors(lattice, 2, 1.0, "tropical").as_dict()
    log = ngram_posteriors(lattice, 2, 1.0, "log").as_dict()
    assert trop[(6,)] == pytest.approx(0.5) and log[(6,)] == pytest.approx(2 / 3)


def test_epsilons_and_final_costs_and_long_lattices_do_not_underflow():
    # 400 arcs of cost 5 (total 2000 nats: exp(-2000) underflows), two ways per step
    arcs = []
    for i in range(200):
        arcs += [(i, i + 1, 3 + i % 2, 5.0), (i, i + 1, 0, 5.0 + math.log(3))]
    lattice = Lattice.from_arcs(201, 0, arcs, {200: 0.0})
    p = forward_posteriors(lattice, 1).as_dict()
    assert p[(3,)] == pytest.approx(1 - 0.25 ** 100) and p[(4,)] == pytest.approx(1 - 0.25 ** 100)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_long_lattices_whose_ngrams_recur_far_apart_equal_brute_force(seed):
    # a chain of 11 steps with 2-3 parallel arcs each (epsilons too) over 4 tokens: every n-gram recurs along the
    # chain, so the forward pass opens, closes and reuses the slots of its windows many times
    rng = random.Random(seed)
    arcs, state = [], 0
    for _ in range(11):
        for _ in range(rng.randint(2, 3)):
            arcs.append((state, state + 1, rng.choice([0, 3, 4, 5, 6, 6]), rng.uniform(0.0, 2.0)))
        if rng.random() < 0.4:  # a two-arc detour beside the step
            arcs += [(state, 100 + state, rng.randint(3, 6), 0.5), (100 + state, state + 1, rng.randint(3, 6), 0.5)]
        state += 1
    lattice = Lattice.from_arcs(200, 0, arcs, {state: 0.0})
    paths = list(lattice.paths())
    for order in (1, 2, 4):
        assert_close(forward_posteriors(lattice, order).as_dict(), brute_force(paths, order, 1.0, "log"), 1e-12)


def test_empty_lattice_has_no_posteriors():
    assert len(ngram_posteriors(Lattice.empty())) == 0
    # a lattice whose only final state is unreachable is empty after trimming
    assert Lattice.from_arcs(3, 0, [(0, 1, 4, 0.0)], {2: 0.0}).num_states == 0


def test_dead_ends_contribute_no_ngrams():
    lattice = Lattice.from_fst(make_fst([(0, 1, 4, 0.0), (0, 2, 9, 0.0), (1, 3, 5, 0.0)], {3: 0.0}))
    assert set(ngram_posteriors(lattice, 2).as_dict()) == {(4,), (5,), (4, 5)}


def test_cyclic_lattice_is_rejected():
    with pytest.raises(ValueError, match="cyclic"):
        Lattice.from_arcs(2, 0, [(0, 1, 4, 0.0), (1, 0, 5, 0.0)], {1: 0.0})


def test_breadth_first_order_gives_the_numbering_orders_bits():
    # determinised lattices keep OpenFst's depth-first numbering, so the two orders visit the states differently;
    # the posteriors must still be equal to the last bit
    from lattices.compiled_determinize import tropical_determinize

    rng = random.Random(17)
    reordered = 0
    for trial in range(40):
        states = rng.randint(6, 30)
        arcs = [(i, i + 1, rng.randint(1, 4), rng.uniform(0.0, 3.0)) for i in range(states - 1)]
        arcs += [(i, rng.randrange(i + 1, states), rng.randint(1, 4), rng.uniform(0.0, 3.0))
                 for i in (rng.randrange(states - 1) for _ in range(2 * states))]
        lattice = tropical_determinize(Lattice.from_arcs(states, 0, arcs, {states - 1: 0.0}))
        depth = [0] * lattice.num_states
        for s, d in sorted(zip(lattice.src.tolist(), lattice.dst.tolist())):
            depth[d] = max(depth[d], depth[s] + 1)
        reordered += depth != sorted(depth)  # a state numbered after a deeper one: the orders differ
        for order in (2, 4):
            numbered = forward_posteriors(lattice, order, breadth_first=False)
            breadth = forward_posteriors(lattice, order, breadth_first=True)
            assert breadth.values.tobytes() == numbered.values.tobytes()
            assert (breadth.tokens == numbered.tokens).all()
    assert reordered > 10


@pytest.mark.parametrize("semiring", ["tropical", "log"])
def test_an_expansion_that_outgrows_its_first_arrays_equals_brute_force(semiring):
    # a sausage of 4 words at each of 6 positions: up to 64 histories per state, many more expanded states, arcs,
    # n-gram ids and n-grams than the kernel's first arrays hold, so it stops, grows them and resumes several times
    from lattices import posterior_kernels as kernels

    rng = random.Random(23)
    width, length = 4, 6
    arcs = [(k, k + 1, 1 + width * k + w, rng.uniform(0.0, 2.0)) for k in range(length) for w in range(width)]
    lattice = Lattice.from_arcs(length + 1, 0, arcs, {length: 0.0})
    out_ptr = np.searchsorted(lattice.src, np.arange(lattice.num_states + 1))
    orig, src, _, _, _, gram_ids, prefix, _, _ = kernels.expand(
        lattice.num_states, out_ptr, lattice.dst.astype(np.int64), lattice.label.astype(np.int64),
        lattice.cost.astype(np.float64), 4)
    assert orig.size > 2 * lattice.num_states + 64 and src.size > 2 * lattice.num_arcs + 64
    assert gram_ids.size > 6 * lattice.num_arcs + 64 and prefix.size > 2 * lattice.num_arcs + 64
    paths = list(lattice.paths())
    assert len(paths) == width ** length
    assert_close(ngram_posteriors(lattice, 4, 1.0, semiring).as_dict(), brute_force(paths, 4, 1.0, semiring), 1e-9)


def test_sample_set_posteriors_are_the_share_of_samples_containing_each_ngram():
    """Against enumeration: every n-gram (orders 1-3) of every sample, counted once per sample that contains it."""
    from lattices.posteriors import sample_posteriors

    rng = np.random.default_rng(5)
    samples = [tuple(int(t) for t in rng.integers(3, 8, size=rng.integers(1, 6))) for _ in range(40)]
    samples += samples[:10]  # repeats count as often as they were drawn
    expected: dict[tuple[int, ...], float] = {}
    for sample in samples:
        grams = {sample[i:i + n] for n in (1, 2, 3) for i in range(len(sample) - n + 1)}
        for gram in grams:
            expected[gram] = expected.get(gram, 0.0) + 1 / len(samples)
    got = sample_posteriors(samples, order=3).as_dict()
    assert got.keys() == expected.keys()
    for gram, value in expected.items():
        assert got[gram] == pytest.approx(value, abs=1e-12), gram
    weighted = sample_posteriors([(3, 4), (4,)], order=2, weights=[3.0, 1.0]).as_dict()
    assert weighted == pytest.approx({(3,): 0.75, (4,): 1.0, (3, 4): 0.75})
    with pytest.raises(ValueError, match="2 weights for 1 samples"):
        sample_posteriors([(3,)], weights=[1.0, 2.0])
