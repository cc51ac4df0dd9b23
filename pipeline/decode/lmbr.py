"""LMBR decoding (Algorithm 1, lines 9-10): the L row of every hypothesis added to lambda * log P_NMT at each step.

Each hypothesis carries one row id of its sentence's L (lattices/batch.py: ids are global over the batch, so a row
also names its sentence). Per step, for R hypotheses:

    scores [R, V] = lambda * log P_NMT [R, V] + L[rows] [R, V]      one gather for the whole batch
    rows [R'] = next_rows(rows[index], tokens)                      reordered with the beam, then advanced

lambda is ``SearchSettings.weight`` (the decoder scales the NMT log-probabilities before the hook). The row of a
hypothesis is the longest suffix of its history (up to order - 1 tokens) that is a row of L; the first is the
row of [BOS]. A sentence without L (no lattice) cannot be decoded with LMBR: the store raises KeyError, which
:func:`lmbr_hook_factory` turns into a clear error naming the sentence.
"""
from __future__ import annotations

from typing import Protocol, Sequence

import torch
from torch import Tensor

from lattices.batch import LMatrixBatch
from lattices.lmatrix import LMatrix
from pipeline.decode.hooks import HookFactory, ScoreHook
from pipeline.errors import DataError

__all__ = ["LmbrHook", "lmbr_hook_factory"]


class MatrixSource(Protocol):
    def get(self, sentences: Sequence[int]) -> list[LMatrix]: ...


class LmbrHook(ScoreHook):
    """Adds L[row] to the scores of every hypothesis; keeps the rows aligned with the beam."""

    def __init__(self, batch: LMatrixBatch, bos_id: int) -> None:
        self.batch = batch
        self.rows = batch.initial_rows(bos_id)  # [R]: one per sentence at the start
        self.active = list(range(batch.num_sentences))  # the batch sentence of each sentence still decoding
        self._buffer: Tensor | None = None

    def scores(self, log_probs: Tensor, t: int) -> Tensor:
        """log_probs [R, V] (already times lambda) + L[rows] [R, V]."""
        r, v = log_probs.shape
        if self._buffer is None or self._buffer.shape[0] < r:
            self._buffer = torch.empty((r, v), dtype=self.batch.base.dtype, device=log_probs.device)
        return log_probs.add_(self.batch.rows(self.rows, out=self._buffer[:r]))

    def reorder(self, index: Tensor) -> None:
        self.rows = self.rows.index_select(0, index)

    def advance(self, tokens: Tensor) -> None:
        self.rows = self.batch.next_rows(self.rows, tokens)

    def select_sentences(self, keep: Tensor) -> None:
        self.active = [self.active[k] for k in keep.tolist()]  # row ids stay valid: they are batch-global

    def merge(self, other: ScoreHook) -> None:
        """One LMatrixBatch of both hooks' active sentences (finished ones are dropped); row ids remapped."""
        old = (self, other)
        merged = LMatrixBatch([h.batch.matrices[i] for h in old for i in h.active], self.batch.device,
                              self.batch.base.dtype)
        parts, first = [], 0
        for hook in old:
            new_index = torch.full((hook.batch.num_sentences,), -1, dtype=torch.long, device=merged.device)
            new_index[torch.tensor(hook.active, dtype=torch.long, device=merged.device)] = torch.arange(
                first, first + len(hook.active), device=merged.device)
            sentence = hook.batch.row_sentence[hook.rows]
            within = hook.rows - hook.batch.row_offsets[sentence]
            parts.append(merged.row_offsets[new_index[sentence]] + within)
            first += len(hook.active)
        self.batch, self.rows = merged, torch.cat(parts)
        self.active = list(range(first))


def lmbr_hook_factory(store: MatrixSource, bos_id: int, sentence_ids: Sequence[int] | None = None,
                      vocab_size: int | None = None) -> HookFactory:
    """A hook factory for decode_sources / translate_lines: input index i uses L of sentence_ids[i] (default i).

    vocab_size: the NMT target vocabulary's size; an L over another vocabulary is refused.
    """

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
        return LmbrHook(LMatrixBatch(matrices, device), bos_id)

    return factory
