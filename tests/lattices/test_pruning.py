"""Beam pruning and the state-bounded evidence space, against path enumeration."""
import math
import random

import numpy as np
import pytest

from lattices.determinize import determinize
from lattices.evidence import bounded_evidence_space
from lattices.lattice import Lattice
from lattices.openfst import openfst_determinize, openfst_determinize_within
from lattices.posteriors import forward_posteriors, ngram_posteriors
from lattices.pruning import arc_margins, determinize_within, prune
from tests.lattices.helpers import assert_close, brute_force, random_fst

#: per engine: (within(lattice, cap), determinize(lattice)) in the tropical semiring
ENGINES = {
    "exact": (lambda lat, cap: determinize(lat, "tropical", cap), lambda lat: determinize(lat, "tropical")),
    "openfst": (lambda lat, cap: openfst_determinize_within(lat, "tropical", cap),
                lambda lat: openfst_determinize(lat, "tropical")),
}


def enumerate_paths(lattice: Lattice) -> list[tuple[tuple[int, ...], int, tuple[int, ...], float]]:
    """Every complete path as (arc indices, final state, labels without epsilons, cost)."""
    out: dict[int, list[int]] = {}
    for i, s in enumerate(lattice.src.tolist()):
        out.setdefault(s, []).append(i)
    paths = []
    stack = [(lattice.start, (), (), 0.0)]
    while stack:
        q, arcs, labels, cost = stack.pop()
        if math.isfinite(lattice.final[q]):
            paths.append((arcs, q, labels, cost + float(lattice.final[q])))
        for i in out.get(q, ()):
            x = int(lattice.label[i])
            stack.append((int(lattice.dst[i]), arcs + (i,), labels + (x,) if x else labels,
                          cost + float(lattice.cost[i])))
    return paths


def brute_margins(lattice: Lattice) -> tuple[np.ndarray, np.ndarray]:
    paths = enumerate_paths(lattice)
    best = min(cost for *_, cost in paths)
    through_arc = np.full(lattice.num_arcs, math.inf)
    through_final = np.full(lattice.num_states, math.inf)
    for arcs, q, _, cost in paths:
        for i in arcs:
            through_arc[i] = min(through_arc[i], cost - best)
        through_final[q] = min(through_final[q], cost - best)
    return through_arc, through_final


def surviving_paths(lattice: Lattice, margin: float) -> list[tuple[tuple[int, ...], float]]:
    """The paths made only of arcs and a final state whose best path is within margin (brute force)."""
    through_arc, through_final = brute_margins(lattice)
    return [(labels, cost) for arcs, q, labels, cost in enumerate_paths(lattice)
            if through_final[q] <= margin and all(through_arc[i] <= margin for i in arcs)]


def random_lattices(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        yield rng, Lattice.from_fst(random_fst(rng, states=rng.randint(4, 12), alphabet=rng.randint(2, 5)))


def test_arc_margins_are_the_best_path_through_each_arc_minus_the_best_path():
    for _, lattice in random_lattices(1, 40):
        got_arc, got_final = arc_margins(lattice)
        want_arc, want_final = brute_margins(lattice)
        assert np.allclose(got_arc, want_arc, atol=1e-9)
        finals = np.isfinite(lattice.final)
        assert np.allclose(got_final[finals], want_final[finals], atol=1e-9)
        assert got_arc.min() == 0.0  # the best path's arcs


def test_pruned_evidence_space_has_the_posteriors_of_the_surviving_paths():
    checked_dropped = 0
    for rng, lattice in random_lattices(2, 40):
        margins = np.unique(arc_margins(lattice)[0])
        k = rng.randrange(len(margins))
        margin = float(margins[k] + (margins[k + 1] - margins[k]) / 2 if k + 1 < len(margins) else margins[k])
        kept = surviving_paths(lattice, margin)
        checked_dropped += len(kept) < len(enumerate_paths(lattice))
        got = forward_posteriors(determinize(prune(lattice, margin), "tropical"), 4).as_dict()
        assert_close(got, brute_force(kept, 4, 1.0, "tropical"), 1e-9)
    assert checked_dropped > 20


def test_negative_margin_is_refused():
    _, lattice = next(random_lattices(3, 1))
    with pytest.raises(ValueError, match="non-negative"):
        prune(lattice, -1.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_lattice_determinises_within_exactly_up_to_its_determinised_size(engine):
    """Within the cap the result is the unbounded determinisation, array for array; one state less: None."""
    within, det = ENGINES[engine]
    for _, lattice in random_lattices(4, 30):
        whole = det(lattice)
        for cap in (whole.num_states, whole.num_states + 5):
            got = within(lattice, cap)
            assert got is not None and (got.num_states, got.start) == (whole.num_states, whole.start)
            for name in ("src", "dst", "label", "cost", "final"):
                assert np.array_equal(getattr(got, name), getattr(whole, name))
        if whole.num_states > 1:
            assert within(lattice, whole.num_states - 1) is None
    full = random_lattices(4, 1)
    _, lattice = next(full)
    capped = determinize(lattice, "tropical", det(lattice).num_states)
    assert capped is not None and capped.num_states == det(lattice).num_states  # under the cap: the whole result


def test_a_lattice_within_the_bound_is_not_pruned():
    for _, lattice in random_lattices(5, 20):
        full = determinize(lattice, "tropical")
        space = bounded_evidence_space(lattice, "tropical", 1.0, max_states=full.num_states)
        assert not space.pruned and space.lattice.num_states == full.num_states
        assert ngram_posteriors(lattice, 4, max_states=full.num_states).as_dict() == \
            ngram_posteriors(lattice, 4).as_dict()


@pytest.mark.parametrize("engine", ENGINES)
def test_bounded_space_is_the_widest_pruning_that_fits(engine):
    fits, det = ENGINES[engine]
    checked = refused = 0
    for rng, lattice in random_lattices(6 if engine == "exact" else 7, 60):
        full = det(lattice).num_states
        if full < 3:
            continue
        budget = rng.randint(1, full - 1)
        margins = np.unique(np.concatenate([arc_margins(lattice)[0], arc_margins(lattice)[1]]))
        margins = margins[np.isfinite(margins)]
        fitting = [det(prune(lattice, float(m))).num_states <= budget for m in margins]
        if not fitting[0]:
            refused += 1
            with pytest.raises(ValueError, match="even the best paths"):
                determinize_within(lattice, budget, fits, det)
            continue
        space = determinize_within(lattice, budget, fits, det)
        widest = max(m for m, ok in zip(margins, fitting) if ok)
        assert space.margin == widest and space.lattice.num_states <= budget
        tol = 1e-9 if engine == "exact" else 1e-5
        got = forward_posteriors(space.lattice, 4).as_dict()
        assert_close(got, brute_force(surviving_paths(lattice, space.margin), 4, 1.0, "tropical"), tol)
        checked += 1
    assert checked > 15 and refused > 3  # both outcomes exercised


def test_the_margin_is_kept_with_the_posteriors():
    _, lattice = next(random_lattices(8, 1))
    full = determinize(lattice, "tropical").num_states
    bounded = ngram_posteriors(lattice, 4, max_states=max(1, full - 1))
    assert math.isfinite(bounded.margin) and math.isinf(ngram_posteriors(lattice, 4).margin)
