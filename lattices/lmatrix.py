"""The L matrix of one sentence: rows = histories seen in the evidence space, columns = target vocabulary.

    L[h, y] = Theta_0 + sum_{n=1..N} Theta_n * p(suffix_{n-1}(h) . y)      (ALGORITHMS.md section 4)

(a term whose suffix_{n-1}(h) does not exist, because h is shorter than n-1, is 0). Storage, never dense:

- ``Theta_0`` as a scalar (``theta[0]``);
- the unigram part Theta_1 p(y), shared by every row: ``uni_tokens`` [U], ``uni_values`` [U];
- the higher-order part sum_{n>=2} Theta_n p(suffix_{n-1}(h) . y) as CSR over rows: ``hi_indptr`` [R+1],
  ``hi_tokens`` [nnz], ``hi_values`` [nnz] (float32);
- the row automaton (:mod:`lattices.row_automaton`) and the posteriors it came from (for dumps and for a new
  theta without recomputing them: :meth:`LMatrix.with_theta`).

Shard files of several sentences, and the call that builds one from lattice files, are in
:mod:`lattices.lmatrix_shards`; :class:`lattices.batch.LMatrixBatch` puts a batch on the device.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from lattices.posteriors import MAX_ORDER, NgramPosteriors, ngram_posteriors
from lattices.lmatrix_kernels import lmatrix_tables
from lattices.row_automaton import RowAutomaton, row_key
from lattices.theta import Theta

__all__ = ["LMatrix", "build_lmatrix", "compile_kernels", "UNIT_CONVENTION"]

#: How word lattices become token sequences (see lattices.units); recorded in every signature.
UNIT_CONVENTION = ("word arcs -> BPE piece chains (weight on the first piece); <s> -> bos_id, </s> -> eos_id, "
                   "piece outside the vocabulary -> unk_id; epsilon kept")


@dataclass
class LMatrix:
    """L of one sentence (see the module docstring for the layout). ``R`` rows, ``V`` = vocabulary size."""

    sentence: int
    vocab_size: int
    theta: np.ndarray          # [N+1] float64: Theta_0..Theta_N
    automaton: RowAutomaton
    uni_tokens: np.ndarray     # [U] int64, sorted
    uni_values: np.ndarray     # [U] float32: Theta_1 p(y)
    hi_indptr: np.ndarray      # [R+1] int64
    hi_tokens: np.ndarray      # [nnz] int64, sorted within a row
    hi_values: np.ndarray      # [nnz] float32
    posteriors: NgramPosteriors
    signature: dict[str, Any] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        return self.automaton.num_rows

    @property
    def nnz(self) -> int:
        return int(self.hi_tokens.size)

    def dense_rows(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The dense rows [len(rows), V] (float32), Theta_0 everywhere outside the stored part."""
        rows = np.asarray(rows, np.int64)
        out = np.full((rows.size, self.vocab_size), self.theta[0], np.float32)
        out[:, self.uni_tokens] += self.uni_values
        for k, r in enumerate(rows.tolist()):
            lo, hi = self.hi_indptr[r], self.hi_indptr[r + 1]
            out[k, self.hi_tokens[lo:hi]] += self.hi_values[lo:hi]
        return out

    def values(self, rows: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """L[rows[i], tokens[i]] for pairs of equal shape: the float32 values of :meth:`dense_rows` (same sums in the
        same order), without building dense rows."""
        rows, tokens = np.asarray(rows, np.int64), np.asarray(tokens, np.int64)
        out = np.full(rows.shape, self.theta[0], np.float32)
        if self.uni_tokens.size:
            j = np.minimum(np.searchsorted(self.uni_tokens, tokens), self.uni_tokens.size - 1)
            hit = self.uni_tokens[j] == tokens
            out[hit] += self.uni_values[j[hit]]
        if self.hi_tokens.size:
            keys = self._hi_keys
            query = row_key(rows, tokens)
            i = np.minimum(np.searchsorted(keys, query), keys.size - 1)
            hit = keys[i] == query
            out[hit] += self.hi_values[i[hit]]
        return out

    @functools.cached_property
    def _hi_keys(self) -> np.ndarray:
        """[nnz] the sorted (row, token) keys of the stored part (computed once)."""
        rows = np.repeat(np.arange(self.num_rows, dtype=np.int64), np.diff(self.hi_indptr))
        return row_key(rows, self.hi_tokens)

    def with_theta(self, theta: Theta) -> "LMatrix":
        """The same posteriors under another theta."""
        return build_lmatrix(self.posteriors, theta, self.vocab_size, self.sentence,
                             {**self.signature, "theta": theta.signature()})

    def nbytes(self) -> int:
        arrays = (self.uni_tokens, self.uni_values, self.hi_indptr, self.hi_tokens, self.hi_values,
                  self.automaton.trans_rows, self.automaton.trans_tokens, self.automaton.trans_next)
        return int(sum(a.nbytes for a in arrays))


def build_lmatrix(posteriors: NgramPosteriors, theta: Theta, vocab_size: int, sentence: int = 0,
                  signature: dict[str, Any] | None = None) -> LMatrix:
    """L from the posteriors of orders 1..N (N = posteriors.order <= theta's order)."""
    order = posteriors.order
    if order > theta.order:
        raise ValueError(f"posteriors of order {order} but theta only up to {theta.order}")
    if len(posteriors) and int(posteriors.tokens.max()) >= vocab_size:
        raise ValueError(f"an n-gram token id is outside the vocabulary of size {vocab_size}")
    th = np.asarray(theta.values[: order + 1], np.float64)
    tables = lmatrix_tables(posteriors.tokens, posteriors.values, th, order - 1)
    unigrams = np.flatnonzero(posteriors.lengths == 1)
    unigrams = unigrams[np.argsort(posteriors.tokens[unigrams, 0], kind="stable")]
    return LMatrix(
        sentence=int(sentence), vocab_size=int(vocab_size), theta=th,
        automaton=RowAutomaton.from_tables(tables, order - 1),
        uni_tokens=posteriors.tokens[unigrams, 0].copy(),
        uni_values=(th[1] * posteriors.values[unigrams]).astype(np.float32),
        hi_indptr=tables.hi_indptr, hi_tokens=tables.hi_tokens,
        hi_values=tables.hi_values.astype(np.float32), posteriors=posteriors, signature=dict(signature or {}))


def compile_kernels() -> None:
    """Compile the posterior, L and acceptor kernels (numba), or load them from numba's cache: what a server does
    once at start, so that its first request does not wait for the compiler (about 30 s without a cache)."""
    from lattices.acceptor import Acceptor
    from lattices.lattice import from_paths

    lattice = from_paths([((5, 6, 7), 0.5), ((5, 7), 1.0)])
    for nbest in (0, 2):
        build_lmatrix(ngram_posteriors(lattice, MAX_ORDER, nbest=nbest), Theta.from_precisions([60, 35, 21, 13]), 8)
    Acceptor.from_lattice(lattice, 1, 2)
