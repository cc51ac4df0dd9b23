"""Exact n-gram posteriors: the probability that a path of the evidence space contains an n-gram at least once.

Algorithm (shared/docs/ALGORITHMS.md section 2), for all orders 1..N in one pass:

1. Expand the lattice so that each state knows its last N-1 tokens (epsilon arcs keep the history); every arc
   then carries the ids of the n-grams (orders 1..N) that end on it. Expanded states are numbered by their
   original state, which keeps the numbering topological.
2. Forward log weights a(t) = log sum over incoming arcs of exp(a(s) - cost(e)) (float64; the same numbers as
   ``pynini.shortestdistance`` in log64).
3. r_t[u] = P(prefix contains u | the path reaches t)
          = sum over arcs e = (s -> t) of g_e * (1 if e carries u else r_s[u]),  g_e = exp(a(s) - cost(e) - a(t)).
   Ratios stay in [0, 1]: no underflow however long the lattice.
4. p(u) = sum over final states t of P(end at t) * r_t[u].

Every path counts with probability proportional to exp(-cost): the costs given here already include the path
scale alpha, and for the tropical semiring (best derivation per string) the lattice is determinised first; see
:func:`lattices.evidence.evidence_space` and :func:`ngram_posteriors`, the entry point.

Vectors r_t are dense over the n-gram ids that can occur before t (ids are handed out in topological order, so
a prefix of the id range suffices) and are released as soon as the last successor of t has been computed; the
breadth-first state numbering of :class:`lattices.lattice.Lattice` keeps the number of live vectors near the
width of the lattice.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from lattices.lattice import Lattice

__all__ = ["NgramPosteriors", "forward_posteriors", "ngram_posteriors", "format_posteriors", "string_posteriors",
           "MAX_ORDER"]

MAX_ORDER = 4


@dataclass(frozen=True)
class NgramPosteriors:
    """Posteriors of the n-grams (orders 1..order) of an evidence space; ``ngrams[i]`` has ``values[i]``.

    ``margin``: the cost margin the lattice was pruned to before determinisation (``inf``: the whole lattice;
    see :mod:`lattices.pruning`).
    """

    ngrams: tuple[tuple[int, ...], ...]
    values: np.ndarray
    order: int
    margin: float = math.inf

    def as_dict(self) -> dict[tuple[int, ...], float]:
        return dict(zip(self.ngrams, self.values.tolist()))

    def __len__(self) -> int:
        return len(self.ngrams)

    def counts(self) -> dict[int, int]:
        """Number of n-grams per order."""
        result = {n: 0 for n in range(1, self.order + 1)}
        for g in self.ngrams:
            result[len(g)] += 1
        return result


@dataclass
class _Expanded:
    """The history-expanded lattice: arcs sorted by destination, n-gram ids per arc."""

    num_states: int
    src: np.ndarray
    dst: np.ndarray
    cost: np.ndarray
    grams: list[tuple[int, ...]]
    final: np.ndarray
    limit: np.ndarray  # per state: 1 + the largest n-gram id that can occur before it
    ngrams: list[tuple[int, ...]]


def _expand(lattice: Lattice, order: int) -> _Expanded:
    keep = order - 1
    out = lattice.out_arcs()
    hist: list[dict[tuple[int, ...], int]] = [{} for _ in range(lattice.num_states)]
    hist[lattice.start][()] = 0
    orig = [lattice.start]
    limit = [0]
    gram_ids: dict[tuple[int, ...], int] = {}
    ngrams: list[tuple[int, ...]] = []
    src: list[int] = []
    dst: list[int] = []
    cost: list[float] = []
    grams: list[tuple[int, ...]] = []
    for q in range(lattice.num_states):
        arcs = out[q]
        for h, s in hist[q].items():
            lim_s = limit[s]
            for x, d, c in arcs:
                if x == 0:
                    h2, ids = h, ()
                else:
                    seq = h + (x,)
                    h2 = seq[-keep:] if keep else ()
                    id_list = []
                    for n in range(1, len(seq) + 1):
                        g = seq[-n:]
                        i = gram_ids.get(g)
                        if i is None:
                            i = gram_ids[g] = len(ngrams)
                            ngrams.append(g)
                        id_list.append(i)
                    ids = tuple(id_list)
                hd = hist[d]
                t = hd.get(h2)
                if t is None:
                    t = hd[h2] = len(orig)
                    orig.append(d)
                    limit.append(0)
                lim = max(lim_s, max(ids) + 1) if ids else lim_s
                if lim > limit[t]:
                    limit[t] = lim
                src.append(s)
                dst.append(t)
                cost.append(c)
                grams.append(ids)
    # number expanded states by original state (topological), so that every arc goes forward
    orig_a = np.asarray(orig, np.int64)
    order = np.argsort(orig_a, kind="stable")
    renumber = np.empty_like(order)
    renumber[order] = np.arange(order.size)
    src_a, dst_a = renumber[np.asarray(src, np.int64)], renumber[np.asarray(dst, np.int64)]
    by_dst = np.argsort(dst_a, kind="stable")
    return _Expanded(len(orig), src_a[by_dst], dst_a[by_dst],
                     np.asarray(cost, np.float64)[by_dst], [grams[i] for i in by_dst.tolist()],
                     lattice.final[orig_a[order]], np.asarray(limit, np.int64)[order], ngrams)


def forward_posteriors(lattice: Lattice, order: int = MAX_ORDER) -> NgramPosteriors:
    """At-least-once posteriors of all n-grams of orders 1..order, every path weighted by exp(-cost).

    Sums over all paths: on a lattice with several derivations of one string, their probabilities add up
    (log semiring). Determinise in the tropical semiring first to keep only best derivations.
    """
    if not 1 <= order:
        raise ValueError(f"the n-gram order must be at least 1, not {order}")
    if lattice.num_states == 0:
        return NgramPosteriors((), np.zeros(0), order)
    ex = _expand(lattice, order)
    n_grams = len(ex.ngrams)
    # the last state that reads each state's vector
    last_use = np.full(ex.num_states, -1, np.int64)
    np.maximum.at(last_use, ex.src, ex.dst)
    release: dict[int, list[int]] = {}
    for s, t in enumerate(last_use.tolist()):
        if t >= 0:
            release.setdefault(t, []).append(s)
    bounds = np.searchsorted(ex.dst, np.arange(ex.num_states + 1))
    log_a = np.zeros(ex.num_states)
    vectors: dict[int, np.ndarray] = {}
    total = np.zeros(n_grams)
    log_z = -math.inf
    src, cost, limit, final = ex.src, ex.cost, ex.limit, ex.final
    for t in range(ex.num_states):
        lo, hi = int(bounds[t]), int(bounds[t + 1])
        lim_t = int(limit[t])
        r = np.zeros(lim_t)
        if hi > lo:  # t > 0: the start state has no incoming arc and r = 0
            masses = log_a[src[lo:hi]] - cost[lo:hi]
            top = masses.max()
            at = top + math.log(np.exp(masses - top).sum())
            log_a[t] = at
            weights = np.exp(masses - at).tolist()
            for k, g in enumerate(weights):
                i = lo + k
                s = int(src[i])
                rs = vectors[s]
                lim_s = rs.size
                if lim_s:
                    r[:lim_s] += g * rs[:lim_s]
                for u in ex.grams[i]:
                    r[u] += g * (1.0 - (rs[u] if u < lim_s else 0.0))
        vectors[t] = r
        if math.isfinite(final[t]):
            m = log_a[t] - final[t]
            if m > log_z:
                total *= math.exp(log_z - m) if math.isfinite(log_z) else 0.0
                log_z = m
            total[:lim_t] += math.exp(m - log_z) * r[:lim_t]
        if last_use[t] < 0:  # no successor (a final state): nothing reads its vector again
            del vectors[t]
        for s in release.get(t, ()):
            del vectors[s]
    # normalise: total currently holds sum_t exp(m_t - log_z) r_t; divide by sum_t exp(m_t - log_z)
    finals = np.flatnonzero(np.isfinite(final))
    z = np.exp(log_a[finals] - final[finals] - log_z).sum()
    values = np.clip(total / z, 0.0, 1.0)
    return NgramPosteriors(tuple(ex.ngrams), values, order)


def string_posteriors(strings: Sequence[tuple[Sequence[int], float]], order: int = MAX_ORDER) -> NgramPosteriors:
    """Posteriors over an n-best list of unique strings, each with probability proportional to exp(-cost).

    The direct sum p(u) = sum of P(s) over the strings s that contain u: what the forward algorithm computes on
    the strings' prefix tree, without building it. Vectorised: per order, every window of every string becomes an
    integer key (tokens renumbered densely, base = their number + 1), (string, key) pairs are made unique so that
    an n-gram counts once per string, and the weights of the strings are summed per key.
    """
    if not 1 <= order:
        raise ValueError(f"the n-gram order must be at least 1, not {order}")
    if not strings:
        return NgramPosteriors((), np.zeros(0), order)
    costs = np.asarray([cost for _, cost in strings], np.float64)
    weights = np.exp(costs.min() - costs)
    weights /= weights.sum()
    lengths = np.asarray([len(labels) for labels, _ in strings], np.int64)
    tokens = np.fromiter((x for labels, _ in strings for x in labels), np.int64, int(lengths.sum()))
    types = _sorted_unique(tokens)
    dense = np.searchsorted(types, tokens)
    base = len(types) + 1
    if len(strings) * float(base) ** order >= 2.0 ** 62:  # keys would overflow int64: the plain sum
        return _string_posteriors_by_sets(strings, weights, order)
    string_of = np.repeat(np.arange(len(strings)), lengths)
    position = np.arange(len(tokens)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    grams: list[tuple[int, ...]] = []
    values: list[np.ndarray] = []
    for n in range(1, order + 1):
        starts = np.flatnonzero(position + n <= lengths[string_of])
        key = np.zeros(len(starts), np.int64)
        for k in range(n):
            key = key * base + dense[starts + k]
        span = base ** n
        pairs = _sorted_unique(string_of[starts] * span + key)      # each n-gram once per string
        keys = _sorted_unique(pairs % span)
        slot = np.searchsorted(keys, pairs % span)
        values.append(np.bincount(slot, weights=weights[pairs // span], minlength=len(keys)))
        digits = np.empty((len(keys), n), np.int64)
        rest = keys.copy()
        for k in range(n - 1, -1, -1):
            rest, digits[:, k] = np.divmod(rest, base)
        grams.extend(map(tuple, types[digits].tolist()))
    return NgramPosteriors(tuple(grams), np.clip(np.concatenate(values), 0.0, 1.0), order)


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending (a plain sort: numpy's hash-based unique is slower on these sizes)."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if values.size else values


def _string_posteriors_by_sets(strings: Sequence[tuple[Sequence[int], float]], weights: np.ndarray,
                               order: int) -> NgramPosteriors:
    total: dict[tuple[int, ...], float] = {}
    for (labels, _), weight in zip(strings, weights.tolist()):
        labels = tuple(labels)
        for gram in {labels[i: i + n] for n in range(1, order + 1) for i in range(len(labels) - n + 1)}:
            total[gram] = total.get(gram, 0.0) + weight
    grams = tuple(total)
    return NgramPosteriors(grams, np.clip(np.fromiter(total.values(), np.float64, len(grams)), 0.0, 1.0), order)


def format_posteriors(posteriors: NgramPosteriors, symbols: Mapping[int, str] | None = None) -> list[str]:
    """Human-readable ``posterior<TAB>n-gram`` lines: by order, then by falling posterior; n-grams as symbols when
    a table is given (ids missing from it, and all ids without one, as integers)."""
    entries = sorted(zip(posteriors.ngrams, posteriors.values.tolist()), key=lambda kv: (len(kv[0]), -kv[1], kv[0]))
    table = symbols or {}
    return [f"{value:.10g}\t" + " ".join(table.get(x, str(x)) for x in ngram) for ngram, value in entries]


def ngram_posteriors(lattice: Lattice, order: int = MAX_ORDER, alpha: float = 1.0, semiring: str = "tropical",
                     nbest: int = 0, engine: str = "exact", max_states: int = 0) -> NgramPosteriors:
    """Posteriors of orders 1..order over the evidence space of a lattice (see :mod:`lattices.evidence`).

    ``semiring``: ``tropical`` (a string counts with its best derivation) or ``log`` (derivations summed);
    ``nbest``: 0 for the full lattice, else the K best unique strings; ``engine``: ``exact`` (float64, Python)
    or ``openfst`` (C++, float32 tropical costs; :mod:`lattices.openfst`); ``max_states``: the bound on a
    determinised tropical full lattice (0: none), past which it is pruned (the margin is in the result).
    """
    from lattices.evidence import bounded_evidence_space, nbest_strings

    if nbest:
        return string_posteriors(nbest_strings(lattice, nbest, semiring, alpha, engine), order)
    space = bounded_evidence_space(lattice, semiring=semiring, alpha=alpha, engine=engine, max_states=max_states)
    return replace(forward_posteriors(space.lattice, order), margin=space.margin)
