"""Exact n-gram posteriors: the probability that a path of the evidence space contains an n-gram at least once.

Algorithm (docs/algorithms.md section 2), for all orders 1..N in one pass:

1. Expand the lattice so that each state knows its last N-1 tokens (epsilon arcs keep the history); every arc
   then carries the ids of the n-grams (orders 1..N) that end on it. Expanded states are numbered by their
   original state, which keeps the numbering topological.
2. Forward log weights a(t) = log sum over incoming arcs of exp(a(s) - cost(e)) (float64; the same numbers as
   ``pynini.shortestdistance`` in log64).
3. Backward log weights b(t), and the arc posteriors P(e) = exp(a(s) - cost(e) + b(t) - b(start)).
4. r_t[u] = P(prefix contains u | the path reaches t)
          = sum over arcs e = (s -> t) of g_e * (1 if e carries u else r_s[u]),  g_e = exp(a(s) - cost(e) - a(t)).
   Ratios stay in [0, 1]: no underflow however long the lattice.
5. p(u) = sum over arcs e = (s -> t) carrying u of P(e) * (1 - r_s[u]): every path that contains u has exactly
   one first arc carrying it.

Every path counts with probability proportional to exp(-cost): the costs given here already include the path
scale alpha, and for the tropical semiring (best derivation per string) the lattice is determinised first; see
:func:`lattices.evidence.evidence_space` and :func:`ngram_posteriors`, the entry point.

Step 5 needs r_s[u] only between the first and the last arc carrying u, so the vectors r_t hold only the
n-grams whose window is open at t (a tenth of them or less on phrase-based lattices), and each is released after
its last successor. The loops run compiled (numba): :mod:`lattices.posterior_kernels`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from lattices import posterior_kernels as kernels
from lattices.lattice import Lattice
from lattices.nbest import StringArrays
from lattices.path_kernels import ranked_sums

if TYPE_CHECKING:
    from lattices.openfst import BestPaths

__all__ = ["NgramPosteriors", "best_path_posteriors", "forward_posteriors", "ngram_posteriors", "format_posteriors",
           "sample_posteriors", "string_posteriors", "MAX_ORDER"]

MAX_ORDER = 4


@dataclass(frozen=True)
class NgramPosteriors:
    """Posteriors of the n-grams (orders 1..order) of an evidence space: n-gram i is ``tokens[i]`` (left-aligned,
    -1 after it; ``ngrams[i]`` as a tuple) and has posterior ``values[i]``.

    ``margin``: the cost margin the lattice was pruned to before determinisation (``inf``: the whole lattice;
    see :mod:`lattices.pruning`).
    """

    tokens: np.ndarray  # [G, order] int64
    values: np.ndarray  # [G] float64
    order: int
    margin: float = math.inf

    @classmethod
    def from_ngrams(cls, ngrams: Sequence[Sequence[int]], values: np.ndarray, order: int,
                    margin: float = math.inf) -> "NgramPosteriors":
        """From n-grams as sequences of token ids."""
        tokens = np.full((len(ngrams), max(order, 1)), -1, np.int64)
        for i, gram in enumerate(ngrams):
            tokens[i, :len(gram)] = gram
        return cls(tokens, np.asarray(values, np.float64), order, margin)

    @functools.cached_property
    def lengths(self) -> np.ndarray:
        """[G] the order of each n-gram."""
        return (self.tokens >= 0).sum(axis=1)

    @functools.cached_property
    def ngrams(self) -> tuple[tuple[int, ...], ...]:
        """The n-grams as tuples (built on first use)."""
        return tuple(tuple(row[:n]) for row, n in zip(self.tokens.tolist(), self.lengths.tolist()))

    def as_dict(self) -> dict[tuple[int, ...], float]:
        return dict(zip(self.ngrams, self.values.tolist()))

    def __len__(self) -> int:
        return int(self.values.size)

    def counts(self) -> dict[int, int]:
        """Number of n-grams per order."""
        found = np.bincount(self.lengths, minlength=self.order + 1)
        return {n: int(found[n]) for n in range(1, self.order + 1)}


def forward_posteriors(lattice: Lattice, order: int = MAX_ORDER, breadth_first: bool = True) -> NgramPosteriors:
    """At-least-once posteriors of all n-grams of orders 1..order, every path weighted by exp(-cost).

    Sums over all paths: on a lattice with several derivations of one string, their probabilities add up
    (log semiring). Determinise in the tropical semiring first to keep only best derivations. The work is done by
    the compiled kernels of :mod:`lattices.posterior_kernels`; ``breadth_first`` chooses the order in which they
    visit the states (the same result to the bit; see :func:`lattices.posterior_kernels.forward`).
    """
    if not 1 <= order:
        raise ValueError(f"the n-gram order must be at least 1, not {order}")
    if lattice.num_states == 0:
        return NgramPosteriors.from_ngrams((), np.zeros(0), order)
    out_ptr = np.searchsorted(lattice.src, np.arange(lattice.num_states + 1))
    orig, src, dst, cost, gram_ptr, gram_ids, prefix, last, gram_order = kernels.expand(
        lattice.num_states, out_ptr, _int64(lattice.dst), _int64(lattice.label),
        np.ascontiguousarray(lattice.cost, np.float64), order)
    # number expanded states by original state (topological, so every arc goes forward), arcs by destination
    state_order, src, dst, cost, gram_ptr, gram_ids = kernels.by_destination(orig, lattice.num_states, src, dst, cost,
                                                                             gram_ptr, gram_ids)
    values = kernels.forward(state_order.size, src, dst, cost, gram_ptr, gram_ids,
                             np.ascontiguousarray(lattice.final[orig[state_order]], np.float64), prefix.size,
                             breadth_first)
    return NgramPosteriors(kernels.ngram_tokens(prefix, last, gram_order, order), values, order)


def _int64(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array, np.int64)


def string_posteriors(strings: Sequence[tuple[Sequence[int], float]] | StringArrays,
                      order: int = MAX_ORDER) -> NgramPosteriors:
    """Posteriors over an n-best list of unique strings, each with probability proportional to exp(-cost).

    The direct sum p(u) = sum of P(s) over the strings s that contain u: what the forward algorithm computes on
    the strings' prefix tree, without building it (compiled: :func:`lattices.posterior_kernels.string_sums`).
    N-grams come by order, then by their tokens.
    """
    if not 1 <= order:
        raise ValueError(f"the n-gram order must be at least 1, not {order}")
    if not isinstance(strings, StringArrays):
        strings = StringArrays.from_list(strings)
    if not len(strings):
        return NgramPosteriors.from_ngrams((), np.zeros(0), order)
    values, prefix, last, gram_order = kernels.string_sums(strings.tokens, strings.offsets,
                                                           _string_weights(strings.costs), order)
    return _from_trie(values, prefix, last, gram_order, order)


def sample_posteriors(samples: Sequence[Sequence[int]], order: int = MAX_ORDER,
                      weights: Sequence[float] | None = None) -> NgramPosteriors:
    """Posteriors of a sample set (the NMT's samples, drawn with repeats) as an evidence space: each string's
    probability is its share of the samples (or of `weights`, one per sample), so p(u) is the share of the samples
    that contain u; :func:`string_posteriors` over the distinct strings."""
    if weights is not None and len(weights) != len(samples):
        raise ValueError(f"{len(weights)} weights for {len(samples)} samples")
    mass: dict[tuple[int, ...], float] = {}
    for sample, weight in zip(samples, weights if weights is not None else [1.0] * len(samples)):
        if weight < 0:
            raise ValueError(f"a sample's weight must not be negative, not {weight}")
        mass[tuple(sample)] = mass.get(tuple(sample), 0.0) + float(weight)
    strings = [(s, -math.log(m)) for s, m in mass.items() if m > 0]
    return string_posteriors(strings, order)


def best_path_posteriors(best: BestPaths | None, order: int) -> NgramPosteriors:
    """The posteriors of OpenFst's K best strings (:func:`lattices.openfst.openfst_best_paths`, n-grams up to
    `order`), each with probability proportional to exp(-cost): those of :func:`string_posteriors` on the same
    strings, bit for bit (the same sums, added in rank order), with the n-grams read from the FST's shared
    prefixes."""
    if best is None:
        return NgramPosteriors.from_ngrams((), np.zeros(0), order)
    values = ranked_sums(best.grams, best.offsets, best.ranked, _string_weights(best.costs), best.prefix.size)
    return _from_trie(values, best.prefix, best.last, best.gram_order, order)


def _string_weights(costs: np.ndarray) -> np.ndarray:
    """[S] the strings' probabilities, proportional to exp(-cost)."""
    weights = np.exp(costs.min() - costs)
    return weights / weights.sum()


