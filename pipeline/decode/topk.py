"""Step 3 of Algorithm 1: early pruning, then the top-B candidates of each sentence and where they come from.

Input: the candidate grid [N, B*V] of :func:`pipeline.decode.scores.candidate_grid`: entry (n, b*V + y) is the
accumulated score of extending slot b of sentence n with token y (-inf: no such candidate).

Two EOS policies (docs/algorithms.md, section 5). The paper's: the top B candidates, EOS among them finish and the
others live on, so a step that finishes e hypotheses leaves B - e rows and the beam refills at the next step. The
full beam (:func:`full_beam_candidates`; Hugging Face's `generate`, fairseq): the top 2B candidates, EOS among the
first B ranks finish, and the B best candidates that are not EOS live on, so every step keeps B rows.

The top-k of a wide grid goes through :func:`row_topk`: the maximum of each block of CHUNK entries, the k blocks
with the highest maxima, and the top-k among those blocks' entries. The k best entries lie in those blocks (a block
that holds none of them has its maximum below the k-th best), so the scores are torch.topk's exactly; only among
exactly tied scores may another index be chosen. On a CPU that is several times faster than torch.topk over the
whole row, whose partial sort is scalar where the blocks' maxima are vector loads.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from pipeline.decode.scores import NEG_INF

__all__ = ["CHUNK", "TopCandidates", "full_beam_candidates", "prune_below_threshold", "row_topk", "top_candidates"]

#: Block width of row_topk's first pass (entries of one row).
CHUNK = 128


def prune_below_threshold(grid: Tensor, threshold: float) -> Tensor:
    """Drop (set to -inf, in place) the candidates whose probability is below threshold x the best of their sentence.

    grid [N, K] holds log-scores: a candidate c survives iff score(c) >= max_n + log(threshold). threshold 0
    keeps everything; 1 keeps only the best (and its ties). The paper's accelerated system uses 0.01.
    """
    if threshold <= 0:
        return grid
    best = grid.max(dim=1, keepdim=True).values
    return grid.masked_fill_(grid < best + math.log(threshold), NEG_INF)


@dataclass
class TopCandidates:
    """The B best candidates of each sentence, best first: all [N, B]."""

    scores: Tensor  # float: accumulated scores q_t (-inf: no candidate in this rank)
    origin: Tensor  # int64: the slot b in [0, B) of the sentence that the candidate extends
    tokens: Tensor  # int64: the token y it appends

    @property
    def alive(self) -> Tensor:
        """[N, B] bool: a real candidate (finite score)."""
        return self.scores > NEG_INF


def row_topk(grid: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """(scores, index), both [N, k], best first: the k largest entries of each row of grid [N, K], as torch.topk.

    Rows narrower than 8 x k blocks go to torch.topk itself; wider ones are searched block by block (module doc).
    """
    n, width = grid.shape
    whole = width - width % CHUNK                                # entries in whole blocks; the rest is the tail
    if whole < 8 * k * CHUNK or grid.device.type != "cpu":
        return grid.topk(k, dim=1)
    maxima = grid[:, :whole].unflatten(1, (whole // CHUNK, CHUNK)).amax(dim=2)          # [N, K // CHUNK]
    blocks = maxima.topk(k, dim=1).indices                                                # [N, k]
    index = (blocks.unsqueeze(2) * CHUNK + torch.arange(CHUNK, device=grid.device)).flatten(1)  # [N, k*CHUNK]
    if whole < width:
        index = torch.cat([index, torch.arange(whole, width, device=grid.device).expand(n, -1)], dim=1)
    scores, pick = grid.gather(1, index).topk(k, dim=1)
    return scores, index.gather(1, pick)


def top_candidates(grid: Tensor, beam: int, vocab_size: int) -> TopCandidates:
    """Top-`beam` per row of grid [N, B*V], decomposed into origin slot (index // V) and token (index % V)."""
    scores, index = row_topk(grid, beam)
    return TopCandidates(scores, index // vocab_size, index % vocab_size)


def full_beam_candidates(grid: Tensor, beam: int, vocab_size: int, eos_id: int) -> tuple[TopCandidates, TopCandidates]:
    """The full-beam policy over grid [N, B*V]: (live, ending), both [N, B], best first.

    live: the B best candidates that are not EOS among the top 2B (-inf where fewer); ending: the top B candidates
    with every one that is not EOS set to -inf (the EOS candidates that finish).
    """
    wide = top_candidates(grid, min(2 * beam, grid.shape[1]), vocab_size)                  # [N, 2B]
    is_eos = wide.tokens == eos_id
    ending = TopCandidates(wide.scores[:, :beam].masked_fill(~is_eos[:, :beam], NEG_INF), wide.origin[:, :beam],
                           wide.tokens[:, :beam])
    rank = is_eos.long() * wide.scores.shape[1] + torch.arange(wide.scores.shape[1], device=grid.device)
    pick = rank.argsort(dim=1)[:, :beam]                          # the non-EOS first, each group in score order
    scores = wide.scores.gather(1, pick).masked_fill(is_eos.gather(1, pick), NEG_INF)
    live = TopCandidates(scores, wide.origin.gather(1, pick), wide.tokens.gather(1, pick))
    return live, ending
