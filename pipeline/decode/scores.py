"""Step 1-2 of Algorithm 1: the scores of one step's candidates, laid out per sentence for the top-B selection.

Shapes: R live hypotheses ("rows") of N sentences, beam B, vocabulary V. A sentence owns B *slots* (n*B .. n*B+B-1);
``row_slot`` [R] (ascending) says which slot each live row occupies. Slots without a row (finished or pruned
hypotheses, or the B-1 empty slots of the first step) take part in the selection with score -inf.
"""
from __future__ import annotations

import torch
from torch import Tensor

NEG_INF = float("-inf")

__all__ = ["NEG_INF", "candidate_grid", "force_eos", "max_output_lengths", "slot_rows"]


def max_output_lengths(src_lengths: Tensor, a: float, b: int, position_limit: int | None = None) -> Tensor:
    """[N] int64 limits on the output tokens (EOS excluded): floor(a * |source| + b), at most position_limit.

    src_lengths [N] are the encoder's lengths (subwords + EOS); |source| excludes the EOS. At step t == limit only
    EOS can be chosen, so a hypothesis never has more than `limit` tokens before its EOS (as in greedy decoding).
    """
    words = (src_lengths - 1).clamp(min=0).double()
    limits = torch.floor(words * a + b).long().clamp(min=0)
    if position_limit is not None:
        limits = limits.clamp(max=position_limit - 1)  # step t reads position t: t <= limit < position_limit
    return limits


def force_eos(scores: Tensor, rows: Tensor, eos_id: int) -> Tensor:
    """scores [R, V] with every token but EOS set to -inf on the rows where rows [R] (bool) is True."""
    forbid = rows[:, None].expand_as(scores).clone()
    forbid[:, eos_id] = False
    return scores.masked_fill(forbid, NEG_INF)


def slot_rows(row_slot: Tensor, num_slots: int) -> Tensor:
    """[num_slots] int64: the live row of each slot, -1 where there is none (the inverse of row_slot [R])."""
    inverse = torch.full((num_slots,), -1, dtype=torch.long, device=row_slot.device)
    inverse[row_slot] = torch.arange(row_slot.numel(), device=row_slot.device)
    return inverse


def candidate_grid(candidates: Tensor, row_slot: Tensor, num_sentences: int, beam: int) -> Tensor:
    """candidates [R, V] (accumulated scores q_{t-1} + step scores) -> [N, B*V], -inf in the empty slots.

    When every slot is live the rows are already in slot order and the result is a view of `candidates`.
    """
    rows, vocab = candidates.shape
    if rows == num_sentences * beam:
        return candidates.view(num_sentences, beam * vocab)
    grid = candidates.new_full((num_sentences * beam, vocab), NEG_INF)
    grid.index_copy_(0, row_slot, candidates)
    return grid.view(num_sentences, beam * vocab)
