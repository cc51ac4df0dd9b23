"""Epsilon sampling: K translations drawn from the model per sentence, batched, seeded and batch-invariant.

The candidates and pseudo-references of sampling-based MBR (Eikema and Aziz 2020; Freitag et al. 2023 found epsilon
sampling the generator to use). At each step every live row draws its next token from the step's distribution with
the tokens below probability epsilon removed and the rest renormalised (Hewitt et al. 2022); the most probable token
is never removed. The step is the beam search's, through the same contracts:

    log_probs = weight * model.step(state, prev)        [R, V]
    scores = hook.scores(log_probs, t)                  [R, V]  (LMBR's L, constraints: pipeline/decode/hooks.py)
    ... draw one token per row from softmax(scores) truncated at epsilon; a row that draws EOS ends ...
    hook.reorder(index); hook.advance(tokens); hook.select_sentences(keep)

so a hook shapes what is sampled exactly as it shapes what the beam keeps. A row at its length limit draws EOS.

The draw is Gumbel-max with noise that is a 32-bit hash of (seed, sentence id, sample, step, token), computed in exact
integer arithmetic: the same seed gives the same samples for a sentence whatever batch it is decoded in, on any
machine whose model gives the same scores.

    samples = sample_sources(model, src, src_lengths, max_lengths, SamplingSettings(samples=32, epsilon=0.02),
                             sentence_ids=torch.arange(N), seed=1)        # [N] lists of K Hypothesis, drawn order
    samples = sample_batches(model, sources, settings, seed=1, batch_sentences=16)   # token ids in input order
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from pipeline.decode.batching import make_batches, model_device, position_limit
from pipeline.decode.finalize import Hypothesis
from pipeline.decode.hooks import HookFactory, ScoreHook
from pipeline.decode.scores import NEG_INF, force_eos, max_output_lengths
from pipeline.nmt.interface import StepModel
from pipeline.nmt.threads import serial_steps
from pipeline.nmt.token_batches import pad_sequences

__all__ = ["SamplingSettings", "epsilon_truncate", "sample_batches", "sample_sources", "uniform_noise"]

_MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class SamplingSettings:
    """samples: K per sentence; epsilon: the probability below which a token is never drawn (0: ancestral
    sampling); weight: the scale of the NMT log-probabilities, as in SearchSettings; max_length_a, max_length_b:
    the length limit a * |source| + b, as in SearchSettings."""

    samples: int = 32
    epsilon: float = 0.02
    weight: float = 1.0
    max_length_a: float = 2.0
    max_length_b: int = 10

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError(f"samples must be at least 1, not {self.samples}")
        if not 0 <= self.epsilon < 1:
            raise ValueError(f"epsilon must be in [0, 1), not {self.epsilon}")


def _mul32(x: Tensor, c: int) -> Tensor:
    """(x * c) mod 2^32 for x in [0, 2^32), in int64 without overflow: c split into 16-bit halves."""
    return (x * (c & 0xFFFF) + (((x * (c >> 16)) & 0xFFFF) << 16)) & _MASK


def _mix(x: Tensor) -> Tensor:
    """MurmurHash3's 32-bit finaliser on values in [0, 2^32) (int64 tensors; every step exact)."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x85EBCA6B)
    x = x ^ (x >> 13)
    x = _mul32(x, 0xC2B2AE35)
    return x ^ (x >> 16)


def uniform_noise(keys: Tensor, vocab: int) -> Tensor:
    """[R, V] float64 uniform in (0, 1): a hash of each row's key [R] (int64 in [0, 2^32)) and each token id."""
    tokens = _mix(torch.arange(vocab, dtype=torch.long, device=keys.device) + 0x9E3779B9 & _MASK)
    return (_mix(keys[:, None] ^ tokens[None, :]).double() + 0.5) / float(1 << 32)


def epsilon_truncate(scores: Tensor, epsilon: float) -> Tensor:
    """scores [R, V] (log-space, unnormalised) -> the log-probabilities of the truncated, renormalised distribution:
    -inf for the tokens whose probability is below epsilon, except each row's most probable token."""
    log_probs = torch.log_softmax(scores.double(), dim=-1)
    if epsilon > 0:
        below = log_probs < torch.log(torch.tensor(epsilon, dtype=torch.float64))
        below.scatter_(1, log_probs.argmax(dim=1, keepdim=True), False)
        log_probs = torch.log_softmax(log_probs.masked_fill(below, NEG_INF), dim=-1)
    return log_probs


