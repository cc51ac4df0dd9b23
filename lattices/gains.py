"""Bounded LMBR gains: each n-gram of the evidence space pays Theta_n * p(u) at most once per hypothesis.

The paper's rule (ALGORITHMS.md section 1) adds L[h, y] = Theta_0 + sum_n Theta_n p(suffix_{n-1}(h) . y) at every
step, so a hypothesis that repeats a high-posterior n-gram is paid again for each repetition, although p(u) is the
probability that u occurs at least once and BLEU clips repeated n-grams. Under bounded gains a hypothesis y scores

    sum_t Theta_0  +  sum over the DISTINCT n-grams u of y found in the evidence space of Theta_|u| p(u)

(Tromble et al. 2008's linear gain with clipped counts). The decoder keeps, per hypothesis, the ids of the n-grams
it has earned; a candidate token is scored by its L row minus the gains of the n-grams it would earn again.

Per sentence (numpy, :class:`NgramGains`): every n-gram u of the evidence space keyed by (row of its context u[:-1],
last token) with its gain Theta_|u| p(u), and for every row of L the rows of its last k tokens (k = 0..order-1).
For a batch (torch, :class:`GainBatch`): the same tables with batch-global ids, and the two operations a step needs:

- ``earned_by(rows [R], tokens [R])`` -> [R, order] n-gram ids (-1: none) that appending the tokens earns;
- ``subtract_earned(scores [R, V], rows [R], earned [R, K])``: scores[r, y] -= the gains of the n-grams already in
  earned[r] that candidate y at row rows[r] would earn again.

Rows follow lattices/batch.py (batch-global, :class:`lattices.batch.LMatrixBatch`): the row of a hypothesis is the
longest suffix of its history that is a row of L, and every context of an n-gram of the evidence space is a row,
so the n-gram of order n earned by token y at row h is (suffix row of h of length n-1, y) whenever h has n-1 tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from lattices.lmatrix import LMatrix

__all__ = ["GainBatch", "NgramGains"]

_SHIFT = 32


@dataclass(frozen=True)
class NgramGains:
    """The gains of one sentence's n-grams, sorted by key (context row << 32) | last token."""

    keys: np.ndarray         # [G] int64, sorted
    gains: np.ndarray        # [G] float32: Theta_n p(u)
    orders: np.ndarray       # [G] int64: n
    contexts: np.ndarray     # [G] int64: the row of u[:-1]
    tokens: np.ndarray       # [G] int64: u[-1]
    suffix_rows: np.ndarray  # [R, order] int64: row of the last k tokens of each row's history (-1: shorter)

    @classmethod
    def from_lmatrix(cls, matrix: LMatrix) -> "NgramGains":
        """The tables of one sentence's L, vectorised over its n-grams and rows.

        Every prefix and every suffix of a row's history is a row (lattices/row_automaton.py), so running the row
        automaton from the empty row over a prefix or a suffix ends on that very row: the context row of an n-gram
        is the automaton run over its first n-1 tokens, and suffix_rows[row, k] the run over the last k tokens of
        the row's history."""
        automaton, posteriors = matrix.automaton, matrix.posteriors
        order, grams, lengths = posteriors.order, posteriors.tokens, posteriors.lengths
        contexts = np.zeros(lengths.size, np.int64)
        for i in range(order - 1):
            longer = np.flatnonzero(lengths > i + 1)
            contexts[longer] = automaton.next_rows(contexts[longer], grams[longer, i])
        tokens = grams[np.arange(lengths.size), lengths - 1]
        keys = (contexts << _SHIFT) | tokens
        gains = np.asarray(matrix.theta, np.float64)[lengths] * posteriors.values
        by_key = np.argsort(keys, kind="stable")
        history = automaton.history_tokens
        history_lengths = (history >= 0).sum(axis=1)
        suffix = np.full((history.shape[0], order), -1, np.int64)
        suffix[:, 0] = 0
        for k in range(1, order):
            rows = np.flatnonzero(history_lengths >= k)
            run = np.zeros(rows.size, np.int64)
            for j in range(k):
                run = automaton.next_rows(run, history[rows, history_lengths[rows] - k + j])
            suffix[rows, k] = run
        return cls(keys[by_key], gains[by_key].astype(np.float32), lengths[by_key].astype(np.int64),
                   contexts[by_key], tokens[by_key], suffix)

    def __len__(self) -> int:
        return int(self.keys.size)


