import random

import pynini
import pytest

from lattices.blackwood import blackwood_posteriors, first_occurrence_acceptor
from lattices.determinize import determinize
from lattices.lattice import Lattice
from lattices.posteriors import ngram_posteriors
from tests.lattices.helpers import GOLDEN_ARCS, GOLDEN_FINAL, GOLDEN_POSTERIORS, assert_close, make_fst, random_fst


def test_first_occurrence_acceptor_stops_at_the_first_occurrence():
    a = first_occurrence_acceptor((1, 1), [1, 2])

    def accepts(labels):
        string = make_fst([(i, i + 1, x, 0.0) for i, x in enumerate(labels)], {len(labels): 0.0}, arc_type="log64")
        return pynini.compose(string, a).connect().num_states() > 0

    assert accepts((1, 1)) and accepts((2, 1, 1)) and accepts((2, 2, 1, 1))
    assert not accepts((1, 1, 1)) and not accepts((1, 1, 2)) and not accepts((1,)) and not accepts((1, 2, 1))


@pytest.mark.parametrize("alpha", [1.0, 0.6])
def test_path_counting_transducer_agrees_with_forward_algorithm_log_semiring(alpha):
    rng = random.Random(3)
    for trial in range(6):
        fst = random_fst(rng, states=rng.randint(4, 7), alphabet=3)
        forward = ngram_posteriors(Lattice.from_fst(fst), 4, alpha, "log").as_dict()
        assert_close(blackwood_posteriors(fst, list(forward), alpha), forward, 1e-9)


def test_path_counting_transducer_agrees_in_the_tropical_semiring_after_float64_determinisation():
    rng = random.Random(5)
    for trial in range(4):
        lattice = Lattice.from_fst(random_fst(rng, states=rng.randint(4, 7), alphabet=3))
        forward = ngram_posteriors(lattice, 4, 0.7, "tropical").as_dict()
        det = determinize(lattice, "tropical").to_fst("log64")
        assert_close(blackwood_posteriors(det, list(forward), 0.7), forward, 1e-9)


def test_path_counting_transducer_agrees_in_the_tropical_semiring_after_pynini_determinisation():
    rng = random.Random(4)
    for trial in range(4):
        fst = random_fst(rng, states=rng.randint(4, 7), alphabet=3)
        det = pynini.determinize(fst.copy().rmepsilon())  # float32 tropical determinisation, OpenFst's own
        forward = ngram_posteriors(Lattice.from_fst(fst), 4, 1.0, "tropical").as_dict()
        assert_close(blackwood_posteriors(det, list(forward), 1.0), forward, 1e-5)


def test_path_counting_transducer_on_the_golden_lattice():
    fst = make_fst(GOLDEN_ARCS, {GOLDEN_FINAL: 0.0})
    got = blackwood_posteriors(fst, list(GOLDEN_POSTERIORS), 1.0)
    for ngram, expected in GOLDEN_POSTERIORS.items():
        assert got[ngram] == pytest.approx(expected, abs=1e-5)
