"""The unbatched reference decoder: one neural query per beam item (the baseline of the paper's Figure 2).

:class:`PerHypothesisModel` adapts a StepModel so that every hypothesis keeps its own one-row state and is advanced
by its own `step` call; the search itself is the batched decoder's (same selection, finishing and backoff), run
one sentence at a time, so both decoders explore the same hypotheses and differ only in how the network is queried.
Reordering costs nothing here: a new hypothesis shares its parent's state object (steps never modify a state).
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from pipeline.decode.batching import decode_sources
from pipeline.decode.beam_search import SearchSettings
from pipeline.decode.finalize import Hypothesis
from pipeline.decode.hooks import HookFactory
from pipeline.nmt.interface import DecoderState, StepModel

__all__ = ["PerHypothesisModel", "unbatched_decode"]


class PerHypothesisModel:
    """A StepModel whose state is a list of one-row DecoderStates of `model`, one per hypothesis."""

    def __init__(self, model: StepModel) -> None:
        self.model = model

    bos_id = property(lambda self: self.model.bos_id)
    eos_id = property(lambda self: self.model.eos_id)
    pad_id = property(lambda self: self.model.pad_id)
    tgt_vocab_size = property(lambda self: self.model.tgt_vocab_size)

    def encode(self, src: Tensor, src_lengths: Tensor) -> list[DecoderState]:
        """One encoder query per sentence, without its padding."""
        return [self.model.encode(src[i: i + 1, : int(n)], src_lengths[i: i + 1])
                for i, n in enumerate(src_lengths.tolist())]

    def step(self, states: list[DecoderState], prev_tokens: Tensor) -> tuple[Tensor, list[DecoderState]]:
        """One query per hypothesis: log-probabilities [R, V] and the R new states."""
        outputs = [self.model.step(state, prev_tokens[i: i + 1]) for i, state in enumerate(states)]
        return torch.cat([log_probs for log_probs, _ in outputs]), [state for _, state in outputs]

    def reorder(self, states: list[DecoderState], index: Tensor, same_sources: bool = False) -> list[DecoderState]:
        return [states[i] for i in index.tolist()]


def unbatched_decode(model: StepModel, sources: Sequence[Sequence[int]], settings: SearchSettings,
                     device: str | torch.device | None = None,
                     hook_factory: HookFactory | None = None) -> list[list[Hypothesis]]:
    """The n-best lists of every source, one sentence and one hypothesis per neural query."""
    return decode_sources(PerHypothesisModel(model), sources, settings, batch_sentences=1, sort=False,
                          device=device, hook_factory=hook_factory)