@torch.inference_mode()
def sample_sources(model: StepModel, src: Tensor, src_lengths: Tensor, max_lengths: Tensor,
                   settings: SamplingSettings, sentence_ids: Tensor, seed: int,
                   hook: ScoreHook | None = None) -> list[list[Hypothesis]]:
    """K samples (drawn order) of each of the N sentences of src [N, S]; sentence_ids [N] int64 name them in the
    noise (their input line numbers, say). A Hypothesis's score is the sum of the scores (weighted, with the hook's
    additions) of the tokens it drew, EOS included; a row whose every continuation the hook forbids ends empty."""
    n, k, device = src.shape[0], settings.samples, src.device
    if n == 0:
        return []
    hook = hook if hook is not None else ScoreHook()
    rows = torch.arange(n, device=device).repeat_interleave(k)                  # [R] the sentence of each row
    state = model.reorder(model.encode(src, src_lengths.to(device)), rows)
    hook.reorder(rows)
    sample = torch.arange(k, device=device).repeat(n)                           # [R] the sample of each row
    base = _mix(_mix(torch.full((n,), seed & _MASK, dtype=torch.long, device=device))
                ^ (sentence_ids.to(device).long() & _MASK))
    limits = max_lengths.to(device)
    prev = torch.full((n * k,), model.bos_id, dtype=torch.long, device=device)
    history = torch.zeros((n * k, 0), dtype=torch.long, device=device)
    totals = torch.zeros(n * k, dtype=torch.float64, device=device)
    sentence = list(range(n))                                                   # batch positions still active
    results: list[list[Hypothesis]] = [[] for _ in range(n)]
    t = 0
    with serial_steps(model):
        while rows.numel():
            log_probs, state = model.step(state, prev)
            if settings.weight != 1.0:
                log_probs = log_probs * settings.weight
            scores = force_eos(hook.scores(log_probs, t), limits.index_select(0, rows) <= t, model.eos_id)
            dead = ~(scores > NEG_INF).any(dim=1)                                # every token forbidden
            truncated = epsilon_truncate(scores.masked_fill(dead[:, None], 0.0), settings.epsilon)
            keys = _mix(_mix(base.index_select(0, rows) ^ sample) ^ t)
            gumbel = -torch.log(-torch.log(uniform_noise(keys, truncated.shape[1])))
            tokens = (truncated + gumbel).argmax(dim=1)                          # [R]
            step_scores = scores.double().gather(1, tokens[:, None]).squeeze(1)
            totals = totals + step_scores.masked_fill(dead, 0.0)
            ends = (tokens == model.eos_id) | dead
            for r in ends.nonzero().flatten().tolist():
                position = sentence[int(rows[r])]
                if not bool(dead[r]):
                    results[position].append(Hypothesis(tuple(history[r].tolist()), float(totals[r]),
                                                        float(totals[r])))
            keep = (~ends).nonzero().flatten()
            history = torch.cat([history.index_select(0, keep), tokens.index_select(0, keep)[:, None]], dim=1)
            rows, sample = rows.index_select(0, keep), sample.index_select(0, keep)
            totals = totals.index_select(0, keep)
            prev = tokens.index_select(0, keep)
            if keep.numel():
                state = model.reorder(state, keep)
                hook.reorder(keep)
                hook.advance(prev)
            still = torch.unique_consecutive(rows)                               # ascending: rows are sentence-major
            if still.numel() < len(sentence) and keep.numel():
                hook.select_sentences(still)
                rows = torch.searchsorted(still, rows)
                base = base.index_select(0, still)
                limits = limits.index_select(0, still)
                sentence = [sentence[s] for s in still.tolist()]
            t += 1
    return results


def sample_batches(model: StepModel, sources: Sequence[Sequence[int]], settings: SamplingSettings, seed: int,
                   batch_sentences: int = 1, sort: bool = True, device: str | torch.device | None = None,
                   hook_factory: HookFactory | None = None,
                   ids: Sequence[int] | None = None) -> list[list[Hypothesis]]:
    """The K samples of every source (token ids ending in EOS), in input order, as decode_sources gives n-best
    lists: batches of `batch_sentences` (sorted by length when `sort`), the hook of a batch from its sentences'
    indices in `sources`. A source's samples depend on the seed and its id (`ids`, default its index), not on the
    batching."""
    device = torch.device(device) if device is not None else model_device(model)
    limit = position_limit(model)
    results: list[list[Hypothesis]] = [[] for _ in sources]
    for batch in make_batches([len(s) for s in sources], batch_sentences, sort):
        src, lengths = pad_sequences([sources[i] for i in batch], model.pad_id)
        max_lengths = max_output_lengths(lengths, settings.max_length_a, settings.max_length_b, limit)
        hook = hook_factory(batch, device) if hook_factory is not None else None
        named = torch.tensor([ids[i] if ids is not None else i for i in batch], dtype=torch.long)
        drawn = sample_sources(model, src.to(device), lengths.to(device), max_lengths.to(device), settings, named,
                               seed, hook)
        for i, samples in zip(batch, drawn):
            results[i] = samples
    return results
