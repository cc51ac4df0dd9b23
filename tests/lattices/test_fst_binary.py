"""Lattice arrays <-> OpenFst's binary format: what pynini reads is what an arc-by-arc construction holds."""
import random

import numpy as np
import pytest

from lattices.fst_binary import arrays_from_fst, fst_from_arrays, standard_arrays
from tests.lattices.helpers import make_fst

_FLOAT = {"standard": np.float32, "log": np.float32, "log64": np.float64}


def _random_arcs(rng: random.Random, states: int):
    arcs = [(rng.randrange(states - 1), 0, rng.randint(0, 9), rng.uniform(0.0, 40.0)) for _ in range(4 * states)]
    arcs = [(s, rng.randrange(s + 1, states), x, c) for s, _, x, c in arcs]
    rng.shuffle(arcs)  # not grouped by source: the writer groups them, stably
    finals = {q: rng.uniform(0.0, 2.0) for q in rng.sample(range(states), min(3, states))}
    return arcs, finals


@pytest.mark.parametrize("arc_type", ["standard", "log", "log64"])
def test_written_fst_holds_the_arcs_in_order_with_their_weights(arc_type):
    rng = random.Random(len(arc_type))
    for trial in range(20):
        states = rng.randint(2, 30)
        arcs, finals = _random_arcs(rng, states)
        src, dst, label, cost = (np.asarray(column) for column in zip(*arcs))
        final = np.full(states, np.inf)
        for q, w in finals.items():
            final[q] = w
        fst = fst_from_arrays(states, 0, src.astype(np.int64), dst.astype(np.int64), label.astype(np.int64), cost,
                              final, arc_type)
        grouped = sorted(range(len(arcs)), key=lambda i: arcs[i][0])  # stable: the order within a state is kept
        want = make_fst([arcs[i] for i in grouped], finals, num_states=states, arc_type=arc_type)
        assert fst.arc_type() == arc_type and fst.num_states() == states and fst.start() == 0
        for q in range(states):
            got = [(a.ilabel, a.olabel, a.weight.to_string(), a.nextstate) for a in fst.arcs(q)]
            assert got == [(a.ilabel, a.olabel, a.weight.to_string(), a.nextstate) for a in want.arcs(q)]
            assert fst.final(q).to_string() == want.final(q).to_string()
        n, start, s2, d2, ilabel, olabel, c2, f2 = arrays_from_fst(fst)
        order = np.asarray(grouped)
        assert (n, start) == (states, 0)
        assert np.array_equal(s2, src[order]) and np.array_equal(d2, dst[order])
        assert np.array_equal(ilabel, label[order]) and np.array_equal(olabel, label[order])
        kind = _FLOAT[arc_type]
        assert np.array_equal(c2, cost[order].astype(kind).astype(np.float64))
        assert np.array_equal(f2, final.astype(kind).astype(np.float64))
        if arc_type == "standard":
            *_, c3, f3 = standard_arrays(fst)
            assert c3.dtype == np.float32 and np.array_equal(c3, cost[order].astype(np.float32))
            assert np.array_equal(f3, final.astype(np.float32))
