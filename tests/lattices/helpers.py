"""Small lattices built by the tests, and brute-force posteriors by path enumeration (independent of lattices/)."""
from __future__ import annotations

import math
import random
from collections import defaultdict

import numpy as np
import pynini

GOLDEN_ARCS = [(0, 1, 1, 37.654), (1, 2, 933, 0.0), (2, 3, 18, 4.738), (2, 4, 150, 0.0), (2, 5, 226, 5.521),
               (2, 5, 508, 8.223), (3, 5, 24, 0.0), (5, 6, 150, 0.0), (4, 7, 2, 0.0), (4, 7, 23, 5.906),
               (6, 7, 2, 0.0)]
GOLDEN_FINAL = 7
GOLDEN_POSTERIORS = {(933, 150): 0.987176612683, (933, 150, 2): 0.984496437005, (18, 24): 0.008617965440,
                     (2,): 0.997316613516, (1,): 0.999996857723}


def make_fst(arcs, finals, num_states=None, arc_type="standard", symbols=None) -> pynini.Fst:
    """An acceptor from (src, dst, label, cost) arcs and {state: final cost}; state 0 is the start."""
    semiring = "tropical" if arc_type == "standard" else arc_type
    fst = pynini.Fst(arc_type=arc_type)
    n = num_states or 1 + max([max(s, d) for s, d, _, _ in arcs] + list(finals))
    fst.add_states(n)
    fst.set_start(0)
    for s, d, x, c in arcs:
        fst.add_arc(s, pynini.Arc(x, x, pynini.Weight(semiring, c), d))
    for q, w in finals.items():
        fst.set_final(q, pynini.Weight(semiring, w))
    if symbols is not None:
        fst.set_input_symbols(symbols)
        fst.set_output_symbols(symbols)
    return fst


def random_fst(rng: random.Random, states: int = 7, alphabet: int = 4, eps: float = 0.15,
               extra: float = 0.6) -> pynini.Fst:
    """A random acyclic acceptor (standard arc type, float32 costs) with a shuffled state numbering.

    Small alphabet: repeated n-grams on one path; parallel arcs and epsilons: one string, several derivations.
    """
    perm = list(range(states))  # logical (topological) state i is FST state perm[i]
    rng.shuffle(perm)
    arcs = []
    for i in range(states - 1):  # a backbone: every state on some path
        arcs.append((i, i + 1))
    for _ in range(int(extra * states * 2)):
        i = rng.randrange(states - 1)
        j = rng.randrange(i + 1, states)
        arcs.append((i, j))
    fst = pynini.Fst()
    fst.add_states(states)
    fst.set_start(perm[0])
    for i, j in arcs:
        label = 0 if rng.random() < eps else rng.randint(1, alphabet)
        cost = float(np.float32(rng.uniform(0.0, 3.0)))
        fst.add_arc(perm[i], pynini.Arc(label, label, pynini.Weight("tropical", cost), perm[j]))
    fst.set_final(perm[states - 1])
    if rng.random() < 0.5:  # a second final state with a final cost
        q = rng.randrange(1, states - 1)
        fst.set_final(perm[q], pynini.Weight("tropical", float(np.float32(rng.uniform(0.0, 2.0)))))
    return fst


def fst_paths(fst: pynini.Fst) -> list[tuple[tuple[int, ...], float]]:
    """Every complete path of an acyclic FST as (labels without epsilons, float64 cost of its float32 weights)."""
    def w(x) -> float:
        v = float(x)
        return v if math.isinf(v) else float(np.float32(v))

    result = []
    stack = [(fst.start(), (), 0.0)]
    while stack:
        q, labels, cost = stack.pop()
        f = w(fst.final(q))
        if math.isfinite(f):
            result.append((labels, cost + f))
        for a in fst.arcs(q):
            stack.append((a.nextstate, labels + (a.ilabel,) if a.ilabel else labels, cost + w(a.weight)))
    return result


def string_costs(paths, alpha: float, semiring: str) -> dict[tuple[int, ...], float]:
    """alpha-scaled cost per string: best derivation (tropical) or -log sum exp(-cost) (log)."""
    groups = defaultdict(list)
    for labels, cost in paths:
        groups[labels].append(alpha * cost)
    if semiring == "tropical":
        return {s: min(c) for s, c in groups.items()}
    return {s: -float(np.logaddexp.reduce(-np.asarray(c))) for s, c in groups.items()}


def top_strings(costs: dict, k: int) -> list:
    return sorted(costs, key=lambda s: (costs[s], s))[:k]


def brute_force(paths, order: int = 4, alpha: float = 1.0, semiring: str = "tropical",
                nbest: int = 0) -> dict[tuple[int, ...], float]:
    """P(a string of the evidence space contains u at least once), by enumeration."""
    costs = string_costs(paths, alpha, semiring)
    strings = top_strings(costs, nbest) if nbest else list(costs)
    if not strings:
        return {}
    best = min(costs[s] for s in strings)
    weights = {s: math.exp(-(costs[s] - best)) for s in strings}
    z = sum(weights.values())
    result: dict[tuple[int, ...], float] = defaultdict(float)
    for s in strings:
        grams = {s[i:i + n] for n in range(1, order + 1) for i in range(len(s) - n + 1)}
        for g in grams:
            result[g] += weights[s] / z
    return dict(result)


def assert_close(got: dict, expected: dict, tol: float) -> None:
    assert set(got) == set(expected), (set(got) ^ set(expected))
    worst = max((abs(got[k] - expected[k]) for k in expected), default=0.0)
    assert worst <= tol, worst
