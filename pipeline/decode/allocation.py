"""Dynamic beam allocation (Post & Vilar 2018): a top-B that keeps room for hypotheses that meet constraints.

A hook with constraints that must be met (terminology, pipeline/decode/terms.py) gives an :class:`Allocation`
(hooks.py: ``hook.allocation()``). Without one, the constraints' tokens compete with the model's favourites on
score alone, and a beam of B is soon filled by hypotheses that ignore them. With one, step 3 of Algorithm 1 becomes:

    pool [N, P]      the B best candidates of each sentence, plus every row's constraint tokens (``extra``
                     [R, K]: the next token of each unmet constraint), which join even when far below the B best
    bank [N, P]      each candidate's progress: constraint tokens met after taking it (0 .. levels[n])
    quota [N, C+1]   B shared out over the banks 0 .. C = levels[n]: B // (C+1) each, the remainder to the highest
    top-B            in each bank its `quota` best candidates; the slots left over (banks with fewer candidates)
                     go round robin over the banks, highest first (the next best of each bank in turn), as in
                     Sockeye's implementation; the B chosen, best first

So a hypothesis that has just placed a constraint token survives beside better-scoring ones that have not, and the
finished set fills with hypotheses that meet every constraint. The pool is small (P = B + B*K), so the allocation
costs a few small tensor operations per step beside the usual top-B over [N, B*V].
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from pipeline.decode.scores import NEG_INF
from pipeline.decode.topk import TopCandidates

__all__ = ["Allocation", "allocated_top_candidates", "extra_candidates"]


@dataclass
class Allocation:
    """What a constraint hook tells the top-B at one step (R live rows, N sentences)."""

    extra: Tensor                                  # [R, K] int64: tokens that must be candidates (-1: none)
    progress: Callable[[Tensor, Tensor], Tensor]   # rows [M], tokens [M] -> [M] int64 bank of each candidate
    levels: Tensor                                 # [N] int64: the highest bank of each sentence (0: no banks)


def extra_candidates(grid: Tensor, row_slot: Tensor, beam: int, vocab: int, extra: Tensor) -> tuple[Tensor, Tensor]:
    """The scores and grid columns [N, B*K] of the rows' extra tokens (read from grid [N, B*V] before any pruning;
    -inf where a row has no extra token or a slot no row)."""
    num, k = grid.shape[0], extra.shape[1]
    scores = grid.new_full((num * beam, k), NEG_INF)
    columns = torch.zeros((num * beam, k), dtype=torch.long, device=grid.device)
    if k and row_slot.numel():
        sentence, slot = row_slot // beam, row_slot % beam
        column = slot[:, None] * vocab + extra.clamp(min=0)                               # [R, K]
        found = grid[sentence[:, None].expand_as(column), column].masked_fill(extra < 0, NEG_INF)
        scores[row_slot], columns[row_slot] = found, column
    return scores.view(num, beam * k), columns.view(num, beam * k)


def allocated_top_candidates(top: TopCandidates, index: Tensor, extras: tuple[Tensor, Tensor], slot_row: Tensor,
                             beam: int, vocab: int, allocation: Allocation) -> TopCandidates:
    """The top-B of each sentence under dynamic beam allocation.

    top, index [N, B]: the usual top-B and its grid columns; extras: extra_candidates(...) [N, B*K] each;
    slot_row [N, B]: the live row of each slot (-1: none).
    """
    extra_scores, extra_columns = extras
    scores = torch.cat([top.scores, extra_scores], dim=1)                                # [N, P]
    columns = torch.cat([index, extra_columns], dim=1)                                   # [N, P]
    num, pool = scores.shape
    earlier = torch.ones(pool, pool, dtype=torch.bool, device=scores.device).tril(-1)   # [P, P] j < i
    seen = (columns[:, :, None] == columns[:, None, :]) & (scores > NEG_INF)[:, None, :] & earlier
    scores = scores.masked_fill(seen.any(dim=2), NEG_INF)                               # each candidate once
    alive = scores > NEG_INF
    rows = slot_row.gather(1, (columns // vocab).clamp(max=beam - 1))                    # [N, P]
    bank = torch.zeros_like(columns)
    if bool(alive.any()):
        bank[alive] = allocation.progress(rows[alive], columns[alive] % vocab)
    levels = allocation.levels[:, None]                                                  # [N, 1]
    bank = torch.minimum(bank, levels)
    banks = levels + 1
    # quota of bank b: B // (C+1), plus one for the (B mod (C+1)) highest banks
    quota = beam // banks + ((levels - bank) < beam % banks).long()                     # [N, P] of each one's bank
    order = scores.argsort(dim=1, descending=True, stable=True)                          # [N, P]
    sorted_bank, sorted_alive = bank.gather(1, order), alive.gather(1, order)
    same_bank = (sorted_bank[:, :, None] == sorted_bank[:, None, :]) & sorted_alive[:, None, :]
    rank = (same_bank & earlier).sum(dim=2)                         # better ones in its bank
    chosen = sorted_alive & (rank < quota.gather(1, order))
    left = beam - chosen.sum(dim=1, keepdim=True)                                        # [N, 1] slots left over
    # round robin over the banks, highest first: the next best of each bank in turn
    turn = rank * (levels + 1) + (levels - sorted_bank)
    turn = turn.masked_fill(~sorted_alive | chosen, torch.iinfo(turn.dtype).max)
    place = turn.argsort(dim=1, stable=True).argsort(dim=1)                              # [N, P] its turn
    chosen |= sorted_alive & ~chosen & (place < left)
    picked = torch.zeros_like(chosen).scatter(1, order, chosen)                          # [N, P] in pool order
    best, where = scores.masked_fill(~picked, NEG_INF).topk(beam, dim=1)                 # [N, B] best first
    column = columns.gather(1, where)
    return TopCandidates(best, column // vocab, column % vocab)
