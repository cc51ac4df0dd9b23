"""Sentence batching: which sentences are decoded together, and the results back in input order.

The paper decodes S sentences x B beam items per step; sorting the sentences by length first keeps the sentences
of a batch similar, so they finish at about the same step and little work is spent on short batches' stragglers
(paper, section 3.1: sorting alone took 7-sentence batches from 17000 to 24000 words per minute).

Streaming refill (Yang et al. 2020, ALGORITHMS.md section 6), ``streaming=True``: one pool of at most
`batch_sentences` sentences. When the sentences still decoding drop to `refill` x `batch_sentences`, the next ones
are encoded as a new batch that starts at step 0 (:func:`step_pool`). With a model that joins at any step (a GRU),
the new batch joins the running one at once and shares its neural queries from its first step; otherwise each step
advances the batch with the least progress, and batches that reach the same step are merged into one query. Every
sentence follows exactly the search it would follow alone, so the outputs equal the plain batched mode's; only the
order of work changes.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Sequence

import torch

from pipeline.decode.beam_search import BeamBatch, SearchSettings, beam_search
from pipeline.decode.finalize import Hypothesis
from pipeline.decode.hooks import HookFactory
from pipeline.decode.scores import max_output_lengths
from pipeline.nmt.token_batches import pad_sequences
from pipeline.nmt.interface import Ensemble, StepModel

__all__ = ["decode_sources", "make_batches", "model_device", "position_limit", "step_pool"]


def make_batches(lengths: Sequence[int], batch_sentences: int, sort: bool = True) -> list[list[int]]:
    """Input indices in batches of at most `batch_sentences`: longest first if `sort` (stable), else input order."""
    if batch_sentences < 1:
        raise ValueError(f"batch_sentences must be at least 1, not {batch_sentences}")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i]) if sort else list(range(len(lengths)))
    return [order[i: i + batch_sentences] for i in range(0, len(order), batch_sentences)]


def _members(model) -> list:
    for attribute in ("models", "model"):  # an Ensemble, or an adapter around a model
        inner = getattr(model, attribute, None)
        if inner is not None:
            return [m for member in (inner if isinstance(inner, (list, tuple)) else [inner])
                    for m in _members(member)]
    return [model]


def model_device(model: StepModel) -> torch.device:
    """The device of the (first) model's parameters; the CPU for a model without parameters."""
    for member in _members(model):
        parameters = getattr(member, "parameters", None)
        if parameters is not None:
            for p in parameters():
                return p.device
    return torch.device("cpu")


def _position_limits(model) -> list[int]:
    own = getattr(model, "max_positions", None)  # an adapter that says (pipeline/nmt/pretrained.py)
    if isinstance(own, int):
        return [own]
    if hasattr(getattr(model, "config", None), "max_positions"):
        return [model.config.max_positions]
    for attribute in ("models", "model"):  # an Ensemble, or a wrapper around a model
        inner = getattr(model, attribute, None)
        if inner is not None:
            return [limit for member in (inner if isinstance(inner, (list, tuple)) else [inner])
                    for limit in _position_limits(member)]
    return []


def position_limit(model: StepModel) -> int | None:
    """The fewest positions any member model can embed (its `max_positions`, or its config's), None when unbounded."""
    limits = _position_limits(model)
    return min(limits) if limits else None