def _from_trie(values: np.ndarray, prefix: np.ndarray, last: np.ndarray, gram_order: np.ndarray,
               order: int) -> NgramPosteriors:
    """Posteriors from n-grams numbered as a trie (:func:`lattices.posterior_kernels.ngram_tokens`), ranked by
    order, then by their tokens."""
    grams = kernels.ngram_tokens(prefix, last, gram_order, order)
    ranked = np.lexsort([grams[:, n] for n in range(order - 1, -1, -1)] + [gram_order])
    return NgramPosteriors(grams[ranked], np.clip(values[ranked], 0.0, 1.0), order)


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
    from lattices.evidence import bounded_evidence_space, check_space, nbest_string_arrays
    from lattices.openfst import openfst_best_paths

    check_space(semiring, engine)
    if order < 1:
        raise ValueError(f"the n-gram order must be at least 1, not {order}")
    if nbest and engine == "openfst":
        return best_path_posteriors(openfst_best_paths(lattice.scaled(alpha), nbest, semiring, order), order)
    if nbest:
        return string_posteriors(nbest_string_arrays(lattice, nbest, semiring, alpha, engine), order)
    space = bounded_evidence_space(lattice, semiring=semiring, alpha=alpha, engine=engine, max_states=max_states)
    return replace(forward_posteriors(space.lattice, order), margin=space.margin)
