"""Path-counting posteriors with OpenFst operations (after Blackwood et al. 2010): an independent check.

For every n-gram u a transducer emits the symbol U exactly once on a string that contains u, at the first
occurrence of u; nothing on strings without u:

    T_u = (A_u x U) . (Sigma* x eps),    A_u = Sigma* u  -  Sigma* u Sigma+

(A_u: the strings that end with u and contain no earlier occurrence). The union of all T_u is composed with the
lattice (log64, costs times alpha), projected on the output side, epsilon-removed and determinised in the log
semiring: the weight of the one-symbol string U is then -log of the total probability mass of the paths that
contain u. Slow (one transducer per n-gram), exact in float64: the tests compare it with the forward algorithm.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

from lattices.lattice import weight_to_float

__all__ = ["blackwood_posteriors", "first_occurrence_acceptor"]

_ARC = "log64"
_DELTA = 1e-12


def _linear(labels: Sequence[int], arc_type: str = _ARC):
    import pynini

    fst = pynini.Fst(arc_type=arc_type)
    q = fst.add_state()
    fst.set_start(q)
    for x in labels:
        nxt = fst.add_state()
        fst.add_arc(q, pynini.Arc(x, x, pynini.Weight.one(fst.weight_type()), nxt))
        q = nxt
    fst.set_final(q)
    return fst


def _sigma(tokens: Iterable[int], arc_type: str = _ARC):
    import pynini

    fst = pynini.Fst(arc_type=arc_type)
    q = fst.add_state()
    d = fst.add_state()
    fst.set_start(q)
    fst.set_final(d)
    for x in sorted(set(tokens)):
        fst.add_arc(q, pynini.Arc(x, x, pynini.Weight.one(fst.weight_type()), d))
    return fst


def first_occurrence_acceptor(ngram: Sequence[int], tokens: Iterable[int]):
    """A_u: strings over ``tokens`` that end with ``ngram`` and contain it nowhere earlier (unweighted, log64).

    Built in the tropical semiring: Sigma* u Sigma* is ambiguous, and determinising an ambiguous cyclic
    automaton in the log semiring does not terminate (the derivation counts grow without bound).
    """
    import pynini

    sigma = _sigma(tokens, "standard")
    sigma_star = pynini.closure(sigma)
    ends_with = pynini.concat(sigma_star, _linear(ngram, "standard"))
    occurs_before_end = pynini.concat(pynini.concat(ends_with, sigma_star), sigma).optimize()
    return pynini.arcmap(pynini.difference(ends_with, occurs_before_end).optimize(), map_type="to_log64")


def blackwood_posteriors(fst, ngrams: Sequence[Sequence[int]], alpha: float = 1.0) -> dict[tuple[int, ...], float]:
    """P(a path contains u) for each u in ``ngrams``, every path of ``fst`` weighted by exp(-alpha * cost).

    Paths are derivations: on a lattice with several paths per string they add up (determinise ``fst`` in the
    tropical semiring first for best-derivation posteriors).
    """
    import pynini

    lattice = pynini.arcmap(fst, map_type="to_log64")
    if alpha != 1.0:
        lattice = pynini.arcmap(lattice, map_type="power", power=alpha)
    tokens = {a.ilabel for s in lattice.states() for a in lattice.arcs(s) if a.ilabel}
    grams = [tuple(int(x) for x in u) for u in ngrams]
    if not grams or lattice.start() < 0:
        return {u: 0.0 for u in grams}
    empty = _linear(())
    sigma_star = pynini.closure(_sigma(tokens)).rmepsilon()
    parts = []
    for k, u in enumerate(grams, start=1):
        emit = pynini.cross(first_occurrence_acceptor(u, tokens | set(u)), _linear((k,)))
        parts.append(pynini.concat(emit, pynini.cross(sigma_star, empty)))
    counter = pynini.union(*parts) if len(parts) > 1 else parts[0]
    counter.arcsort("ilabel")
    composed = pynini.compose(lattice, counter)
    composed.project("output")
    composed.rmepsilon(delta=_DELTA)
    det = pynini.determinize(composed, delta=_DELTA)
    # total mass of the lattice
    # (not pynini.shortestdistance: its Python result is rounded to 9 digits; removing all labels leaves the
    # start state with the total mass as its final weight)
    total = pynini.arcmap(pynini.arcmap(lattice, map_type="input_epsilon"), map_type="output_epsilon")
    total.rmepsilon(delta=_DELTA)
    z = weight_to_float(total.final(total.start()), _ARC)
    result = {u: 0.0 for u in grams}
    if det.start() < 0:
        return result
    for arc in det.arcs(det.start()):
        cost = weight_to_float(arc.weight, _ARC) + weight_to_float(det.final(arc.nextstate), _ARC)
        result[grams[arc.olabel - 1]] = math.exp(z - cost)
    return result
