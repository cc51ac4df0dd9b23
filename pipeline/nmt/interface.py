"""The contract between NMT models and the decoders that search with them.

A decoder never looks inside a model. It encodes a batch of sources once, advances a batch of decoder states by
one token at a time, and reorders the states whenever the beam is reshuffled:

    state = model.encode(src, src_lengths)          src [N, S] int64, src_lengths [N] int64   -> state of N rows
    state = model.reorder(state, index)             index [B] int64 of rows of the old state  -> state of B rows
    state = model.reorder(state, index, same_sources=True)   the same, when new row i has the source of old row i
    log_probs, state = model.step(state, prev)      prev [B] int64 (bos_id first)             -> [B, V] float32

N is the number of sentences, S the padded source length, B the rows of the decoder batch (hypotheses) and V the
target vocabulary. Every tensor of a :class:`DecoderState` has the batch on its first axis, so reordering is one
``index_select`` per tensor and an index may repeat rows: beam expansion of N sentences to N*K hypotheses is
``reorder(state, torch.arange(N).repeat_interleave(K))``. All rows of a state share one time index (the number of
tokens consumed), as batched beam search needs.

Tensors that depend only on a row's source sentence (encoder memory, attention keys, masks) are named in
``DecoderState.per_source``, with the axis of their source positions. In beam search most steps reshuffle
hypotheses *within* each sentence's block of rows, so the row -> source map is unchanged; the decoder then says
``same_sources=True`` and those tensors are not copied (Devlin 2017: keep the source side out of the per-step work).
A model may ignore the flag. ``DecoderState.concat`` joins the states of two batches at the same time index (the
streaming decoder's refill), padding the source axes to the longer source.

Caches that grow by one entry per target token (a Transformer's self-attention keys and values) are named in
``DecoderState.per_time``, with their time axis. Their first ``time`` entries are valid; ``select`` copies those into a
new tensor with one free entry after them, so that the next ``step`` writes its entry in place instead of copying
the whole cache again. A state with a free entry may be stepped once (the step fills the entry); to continue a state
in several ways, reorder it into several rows first.

A model may instead keep a cache that is not per row: ``DecoderState.shared`` tensors (e.g. the keys and values of
every row at every step, which the rows read through a per-row table of their ancestors: pipeline/nmt/ancestry.py).
``select`` and ``narrow_sources`` keep them as they are; states with shared tensors are not joined.

:class:`Ensemble` implements the same contract over several models: it averages their log-probabilities per step
(a log-linear combination with equal weights) and holds their states side by side in one DecoderState.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

import torch
from torch import Tensor, nn


@dataclass
class DecoderState:
    """Per-row decoder state: named tensors, each [B, ...], and the number of target tokens consumed so far.

    per_source: the tensors whose row depends only on the row's source sentence -> the axis of their source
    positions (padding beyond a sentence's length must be masked by the model, e.g. a False in a mask).
    per_time: the caches along the target time -> their time axis (the first `time` entries are valid; see the
    module docstring for the free entry that `select` leaves).
    shared: tensors that are not per row (no batch axis), kept as they are by `select` and `narrow_sources`.
    """

    tensors: dict[str, Tensor] = field(default_factory=dict)
    time: int = 0
    per_source: Mapping[str, int] = field(default_factory=dict)
    per_time: Mapping[str, int] = field(default_factory=dict)
    shared: Mapping[str, Tensor] = field(default_factory=dict)

    @property
    def batch_size(self) -> int:
        return next(iter(self.tensors.values())).shape[0]

    def select(self, index: Tensor, same_sources: bool = False) -> "DecoderState":
        """The rows `index` [B'] of every tensor (rows may repeat): the state of a reordered batch of B' rows.

        same_sources: new row i has the source of old row i (so B' == B), and the per_source tensors are kept as is.
        """
        keep = self.per_source if same_sources else {}
        selected = {}
        for name, tensor in self.tensors.items():
            if name in keep:
                selected[name] = tensor
            elif name in self.per_time:
                selected[name] = _select_with_free_entry(tensor, index, self.per_time[name], self.time)
            else:
                selected[name] = tensor.index_select(0, index)
        return DecoderState(selected, self.time, self.per_source, self.per_time, self.shared)

    def narrow_sources(self, width: int) -> "DecoderState":
        """The state with its source axes cut to the first `width` positions (views): for rows whose sources are all
        at most `width` long, so that only padding is cut."""
        tensors = {k: v.narrow(self.per_source[k], 0, width) if k in self.per_source and
                   v.shape[self.per_source[k]] > width else v for k, v in self.tensors.items()}
        return DecoderState(tensors, self.time, self.per_source, self.per_time, self.shared)

    @staticmethod
    def concat(states: Sequence["DecoderState"], any_time: bool = False) -> "DecoderState":
        """The rows of several states one after the other, with the same tensors; all at one time index, or, with
        `any_time` (only for a model that joins at any step, see StepModel), at the first state's. Source axes are
        padded with zeros (False for masks) to the longest source."""
        first = states[0]
        if any(s.shared for s in states):
            raise ValueError("states with shared tensors cannot be joined")
        if any(s.tensors.keys() != first.tensors.keys() for s in states):
            raise ValueError("only states with the same tensors can be joined")
        if any(s.time != first.time for s in states) and (not any_time or first.per_time):
            raise ValueError("only states at the same time index can be joined (this model's state depends on it)")
        joined = {}
        for name in first.tensors:
            parts = [s.tensors[name] for s in states]
            axis = first.per_source.get(name)
            if axis is not None:
                longest = max(p.shape[axis] for p in parts)
                parts = [_pad_axis(p, axis, longest) for p in parts]
            if name in first.per_time:  # the valid entries only (free ones may differ between the parts)
                parts = [p.narrow(first.per_time[name], 0, first.time) for p in parts]
            joined[name] = torch.cat(parts, dim=0)
        return DecoderState(joined, first.time, first.per_source, first.per_time)


def _select_with_free_entry(cache: Tensor, index: Tensor, axis: int, time: int) -> Tensor:
    """The rows `index` of `cache`'s first `time` entries along `axis`, in a new tensor with one free entry after
    them (one copy; the next step fills the entry in place)."""
    shape = list(cache.shape)
    shape[0], shape[axis] = index.shape[0], time + 1
    selected = cache.new_empty(shape)
    torch.index_select(cache.narrow(axis, 0, time), 0, index, out=selected.narrow(axis, 0, time))
    return selected


def _pad_axis(tensor: Tensor, axis: int, size: int) -> Tensor:
    missing = size - tensor.shape[axis]
    if not missing:
        return tensor
    shape = list(tensor.shape)
    shape[axis] = missing
    return torch.cat([tensor, tensor.new_zeros(shape)], dim=axis)


class StepModel(Protocol):
    """What a decoder needs: the three calls above and the target special ids (from the vocabulary).

    joins_at_any_step: a step computes the same whatever the state's time index (a GRU; not a Transformer, whose
    positions and caches follow the time), so the states of sentences that started at different steps can share
    one batch (DecoderState.concat with any_time; the streaming decoder's and the server's joins).
    """

    bos_id: int
    eos_id: int
    pad_id: int
    tgt_vocab_size: int
    joins_at_any_step: bool

    def encode(self, src: Tensor, src_lengths: Tensor) -> DecoderState: ...

    def step(self, state: DecoderState, prev_tokens: Tensor) -> tuple[Tensor, DecoderState]: ...

    def reorder(self, state: DecoderState, index: Tensor, same_sources: bool = False) -> DecoderState: ...


class NMTModel(nn.Module, abc.ABC):
    """Base of the encoder-decoder models: the step interface plus a teacher-forced `forward` for training.

    `config` is the architecture's frozen config dataclass (vocabulary sizes and special ids included); it is what a
    checkpoint stores beside the weights.
    """

    joins_at_any_step = False  # see StepModel

    def __init__(self, config) -> None:
        super().__init__()
        self.config = config

    @property
    def bos_id(self) -> int:
        return self.config.bos_id

    @property
    def eos_id(self) -> int:
        return self.config.eos_id

    @property
    def pad_id(self) -> int:
        return self.config.pad_id

    @property
    def tgt_vocab_size(self) -> int:
        return self.config.tgt_vocab_size

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @abc.abstractmethod
    def encode(self, src: Tensor, src_lengths: Tensor) -> DecoderState:
        """Encode src [N, S] (padded after src_lengths [N]) into the initial decoder state of N rows (time 0)."""

    @abc.abstractmethod
    def step(self, state: DecoderState, prev_tokens: Tensor) -> tuple[Tensor, DecoderState]:
        """Consume prev_tokens [B]; return log-probabilities [B, V] of the next token and the state at time + 1."""

    def reorder(self, state: DecoderState, index: Tensor, same_sources: bool = False) -> DecoderState:
        """The state of rows `index` [B'] (int64, on the model's device); rows may repeat (same_sources: see
        DecoderState.select)."""
        return state.select(index, same_sources)

    @abc.abstractmethod
    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits [N, T, V] for decoder inputs tgt_in [N, T] (bos_id then the target tokens)."""

    def score(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Log-probabilities [N, T, V] of a full forward pass (the reference the incremental `step` must match)."""
        return torch.log_softmax(self.forward(src, src_lengths, tgt_in).float(), dim=-1)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in {id(p): p for p in self.parameters()}.values())


class Ensemble:
    """Several models decoded as one: per step, the mean of their log-probabilities [B, V].

    The models must share the target vocabulary (size and special ids). The ensemble's state is one DecoderState
    whose tensors are the members' tensors under the prefix "<member index>.", so a decoder reorders it like any
    other state. An ensemble of one model gives that model's log-probabilities unchanged.
    """

    def __init__(self, models: Sequence[StepModel]) -> None:
        if not models:
            raise ValueError("an ensemble needs at least one model")
        first = models[0]
        for i, m in enumerate(models[1:], start=1):
            ours = (m.tgt_vocab_size, m.bos_id, m.eos_id, m.pad_id)
            theirs = (first.tgt_vocab_size, first.bos_id, first.eos_id, first.pad_id)
            if ours != theirs:
                raise ValueError(f"ensemble member {i} has target vocabulary (size, bos, eos, pad) {ours}, "
                                 f"member 0 has {theirs}")
        self.models = list(models)

    bos_id = property(lambda self: self.models[0].bos_id)
    eos_id = property(lambda self: self.models[0].eos_id)
    pad_id = property(lambda self: self.models[0].pad_id)
    tgt_vocab_size = property(lambda self: self.models[0].tgt_vocab_size)

    def __len__(self) -> int:
        return len(self.models)

    @property
    def joins_at_any_step(self) -> bool:
        return all(getattr(m, "joins_at_any_step", False) for m in self.models)

    def eval(self) -> "Ensemble":
        for m in self.models:
            if isinstance(m, nn.Module):
                m.eval()
        return self

    @staticmethod
    def _join(states: Sequence[DecoderState]) -> DecoderState:
        tensors = {f"{i}.{k}": v for i, s in enumerate(states) for k, v in s.tensors.items()}
        per_source = {f"{i}.{k}": axis for i, s in enumerate(states) for k, axis in s.per_source.items()}
        per_time = {f"{i}.{k}": axis for i, s in enumerate(states) for k, axis in s.per_time.items()}
        shared = {f"{i}.{k}": v for i, s in enumerate(states) for k, v in s.shared.items()}
        return DecoderState(tensors, states[0].time, per_source, per_time, shared)

    def _member(self, state: DecoderState, i: int) -> DecoderState:
        prefix = f"{i}."
        tensors = {k[len(prefix):]: v for k, v in state.tensors.items() if k.startswith(prefix)}
        per_source = {k[len(prefix):]: axis for k, axis in state.per_source.items() if k.startswith(prefix)}
        per_time = {k[len(prefix):]: axis for k, axis in state.per_time.items() if k.startswith(prefix)}
        shared = {k[len(prefix):]: v for k, v in state.shared.items() if k.startswith(prefix)}
        return DecoderState(tensors, state.time, per_source, per_time, shared)

    def encode(self, src: Tensor, src_lengths: Tensor) -> DecoderState:
        return self._join([m.encode(src, src_lengths) for m in self.models])

    def step(self, state: DecoderState, prev_tokens: Tensor) -> tuple[Tensor, DecoderState]:
        total, states = None, []
        for i, m in enumerate(self.models):
            log_probs, s = m.step(self._member(state, i), prev_tokens)
            log_probs = log_probs.float()  # a member decoding in fp16 (decode.fp16): scores add up in fp32
            total = log_probs if total is None else total + log_probs
            states.append(s)
        return total / len(self.models), self._join(states)

    def reorder(self, state: DecoderState, index: Tensor, same_sources: bool = False) -> DecoderState:
        return self._join([m.reorder(self._member(state, i), index, same_sources)
                           for i, m in enumerate(self.models)])
