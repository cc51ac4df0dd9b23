"""The row lookup of L as a small deterministic automaton: next_row(row, token).

The rows of L are the histories h of 0..M tokens (M = order - 1 = 3) that occur in the evidence space; row 0 is
the empty history. A hypothesis uses the row of the LONGEST suffix of its history that is a row (exact: see
docs/algorithms.md section 4). That row depends only on the previous row and the new token: if s.y is a
row then s is a row (the rows are closed under prefixes and suffixes, being substrings of the evidence), so s is
a suffix of the previous row. The automaton therefore needs, per (row, token):

- an *exception* when the longest row-suffix of (row . token) has 2 or more tokens (few: about one per bigram,
  trigram and its contexts), stored sorted by key ``(row << 32) | token``;
- otherwise the *unigram row* of the token, when the token occurs in the evidence space;
- otherwise row 0 (the empty history): a token outside the evidence space resets the history.

:meth:`RowAutomaton.next_rows` is the vectorised numpy form (one ``searchsorted`` per table);
:class:`lattices.batch.LMatrixBatch` does the same in torch for a batch of sentences.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from lattices.lmatrix_kernels import LMatrixTables, lmatrix_tables

__all__ = ["RowAutomaton", "row_key"]

_SHIFT = 32


def row_key(rows: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """The int64 key of (row, token) pairs used by the transition tables."""
    return (np.asarray(rows, np.int64) << _SHIFT) | np.asarray(tokens, np.int64)


@dataclass(frozen=True)
class RowAutomaton:
    """Rows (row i is the history ``history_tokens[i]``, left-aligned, -1 after it; ``histories[i]`` as a tuple;
    row 0 is the empty history) and the transitions between them."""

    history_tokens: np.ndarray  # [R, max(max_history, 1)] int64
    max_history: int
    unigram_tokens: np.ndarray  # [U] sorted tokens y that are rows (y,)
    unigram_rows: np.ndarray    # [U] the row of (y,)
    trans_rows: np.ndarray      # [T] exceptions, sorted by (row, token)
    trans_tokens: np.ndarray    # [T]
    trans_next: np.ndarray      # [T]

    @classmethod
    def build(cls, ngrams: Iterable[Sequence[int]], max_history: int) -> "RowAutomaton":
        """Rows from the n-grams of orders 1..max_history of the evidence space (their substrings must be there)."""
        grams = sorted({tuple(int(x) for x in g) for g in ngrams if 1 <= len(g) <= max_history})
        tokens = np.full((len(grams), max(max_history, 1)), -1, np.int64)
        for i, g in enumerate(grams):
            tokens[i, :len(g)] = g
        return cls.from_tables(lmatrix_tables(tokens, np.zeros(len(grams)), np.zeros(max_history + 2), max_history),
                               max_history)

    @classmethod
    def from_tables(cls, tables: LMatrixTables, max_history: int) -> "RowAutomaton":
        return cls(tables.history_tokens, max_history, tables.unigram_tokens, tables.unigram_rows, tables.trans_rows,
                   tables.trans_tokens, tables.trans_next)

    @functools.cached_property
    def histories(self) -> tuple[tuple[int, ...], ...]:
        """The rows' histories as tuples (built on first use)."""
        return tuple(tuple(x for x in row if x >= 0) for row in self.history_tokens.tolist())

    @property
    def num_rows(self) -> int:
        return int(self.history_tokens.shape[0])

    def next_rows(self, rows: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Vectorised next_row: ``rows`` [B] and ``tokens`` [B] -> next rows [B] (int64)."""
        rows = np.asarray(rows, np.int64)
        tokens = np.asarray(tokens, np.int64)
        result = np.zeros(np.broadcast(rows, tokens).shape, np.int64)
        if self.unigram_tokens.size:
            j = np.minimum(np.searchsorted(self.unigram_tokens, tokens), self.unigram_tokens.size - 1)
            hit = self.unigram_tokens[j] == tokens
            result = np.where(hit, self.unigram_rows[j], result)
        if self.trans_rows.size:
            keys = self._trans_keys
            query = row_key(rows, tokens)
            i = np.minimum(np.searchsorted(keys, query), keys.size - 1)
            hit = keys[i] == query
            result = np.where(hit, self.trans_next[i], result)
        return result

    @functools.cached_property
    def _trans_keys(self) -> np.ndarray:
        """[T] the sorted keys of the exceptions (computed once)."""
        return row_key(self.trans_rows, self.trans_tokens)

    def next_row(self, row: int, token: int) -> int:
        return int(self.next_rows(np.asarray([row]), np.asarray([token]))[0])

    def row_of(self, history: Sequence[int]) -> int:
        """The row of a whole history (its longest suffix that is a row), by running the automaton from row 0."""
        row = 0
        for y in history:
            row = self.next_row(row, y)
        return row
