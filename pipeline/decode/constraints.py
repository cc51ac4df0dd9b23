"""Constrained search: each hypothesis follows one state of its sentence's acceptor (lattices/acceptor.py).

A score hook (hooks.py) that, per row, forbids (-inf) every token without an arc from the row's state, EOS outside
final states, and any token whose path could not reach a final state within the sentence's length limit; the
rest of the search is unchanged (Algorithm 1, note 2: constraints are masks applied before TOPB). With a weight
mu > 0 an allowed token also pays mu times its arc's cost (the acceptor's costs, pushed towards the start: for a
PBMT lattice, what the best string through the arc loses against the PBMT's best), so that the search combines
the NMT with the lattice's own scores (Stahlberg et al. 2016). Composed with LMBR through ChainHook, a hypothesis
scores lambda log P_NMT + L - mu cost on the acceptor's strings and -inf off them.

The acceptor of a sentence comes from elsewhere: its PBMT lattice mapped to units (lattice-constrained decoding),
or terminology constraints. A sentence with no acceptor (None), or whose acceptor accepts nothing within the
length limit, is decoded unconstrained, and `warn(input index, reason)` says so.

State, per row R: the batch sentence of the row and its state in that sentence's acceptor; the acceptors of the
batch as one table of arcs with batch-global states (``AcceptorBatch``):

    scores [R, V] = log_probs + mask [R, V]     mask: -mu cost on allowed tokens, -inf elsewhere (free rows: 0)
    state [R'] = next(state[index], tokens)     reordered with the beam, then advanced
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from lattices.acceptor import Acceptor
from pipeline.decode.hooks import HookFactory, ScoreHook

__all__ = ["AcceptorBatch", "AcceptorHook", "acceptor_hook_factory"]

_SHIFT = 32


class AcceptorBatch:
    """The acceptors of a batch's sentences on the device; states are batch-global (offset per sentence)."""

    def __init__(self, acceptors: Sequence[Acceptor], device: torch.device) -> None:
        sizes = np.asarray([a.num_states for a in acceptors], np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

        def cat(parts, dtype=torch.int64) -> Tensor:
            joined = np.concatenate(parts) if parts else np.zeros(0)
            return torch.as_tensor(joined).to(device=device, dtype=dtype)

        src = cat([a.arc_src + offsets[s] for s, a in enumerate(acceptors)])
        self.keys = (src << _SHIFT) | cat([a.arc_label for a in acceptors])          # [A] sorted
        self.dst = cat([a.arc_dst + offsets[s] for s, a in enumerate(acceptors)])     # [A]
        self.labels = cat([a.arc_label for a in acceptors])                            # [A]
        self.cost = cat([a.arc_cost for a in acceptors], torch.float32)                # [A]
        self.final_cost = cat([a.final_cost for a in acceptors], torch.float32)        # [Q]
        self.indptr = torch.as_tensor(np.searchsorted(src.cpu().numpy(), np.arange(offsets[-1] + 1)),
                                      device=device)                                   # [Q+1] arcs of each state
        self.final = cat([a.final for a in acceptors], torch.bool)                     # [Q]
        self.to_final = cat([a.to_final for a in acceptors])                           # [Q]
        self.offsets = torch.as_tensor(offsets, device=device)                         # [S+1]

    def mask(self, states: Tensor, steps_left: Tensor, eos_id: int, vocab: int, weight: float = 0.0,
             dtype: torch.dtype = torch.float32) -> Tensor:
        """[R] global states (-1: unconstrained) and [R] tokens still allowed before EOS -> [R, V] float: -inf on
        forbidden tokens, -weight * cost on allowed ones (0 on unconstrained rows)."""
        R = states.numel()
        constrained = states >= 0
        mask = torch.zeros(R, vocab, device=states.device, dtype=dtype)
        if self.final.numel() == 0:  # no sentence of the batch is constrained
            return mask
        mask[constrained] = float("-inf")
        q = states.clamp(min=0)
        starts, counts = self.indptr[q], (self.indptr[q + 1] - self.indptr[q]) * constrained
        total = int(counts.sum())
        if total:
            owner = torch.repeat_interleave(torch.arange(R, device=states.device), counts, output_size=total)
            arcs = (starts - (torch.cumsum(counts, 0) - counts))[owner] + torch.arange(total, device=states.device)
            reachable = self.to_final[self.dst[arcs]] + 1 <= steps_left[owner]  # the token, then the way to a final
            arcs = arcs[reachable]
            mask[owner[reachable], self.labels[arcs]] = (-weight * self.cost[arcs]).to(dtype)
        ends = constrained & self.final[q]
        mask[ends, eos_id] = (-weight * self.final_cost[q[ends]]).to(dtype)
        return mask

    def next_states(self, states: Tensor, tokens: Tensor) -> Tensor:
        """[R] global states and the tokens taken -> [R] next states (-1 stays -1: unconstrained)."""
        if self.keys.numel() == 0:
            return states
        query = (states.clamp(min=0) << _SHIFT) | tokens
        k = torch.searchsorted(self.keys, query).clamp_(max=self.keys.numel() - 1)
        found = self.keys[k] == query
        return torch.where(states >= 0, torch.where(found, self.dst[k], torch.full_like(k, -1)), states)


class AcceptorHook(ScoreHook):
    """Keeps every hypothesis of a sentence on its acceptor's strings, each token paying `weight` times its arc's
    cost (see the module docstring)."""

    def __init__(self, acceptors: Sequence[Acceptor | None], limits: Sequence[int], eos_id: int,
                 device: torch.device, weight: float = 0.0) -> None:
        self.eos_id, self.weight = eos_id, weight
        self.limits = torch.as_tensor(list(limits), dtype=torch.long, device=device)  # [N] max output tokens
        self.row_sentence = torch.arange(len(acceptors), device=device)                # [R] position in the batch
        self._tables(list(acceptors), device)
        start = self.batch.offsets[:-1]
        self.states = torch.where(self.constrained, start, torch.full_like(start, -1))  # [R] global, -1: free

    def _tables(self, acceptors: list[Acceptor | None], device: torch.device) -> None:
        """The tables of these acceptors; table_of[n]: the table entry of the batch's sentence n."""
        self.acceptors = acceptors
        self.table_of = torch.arange(len(acceptors), device=device)
        self.batch = AcceptorBatch([a if a is not None else Acceptor.empty() for a in acceptors], device)
        self.constrained = torch.as_tensor([a is not None for a in acceptors], dtype=torch.bool, device=device)

    def scores(self, log_probs: Tensor, t: int) -> Tensor:
        steps_left = self.limits[self.row_sentence] - t  # tokens allowed from here on, EOS excluded
        return log_probs.add_(self.batch.mask(self.states, steps_left, self.eos_id, log_probs.shape[1], self.weight,
                                              log_probs.dtype))

    def reorder(self, index: Tensor) -> None:
        self.states = self.states.index_select(0, index)
        self.row_sentence = self.row_sentence.index_select(0, index)

    def advance(self, tokens: Tensor) -> None:
        self.states = self.batch.next_states(self.states, tokens)

    def select_sentences(self, keep: Tensor) -> None:
        """The tables keep every sentence (global states stay valid); the positions are renumbered."""
        renumber = torch.full((self.limits.numel(),), -1, dtype=torch.long, device=keep.device)
        renumber[keep] = torch.arange(keep.numel(), device=keep.device)
        self.row_sentence = renumber[self.row_sentence]
        self.limits = self.limits.index_select(0, keep)
        self.table_of = self.table_of.index_select(0, keep)

    def local_states(self) -> Tensor:
        """[R] each row's state within its own sentence's acceptor (-1: unconstrained)."""
        offset = self.batch.offsets[self.table_of[self.row_sentence]]
        return torch.where(self.states >= 0, self.states - offset, self.states)

    def merge(self, other: ScoreHook, shift: int = 0) -> None:
        if not isinstance(other, AcceptorHook) or other.weight != self.weight:
            raise TypeError(f"an acceptor hook merges with another of the same weight, not {other!r}")
        local = torch.cat([self.local_states(), other.local_states()])
        acceptors = ([self.acceptors[i] for i in self.table_of.tolist()] +
                     [other.acceptors[i] for i in other.table_of.tolist()])
        self.row_sentence = torch.cat([self.row_sentence, other.row_sentence + self.limits.numel()])
        self.limits = torch.cat([self.limits, other.limits + shift])  # in this batch's steps
        self._tables(acceptors, self.states.device)
        self.states = torch.where(local >= 0, self.batch.offsets[self.row_sentence] + local, local)


def acceptor_hook_factory(acceptors: Sequence[Acceptor | None], limits: Sequence[int], eos_id: int,
                          warn: Callable[[int, str], None] = lambda index, reason: None,
                          weight: float = 0.0) -> HookFactory:
    """A hook factory for decode_sources / translate_lines: input index i follows acceptors[i] within limits[i]
    output tokens (the decoder's max_output_lengths of that source), paying `weight` times the acceptor's costs. A
    sentence whose acceptor is None, accepts nothing, or accepts nothing within its limit is decoded unconstrained
    and reported to `warn`."""
    usable: list[Acceptor | None] = []
    for index, (acceptor, limit) in enumerate(zip(acceptors, limits)):
        shortest = acceptor.shortest() if acceptor is not None else None
        if acceptor is not None and shortest is None:
            warn(index, "its acceptor accepts nothing (no complete path): decoded unconstrained")
        elif shortest is not None and shortest > limit:
            warn(index, f"its shortest accepted string has {shortest} tokens, more than the limit of {limit}: "
                        "decoded unconstrained")
        usable.append(acceptor if shortest is not None and shortest <= limit else None)

    def factory(indices: Sequence[int], device: torch.device) -> ScoreHook:
        return AcceptorHook([usable[i] for i in indices], [limits[i] for i in indices], eos_id, device, weight)

    return factory
