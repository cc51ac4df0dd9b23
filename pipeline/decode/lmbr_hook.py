"""LMBR decoding (Algorithm 1, lines 9-10): the L row of every hypothesis added to lambda * log P_NMT at each step.

Each hypothesis carries one row id of its sentence's L (lattices/batch.py: ids are global over the batch, so a row
also names its sentence). Per step, for R hypotheses:

    scores [R, V] = lambda * log P_NMT [R, V] + L[rows] [R, V]      one gather for the whole batch
    rows [R'] = next_rows(rows[index], tokens)                      reordered with the beam, then advanced

lambda is ``SearchSettings.weight`` (the decoder scales the NMT log-probabilities before the hook). The row of a
hypothesis is the longest suffix of its history (up to order - 1 tokens) that is a row of L; the first is the
row of [BOS]. A sentence without L (no lattice) cannot be decoded with LMBR: the store raises KeyError, which
:func:`lmbr_hook_factory` turns into a clear error naming the sentence.

Gains (``gains=``): ``"per_step"`` is the paper's rule, L added at every step, so a repeated n-gram is paid again
each time; ``"bounded"`` (:class:`BoundedLmbrHook`, lattices/gains.py) pays each n-gram of the evidence space at
most once per hypothesis, the at-least-once meaning of the posteriors and BLEU's clipping. It also carries the ids
of the n-grams each hypothesis has earned ([R, K], -1 padded), reordered with the beam:

    scores [R, V] = lambda * log P_NMT + L[rows] - gains of earned[r] that candidate y would earn again
    earned [R', K'] = earned[index] + the n-grams of (rows[index], tokens) not earned before

BOS is never an output. Every lattice path starts with ``<s>`` (lattices/units.py maps it to bos_id, so that the
history [BOS] is a row of L), so the unigram ``<s>`` has posterior 1 and L pays its gain in every row. A weak NMT
model at a small lambda does not hold the search back from collecting it, and ``<s>`` then appeared inside the outputs
(120 of 1000 eng-ger LNMT devtest lines of the former small profile, cutting words: "fre<s> die Beziehung ..."). The
hook sets BOS to -inf; no other token is masked (the pure NMT search masks none, as greedy decoding).
"""
from __future__ import annotations

from typing import Protocol, Sequence

import torch
from torch import Tensor

from lattices.batch import LMatrixBatch
from lattices.gains import GainBatch, NgramGains
from lattices.lmatrix import LMatrix
from pipeline.config import GAIN_FORMS
from pipeline.decode.hooks import HookFactory, ScoreHook
from pipeline.errors import DataError

__all__ = ["BoundedLmbrHook", "LmbrHook", "lmbr_hook_factory"]


class MatrixSource(Protocol):
    def get(self, sentences: Sequence[int]) -> list[LMatrix]: ...


class LmbrHook(ScoreHook):
    """Adds L[row] to the scores of every hypothesis and forbids BOS; keeps the rows aligned with the beam."""

    def __init__(self, batch: LMatrixBatch, bos_id: int) -> None:
        self.batch, self.bos_id = batch, bos_id
        self.rows = batch.initial_rows(bos_id)  # [R]: one per sentence at the start
        self.active = list(range(batch.num_sentences))  # the batch sentence of each sentence still decoding
        self._buffer: Tensor | None = None

    def scores(self, log_probs: Tensor, t: int) -> Tensor:
        """log_probs [R, V] (already times lambda) + L[rows] [R, V], with -inf at BOS (see the module docstring)."""
        r, v = log_probs.shape
        if self._buffer is None or self._buffer.shape[0] < r:
            self._buffer = torch.empty((r, v), dtype=self.batch.base.dtype, device=log_probs.device)
        scores = log_probs.add_(self.batch.rows(self.rows, out=self._buffer[:r]))
        scores[:, self.bos_id] = float("-inf")
        return scores

    def reorder(self, index: Tensor) -> None:
        self.rows = self.rows.index_select(0, index)

    def advance(self, tokens: Tensor) -> None:
        self.rows = self.batch.next_rows(self.rows, tokens)

    def select_sentences(self, keep: Tensor) -> None:
        self.active = [self.active[k] for k in keep.tolist()]  # row ids stay valid: they are batch-global

    def merge(self, other: ScoreHook, shift: int = 0) -> None:
        """One LMatrixBatch of both hooks' active sentences (finished ones are dropped); row ids remapped."""
        old = (self, other)
        merged = LMatrixBatch([h.batch.matrices[i] for h in old for i in h.active], self.batch.device,
                              self.batch.base.dtype)
        parts = []
        for hook, new_index in zip(old, self._new_positions(old, merged.device)):
            sentence = hook.batch.row_sentence[hook.rows]
            within = hook.rows - hook.batch.row_offsets[sentence]
            parts.append(merged.row_offsets[new_index[sentence]] + within)
        self.batch, self.rows = merged, torch.cat(parts)
        self.active = list(range(sum(len(h.active) for h in old)))

    @staticmethod
    def _new_positions(hooks: Sequence["LmbrHook"], device: torch.device) -> list[Tensor]:
        """Per hook, [its batch's sentences] -> the position of each active one in the merged batch (-1: gone)."""
        positions, first = [], 0
        for hook in hooks:
            new_index = torch.full((hook.batch.num_sentences,), -1, dtype=torch.long, device=device)
            new_index[torch.tensor(hook.active, dtype=torch.long, device=device)] = torch.arange(
                first, first + len(hook.active), device=device)
            positions.append(new_index)
            first += len(hook.active)
        return positions