class GainBatch:
    """The n-gram gains of a batch's sentences on the device; n-gram ids and rows are batch-global."""

    def __init__(self, gains: Sequence[NgramGains], row_offsets: torch.Tensor, dtype: torch.dtype = torch.float32
                 ) -> None:
        device = row_offsets.device
        sizes = [len(g) for g in gains]
        offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        rows = row_offsets.cpu().numpy()

        def cat(parts: list[np.ndarray], dt=torch.int64) -> torch.Tensor:
            joined = np.concatenate(parts) if parts else np.zeros(0)
            return torch.as_tensor(joined).to(device=device, dtype=dt)

        shifted_contexts = [g.contexts + rows[s] for s, g in enumerate(gains)]
        self.keys = cat([(c << _SHIFT) | g.tokens for c, g in zip(shifted_contexts, gains)])   # [G] sorted
        self.gains = cat([g.gains for g in gains], dtype)                                       # [G]
        self.orders = cat([g.orders for g in gains])                                            # [G]
        self.contexts = cat(shifted_contexts)                                                   # [G]
        self.tokens = cat([g.tokens for g in gains])                                            # [G]
        self.suffix_rows = cat([np.where(g.suffix_rows >= 0, g.suffix_rows + rows[s], -1)
                                for s, g in enumerate(gains)])                                  # [R_all, order]
        self.offsets = torch.as_tensor(offsets, device=device)                                  # [S+1]
        self.order = int(self.suffix_rows.shape[1]) if self.suffix_rows.numel() else 1

    def earned_by(self, rows: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """[R] rows and [R] appended tokens -> [R, order] ids of the n-grams earned (orders 1..order; -1: none)."""
        contexts = self.suffix_rows[rows]                                        # [R, order]
        if self.keys.numel() == 0:
            return torch.full_like(contexts, -1)
        query = (contexts.clamp(min=0) << _SHIFT) | tokens[:, None]
        found = torch.searchsorted(self.keys, query).clamp_(max=self.keys.numel() - 1)
        hit = (self.keys[found] == query) & (contexts >= 0)
        return torch.where(hit, found, torch.full_like(found, -1))

    def subtract_earned(self, scores: torch.Tensor, rows: torch.Tensor, earned: torch.Tensor) -> torch.Tensor:
        """scores [R, V] minus, for every earned[r, k] >= 0 that the candidate earned's token would earn again at
        row rows[r] (its context is the suffix of rows[r] of its length), that n-gram's gain. In place."""
        if earned.numel() == 0:
            return scores
        ids = earned.clamp(min=0)                                                # [R, K]
        orders = self.orders[ids]
        suffix = self.suffix_rows[rows].gather(1, (orders - 1).clamp(min=0))     # [R, K]: context rows now
        again = (earned >= 0) & (suffix == self.contexts[ids])
        if not bool(again.any()):
            return scores
        r, k = again.nonzero(as_tuple=True)
        flat = r * scores.shape[1] + self.tokens[ids[r, k]]
        scores.view(-1).index_add_(0, flat, -self.gains[ids[r, k]].to(scores.dtype))
        return scores

    def positive_totals(self) -> torch.Tensor:
        """[S] the sum of each sentence's positive gains."""
        sentences = self.offsets.numel() - 1
        if self.gains.numel() == 0:
            return torch.zeros(sentences, dtype=self.gains.dtype, device=self.offsets.device)
        owner = self.sentence_of_ngram(torch.arange(self.gains.numel(), device=self.offsets.device))
        return torch.zeros(sentences, dtype=self.gains.dtype, device=self.offsets.device).index_add_(
            0, owner, self.gains.clamp(min=0))

    def sentence_of_ngram(self, ids: torch.Tensor) -> torch.Tensor:
        """[...] n-gram ids (>= 0) -> the batch index of their sentence."""
        return torch.searchsorted(self.offsets, ids, right=True) - 1
