"""L on the device for a batch of sentences: the two operations the beam decoder calls at every step.

Build one :class:`LMatrixBatch` per sentence batch (S sentences, from :class:`lattices.lmatrix.LMatrixStore`
or :func:`lattices.lmatrix.load_shard`). Row ids are *batch-global*: the rows of sentence s are
``row_offsets[s] .. row_offsets[s+1]-1``, the first of them its empty history, so a row id also says which
sentence a hypothesis belongs to. Per hypothesis the decoder carries one row id (int64) and reorders it with
the beam like any other state (``rows.index_select(0, origin)``). With B hypotheses (S sentences x beam):

- ``initial_rows(bos_id)`` -> [S]: the row of the history ``[bos]`` of each sentence (repeat it per beam item);
- ``rows(rows [B])`` -> [B, V] float: L[row, y], Theta_0 wherever nothing is stored (step 2 of Algorithm 1:
  ``scores += batch.rows(rows)``);
- ``next_rows(rows [B], tokens [B])`` -> [B] int64: the row after appending the chosen tokens.

Everything is vectorised (``searchsorted``, ``repeat_interleave``, ``index_add_``); no Python loop over
hypotheses. Densification happens only for the B rows asked for: a per-sentence dense base row
Theta_0 + Theta_1 p(y) [S, V] is gathered and the sparse higher-order part of each row is added to it.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from lattices.lmatrix import LMatrix

__all__ = ["LMatrixBatch"]

_SHIFT = 32


def _cat(parts: Sequence[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


class LMatrixBatch:
    """The L matrices of S sentences (same vocabulary) as device tensors."""

    def __init__(self, matrices: Sequence[LMatrix], device: torch.device | str | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        if not matrices:
            raise ValueError("an LMatrixBatch needs at least one sentence")
        sizes = {m.vocab_size for m in matrices}
        if len(sizes) != 1:
            raise ValueError(f"the sentences of a batch must share one vocabulary, not sizes {sorted(sizes)}")
        self.vocab_size = V = sizes.pop()
        self.matrices = list(matrices)
        self.sentences = [m.sentence for m in matrices]
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        S = len(matrices)
        row_counts = np.asarray([m.num_rows for m in matrices], np.int64)
        row_offsets = np.concatenate([[0], np.cumsum(row_counts)])
        # dense base per sentence: Theta_0 + Theta_1 p(y)
        base = np.empty((S, V), np.float32)
        for s, m in enumerate(matrices):
            base[s] = m.theta[0]
            base[s, m.uni_tokens] += m.uni_values
        # higher-order part, CSR over batch-global rows
        nnz_offsets = np.concatenate([[0], np.cumsum([m.nnz for m in matrices])])
        indptr = _cat([m.hi_indptr[:-1] + nnz_offsets[s] for s, m in enumerate(matrices)] + [nnz_offsets[-1:]],
                      np.int64)
        # transitions, keyed (global row << 32) | token, sorted since sentences and rows ascend
        trans_keys = _cat([((m.automaton.trans_rows + row_offsets[s]) << _SHIFT) | m.automaton.trans_tokens
                           for s, m in enumerate(matrices)], np.int64)
        trans_next = _cat([m.automaton.trans_next + row_offsets[s] for s, m in enumerate(matrices)], np.int64)
        uni_keys = _cat([(np.int64(s) << _SHIFT) | m.automaton.unigram_tokens for s, m in enumerate(matrices)],
                        np.int64)
        uni_rows = _cat([m.automaton.unigram_rows + row_offsets[s] for s, m in enumerate(matrices)], np.int64)
        row_sentence = np.repeat(np.arange(S, dtype=np.int64), row_counts)

        def t(a: np.ndarray, dt=torch.int64) -> torch.Tensor:
            return torch.as_tensor(a).to(device=self.device, dtype=dt)

        self.row_offsets = t(row_offsets)           # [S+1]
        self.row_sentence = t(row_sentence)         # [R]
        self.base = t(base, dtype)                  # [S, V]
        self.hi_indptr = t(indptr)                  # [R+1]
        self.hi_tokens = t(_cat([m.hi_tokens for m in matrices], np.int64))   # [nnz]
        self.hi_values = t(_cat([m.hi_values for m in matrices], np.float32), dtype)
        self.trans_keys = t(trans_keys)             # [T]
        self.trans_next = t(trans_next)             # [T]
        self.uni_keys = t(uni_keys)                 # [U]
        self.uni_rows = t(uni_rows)                 # [U]

    @property
    def num_sentences(self) -> int:
        return len(self.sentences)

    @property
    def num_rows(self) -> int:
        return int(self.row_sentence.numel())

    def empty_rows(self) -> torch.Tensor:
        """[S] the empty-history row of each sentence."""
        return self.row_offsets[:-1].clone()

    def initial_rows(self, bos_id: int) -> torch.Tensor:
        """[S] the row of the history [bos] (``Vocabulary.bos_id``) of each sentence."""
        empty = self.empty_rows()
        return self.next_rows(empty, torch.full_like(empty, int(bos_id)))

    def sentence_of(self, rows: torch.Tensor) -> torch.Tensor:
        """[B] the batch index of the sentence of each row."""
        return self.row_sentence[rows]

    def rows(self, rows: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """[B] row ids -> [B, V] dense L rows (Theta_0 + unigram part + the row's higher-order part).

        ``out``: an optional contiguous [B, V] buffer to write into (reused across steps, it saves the
        allocation of a fresh B x V tensor per step).
        """
        rows = rows.to(self.device, torch.int64)
        B, V = rows.numel(), self.vocab_size
        if out is None:
            out = self.base.index_select(0, self.row_sentence[rows])
        else:
            torch.index_select(self.base, 0, self.row_sentence[rows], out=out)
        starts = self.hi_indptr[rows]
        counts = self.hi_indptr[rows + 1] - starts
        total = int(counts.sum())
        if total:
            owner = torch.repeat_interleave(torch.arange(B, device=self.device), counts, output_size=total)
            # entry k of the flattened list belongs to row owner[k]; its index in hi_* is starts - first + k
            shift = starts - (torch.cumsum(counts, 0) - counts)
            idx = shift[owner] + torch.arange(total, device=self.device)
            out.view(-1).index_add_(0, owner * V + self.hi_tokens[idx], self.hi_values[idx])
        return out

    def next_rows(self, rows: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """[B] rows and [B] chosen tokens -> [B] next rows (a token outside the evidence -> the empty row)."""
        rows = rows.to(self.device, torch.int64)
        tokens = tokens.to(self.device, torch.int64)
        sentence = self.row_sentence[rows]
        result = self.row_offsets[sentence]
        if self.uni_keys.numel():
            query = (sentence << _SHIFT) | tokens
            j = torch.searchsorted(self.uni_keys, query).clamp_(max=self.uni_keys.numel() - 1)
            result = torch.where(self.uni_keys[j] == query, self.uni_rows[j], result)
        if self.trans_keys.numel():
            query = (rows << _SHIFT) | tokens
            i = torch.searchsorted(self.trans_keys, query).clamp_(max=self.trans_keys.numel() - 1)
            result = torch.where(self.trans_keys[i] == query, self.trans_next[i], result)
        return result