class BoundedLmbrHook(LmbrHook):
    """LMBR with bounded gains: each n-gram of the evidence space is paid at most once per hypothesis."""

    def __init__(self, batch: LMatrixBatch, bos_id: int, gains: Sequence[NgramGains]) -> None:
        super().__init__(batch, bos_id)
        self.ngram_gains = list(gains)  # per batch sentence (kept for merges)
        self.gains = GainBatch(self.ngram_gains, batch.row_offsets, batch.base.dtype)
        self.earned = torch.full((self.rows.numel(), 0), -1, dtype=torch.long, device=batch.device)  # [R, K]
        # [BOS] is the history of every hypothesis, not a token it produced: n-grams ending in it earn nothing
        self.total = self._total_gains()  # [S]

    def _total_gains(self) -> Tensor:
        """[S] per batch sentence, the most its hypotheses can earn: the sum of its positive gains (inf when
        Theta_0 > 0, where every token adds a positive score)."""
        open_ended = torch.as_tensor([m.theta[0] > 0 for m in self.batch.matrices], device=self.batch.device)
        return self.gains.positive_totals().masked_fill(open_ended, float("inf"))

    def headroom(self) -> Tensor:
        """[R]: the positive gains of each row's sentence that the row has not earned yet. Every step also adds
        Theta_0 <= 0 and the NMT's lambda * log P <= 0, so no continuation of a row can add more."""
        left = self.total.index_select(0, self.batch.row_sentence[self.rows])
        if self.earned.shape[1]:
            earned = self.gains.gains[self.earned.clamp(min=0)].clamp(min=0).masked_fill(self.earned < 0, 0)
            left = left - earned.sum(1).to(left.dtype)
        return left

    def scores(self, log_probs: Tensor, t: int) -> Tensor:
        return self.gains.subtract_earned(super().scores(log_probs, t), self.rows, self.earned)

    def reorder(self, index: Tensor) -> None:
        super().reorder(index)
        self.earned = self.earned.index_select(0, index)

    def advance(self, tokens: Tensor) -> None:
        new = self.gains.earned_by(self.rows, tokens)                                # [R, order]
        seen = (self.earned[:, :, None] == new[:, None, :]).any(1) if self.earned.shape[1] else None
        if seen is not None:
            new = new.masked_fill(seen, -1)
        earned = torch.cat([self.earned, new], 1)
        self.earned = earned[:, (earned >= 0).any(0)]  # drop columns no row uses
        super().advance(tokens)

    def merge(self, other: ScoreHook, shift: int = 0) -> None:
        if not isinstance(other, BoundedLmbrHook):
            raise TypeError(f"a bounded-gain hook merges with another, not {type(other).__name__}")
        hooks = (self, other)
        gains = [h.ngram_gains[i] for h in hooks for i in h.active]
        offsets = torch.as_tensor([0] + [len(g) for g in gains], device=self.batch.device).cumsum(0)
        earned = []
        for hook, new_index in zip(hooks, self._new_positions(hooks, self.batch.device)):
            ids = hook.earned.clamp(min=0)
            sentence = hook.gains.sentence_of_ngram(ids)
            moved = offsets[new_index[sentence].clamp(min=0)] + ids - hook.gains.offsets[sentence]
            earned.append(torch.where(hook.earned >= 0, moved, hook.earned))
        width = max(e.shape[1] for e in earned)
        earned = [torch.nn.functional.pad(e, (0, width - e.shape[1]), value=-1) for e in earned]
        super().merge(other, shift)
        self.ngram_gains = gains
        self.gains = GainBatch(gains, self.batch.row_offsets, self.batch.base.dtype)
        self.earned = torch.cat(earned)
        self.total = self._total_gains()


def lmbr_hook_factory(store: MatrixSource, bos_id: int, sentence_ids: Sequence[int] | None = None,
                      vocab_size: int | None = None, gains: str = "per_step") -> HookFactory:
    """A hook factory for decode_sources / translate_lines: input index i uses L of sentence_ids[i] (default i).

    vocab_size: the NMT target vocabulary's size; an L over another vocabulary is refused. gains: "per_step" (the
    paper's rule) or "bounded" (each n-gram paid at most once per hypothesis).
    """
    if gains not in GAIN_FORMS:
        raise ValueError(f"gains must be one of {', '.join(GAIN_FORMS)}, not {gains!r}")

    def factory(indices: Sequence[int], device: torch.device) -> ScoreHook:
        wanted = [sentence_ids[i] if sentence_ids is not None else i for i in indices]
        try:
            matrices = store.get(wanted)
        except KeyError as e:
            raise DataError(f"no L matrix for sentence {e.args[0]} (was its lattice written and its L built?)") \
                from None
        if vocab_size is not None and matrices and matrices[0].vocab_size != vocab_size:
            raise DataError(f"L of sentence {wanted[0]} has {matrices[0].vocab_size} columns but the NMT target "
                            f"vocabulary has {vocab_size} tokens: it was built for another vocabulary")
        if gains == "bounded":
            return BoundedLmbrHook(LMatrixBatch(matrices, device), bos_id, [NgramGains.from_lmatrix(m)
                                                                           for m in matrices])
        return LmbrHook(LMatrixBatch(matrices, device), bos_id)

    return factory