def decode_sources(model: StepModel, sources: Sequence[Sequence[int]], settings: SearchSettings,
                   batch_sentences: int = 1, sort: bool = True, device: str | torch.device | None = None,
                   hook_factory: HookFactory | None = None,
                   on_batch: Callable[[list[int]], None] | None = None, streaming: bool = False,
                   refill: float = 1 / 6) -> list[list[Hypothesis]]:
    """The n-best lists of every source (token ids ending in EOS, as the encoder reads them), in input order.

    Batches of `batch_sentences` sentences (sorted by length when `sort`) are decoded by one beam search each, on
    `device` (default: the model's); or streamed through one pool with refills (`streaming`, see the module
    docstring). `hook_factory(indices, device)` makes the score hook of a batch from the input indices of its
    sentences (default: pure NMT). `on_batch(indices)` is called when sentences are done (progress).
    """
    device = torch.device(device) if device is not None else model_device(model)
    limit = position_limit(model)
    if isinstance(model, Ensemble) and len(model) == 1:  # the same log-probabilities, without the wrapping per step
        model = model.models[0]
    if streaming:
        return _stream(model, sources, settings, batch_sentences, sort, device, hook_factory, on_batch, refill, limit)
    results: list[list[Hypothesis]] = [[] for _ in sources]
    for batch in make_batches([len(s) for s in sources], batch_sentences, sort):
        src, lengths = pad_sequences([sources[i] for i in batch], model.pad_id)
        max_lengths = max_output_lengths(lengths, settings.max_length_a, settings.max_length_b, limit)
        hook = hook_factory(batch, device) if hook_factory is not None else None
        for i, hyps in zip(batch, beam_search(model, src.to(device), lengths.to(device), max_lengths.to(device),
                                              settings, hook)):
            results[i] = hyps
        if on_batch is not None:
            on_batch(batch)
    return results



def _stream(model: StepModel, sources: Sequence[Sequence[int]], settings: SearchSettings, batch_sentences: int,
            sort: bool, device: torch.device, hook_factory: HookFactory | None,
            on_batch: Callable[[list[int]], None] | None, refill: float, limit: int | None) -> list[list[Hypothesis]]:
    if not 0 <= refill < 1:
        raise ValueError(f"refill must be in [0, 1), not {refill}")
    queue = deque(i for batch in make_batches([len(s) for s in sources], max(1, len(sources)), sort) for i in batch)
    results: list[list[Hypothesis]] = [[] for _ in sources]

    def start(count: int) -> tuple[BeamBatch, list[int]]:
        """A new batch of the next `count` sentences, and the input index of each of its positions."""
        indices = [queue.popleft() for _ in range(min(count, len(queue)))]
        src, lengths = pad_sequences([sources[i] for i in indices], model.pad_id)
        max_lengths = max_output_lengths(lengths, settings.max_length_a, settings.max_length_b, limit)
        hook = hook_factory(indices, device) if hook_factory is not None else None
        return BeamBatch(model, src.to(device), lengths.to(device), max_lengths.to(device), settings, hook), indices

    pool: list[tuple[BeamBatch, list[int]]] = []
    while pool or queue:
        active = sum(batch.active for batch, _ in pool)
        if queue and active <= refill * batch_sentences:
            pool.append(start(batch_sentences - active))
        ended = step_pool(pool)
        for index, hyps in ended:
            results[index] = hyps
        if ended and on_batch is not None:
            on_batch([index for index, _ in ended])
    return results


def step_pool(pool: list[tuple[BeamBatch, list]]) -> list[tuple[object, list[Hypothesis]]]:
    """One step of a pool of batches, each with its payload (a list aligned with the batch's positions).

    Batches merge first: every batch joins the one furthest on when it can (BeamBatch.can_merge: a model that joins
    at any step, or all at one step); otherwise the batches at the least step merge. Then that batch steps; it
    leaves the pool when done. Returns the (payload item, n-best) of the sentences the step ended; their payload
    items are dropped from the pool (a batch that keeps taking sentences in never ends, and must not keep them).
    """
    furthest = max(pool, key=lambda entry: entry[0].t)
    if all(furthest[0].can_merge(batch) for batch, _ in pool):
        base, group = furthest, [entry for entry in pool if entry is not furthest]
    else:
        least = min(batch.t for batch, _ in pool)
        base, *behind = [entry for entry in pool if entry[0].t == least]
        group = [entry for entry in behind if base[0].can_merge(entry[0])]  # (no batch with a shared cache joins)
    batch, payload = base
    for other, other_payload in group:  # one query from now on
        batch.merge(other)
        payload.extend(other_payload)
        pool.remove((other, other_payload))
    ended = []
    for position, hyps in batch.step():
        ended.append((payload[position], hyps))
        payload[position] = None
    if batch.done:
        pool.remove(base)
    return ended
