"""The compiled tropical determinisation against OpenFst's (pynini): the same lattice, array for array and bit for
bit, with and without a bound on its states; the cases it hands back to OpenFst."""
import random

import numpy as np
import pytest

from lattices.compiled_determinize import (determinize_tropical, load_library, tropical_determinize,
                                           tropical_determinize_within)
from lattices.lattice import Lattice
from lattices.openfst import DETERMINIZE_DELTA, openfst_determinize, openfst_determinize_within
from tests.lattices.helpers import random_fst

pytestmark = pytest.mark.skipif(load_library() is None, reason="`make install` builds the compiled determinisation")


def _assert_same(got: Lattice | None, want: Lattice | None) -> None:
    assert (got is None) == (want is None)
    if want is None:
        return
    assert (got.num_states, got.start) == (want.num_states, want.start)
    for name in ("src", "dst", "label", "cost", "final"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert got.symbols == want.symbols


def _random_lattice(rng: random.Random, states: int, alphabet: int, ties: bool) -> Lattice:
    """A trimmed, epsilon-free lattice with many derivations per string (parallel paths, a small alphabet);
    with ``ties``, costs on a coarse grid so that residuals and subsets coincide often."""
    arcs = [(i, i + 1, rng.randint(1, alphabet), 0.0) for i in range(states - 1)]
    for _ in range(2 * states):
        i = rng.randrange(states - 1)
        arcs.append((i, rng.randrange(i + 1, min(states, i + 4)), rng.randint(1, alphabet), 0.0))
    arcs = [(s, d, x, float(rng.randint(0, 4)) / 2 if ties else rng.uniform(0.0, 5.0)) for s, d, x, _ in arcs]
    finals = {states - 1: 0.0}
    for q in rng.sample(range(1, states - 1), min(3, states - 2)):
        finals[q] = rng.uniform(0.0, 3.0)
    return Lattice.from_arcs(states, 0, arcs, finals, {x: f"w{x}" for x in range(1, alphabet + 1)})


@pytest.mark.parametrize("ties", [False, True])
def test_compiled_determinisation_is_openfsts_array_for_array(ties):
    rng = random.Random(41 if ties else 40)
    sizes = []
    for trial in range(60):
        lattice = _random_lattice(rng, rng.randint(3, 16), rng.randint(2, 5), ties).scaled(rng.choice([1.0, 0.37]))
        want = openfst_determinize(lattice, "tropical")
        _assert_same(determinize_tropical(lattice, DETERMINIZE_DELTA), want)
        _assert_same(tropical_determinize(lattice), want)
        sizes.append(want.num_states)
        for cap in (1, want.num_states - 1, want.num_states, want.num_states + 5):
            expected = openfst_determinize_within(lattice, "tropical", cap)
            _assert_same(determinize_tropical(lattice, DETERMINIZE_DELTA, cap), expected)
            _assert_same(tropical_determinize_within(lattice, cap), expected)
    assert max(sizes) > 20  # some lattices grew under determinisation


def _chains(rng: random.Random, strings) -> Lattice:
    """One path per (string, cost), the cost spread over its arcs, all ending in one final state."""
    arcs, n = [], 2
    for string, cost in strings:
        shares = [rng.random() for _ in string]
        states = [0] + list(range(n, n + len(string) - 1)) + [1]
        n += len(string) - 1
        arcs += [(states[i], states[i + 1], x, cost * w / sum(shares)) for i, (x, w) in enumerate(zip(string, shares))]
    return Lattice.from_arcs(n, 0, arcs, {1: 0.0}, {x: f"w{x}" for x in range(1, 4)})


def test_near_equal_derivations_are_quantised_as_openfst_does():
    # several derivations of each string whose costs differ by about what float32 can tell
    rng = random.Random(7)
    for trial in range(40):
        strings = []
        for _ in range(rng.randint(2, 12)):
            string = tuple(rng.randint(1, 3) for _ in range(rng.randint(1, 6)))
            cost = rng.uniform(0.0, 30.0)
            strings += [(string, cost), (string, cost + rng.choice([1e-9, 3e-7, 1e-6, 0.0]))]
        lattice = _chains(rng, strings)
        _assert_same(determinize_tropical(lattice, DETERMINIZE_DELTA), openfst_determinize(lattice, "tropical"))


def test_random_fsts_with_epsilons_go_to_openfst():
    rng = random.Random(3)
    epsilons = 0
    for trial in range(30):
        lattice = Lattice.from_fst(random_fst(rng, states=rng.randint(3, 12), alphabet=3))
        if (lattice.label == 0).any():
            epsilons += 1
            assert determinize_tropical(lattice, DETERMINIZE_DELTA) is NotImplemented
        _assert_same(tropical_determinize(lattice), openfst_determinize(lattice, "tropical"))
        _assert_same(tropical_determinize_within(lattice, 6), openfst_determinize_within(lattice, "tropical", 6))
    assert epsilons > 5


def test_a_state_that_reaches_no_final_state_goes_to_openfst():
    # state 2 is a dead end: OpenFst's connect drops it, so the compiled path declines
    z = np.asarray
    lattice = Lattice(4, 0, z([0, 0, 1]), z([1, 2, 3]), z([5, 6, 7]), z([0.5, 0.25, 1.0]), z([np.inf, np.inf, np.inf,
                                                                                               0.0]), None)
    assert determinize_tropical(lattice, DETERMINIZE_DELTA) is NotImplemented
    _assert_same(tropical_determinize(lattice), openfst_determinize(lattice, "tropical"))


def test_the_empty_lattice():
    empty = Lattice.empty({})
    assert tropical_determinize(empty).num_states == 0
