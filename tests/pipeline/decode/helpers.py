"""Test helpers: a fake deterministic StepModel whose log-probabilities depend on the source and the whole prefix
(as in Sockeye's beam search tests), exhaustive search, and a plain-Python reference of the search policy."""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch

from pipeline.nmt.interface import DecoderState

PAD, BOS, EOS = 0, 1, 2
Scores = Callable[[tuple[int, ...]], list[float]]


class PrefixModel:
    """log p(y | source, prefix) = log_softmax(table[h]) where h hashes the source and every token consumed so far.

    The table is random (seeded), so scores have no ties; `eos_bias` shifts the EOS logit (negative: EOS is rare).
    h also hashes the state's time index unless `joins_at_any_step` (then, like a GRU, sentences may join a batch
    at any step).
    """

    pad_id, bos_id, eos_id = PAD, BOS, EOS
    SIZE = 7919

    def __init__(self, vocab: int = 6, seed: int = 0, eos_bias: float = 0.0, scale: float = 2.0,
                 joins_at_any_step: bool = False) -> None:
        self.joins_at_any_step = joins_at_any_step
        g = torch.Generator().manual_seed(seed)
        self.table = torch.randn(self.SIZE, vocab, generator=g) * scale
        self.table[:, EOS] += eos_bias
        self.tgt_vocab_size = vocab
        self.steps = 0  # rows stepped, summed over calls

    def encode(self, src, src_lengths):
        positions = torch.arange(src.shape[1]) + 3
        real = positions[None, :] - 3 < src_lengths[:, None]
        key = ((src * positions * real).sum(1) * 31 + src_lengths) % self.SIZE
        return DecoderState({"h": key}, 0)

    def step(self, state, prev):
        h = (state.tensors["h"] * 613 + prev * 17 + (1 if self.joins_at_any_step else state.time + 1)) % self.SIZE
        self.steps += prev.shape[0]
        return torch.log_softmax(self.table[h], dim=-1), DecoderState({"h": h}, state.time + 1)

    def reorder(self, state, index, same_sources=False):
        return state.select(index, same_sources)

    def scorer(self, source: Sequence[int]) -> Scores:
        """prefix -> log-probabilities of the next token (Python floats), replaying the model on one row."""
        src = torch.tensor([list(source)])
        cache: dict[tuple[int, ...], tuple[list[float], DecoderState]] = {}

        def state_after(prefix):
            if prefix in cache:
                return cache[prefix]
            if not prefix:
                before, last = self.encode(src, torch.tensor([len(source)])), BOS
            else:
                before, last = state_after(prefix[:-1])[1], prefix[-1]
            log_probs, after = self.step(before, torch.tensor([last]))
            cache[prefix] = (log_probs[0].tolist(), after)
            return cache[prefix]

        return lambda prefix: state_after(tuple(prefix))[0]


def exhaustive(scores: Scores, vocab: int, limit: int, bonus: Callable[[tuple, int], float] | None = None
               ) -> list[tuple[float, tuple[int, ...]]]:
    """Every complete output (at most `limit` tokens, then EOS) with its score, best first."""
    out = []

    def visit(prefix, total):
        lp = scores(prefix)
        extra = (lambda y: bonus(prefix, y)) if bonus else (lambda y: 0.0)
        out.append((total + lp[EOS] + extra(EOS), prefix))
        if len(prefix) < limit:
            for y in range(vocab):
                if y != EOS:
                    visit(prefix + (y,), total + lp[y] + extra(y))

    visit((), 0.0)
    return sorted(out, key=lambda e: -e[0])


def reference_search(scores: Scores, vocab: int, beam: int, limit: int, threshold: float = 0.0,
                     nbest: int = 1) -> list[tuple[float, tuple[int, ...], bool]]:
    """The search policy of pipeline/decode, written plainly: (score, tokens, from_backoff), best first."""
    live, finished, backoff, t = [((), 0.0)], [], [], 0
    while True:
        candidates = []
        for prefix, q in live:
            lp = scores(prefix)
            for y in range(vocab):
                if (t < limit or y == EOS) and lp[y] > -math.inf:
                    candidates.append((q + lp[y], prefix, y))
        kept = candidates
        if threshold > 0 and candidates:
            best = max(c[0] for c in candidates)
            kept = [c for c in candidates if c[0] >= best + math.log(threshold)]
        top = sorted(kept, key=lambda c: -c[0])[:beam]
        chosen = {(p, y) for _, p, y in top}
        finished += [(q, p) for q, p, y in top if y == EOS]
        backoff += [(q, p) for q, p, y in candidates if y == EOS and (p, y) not in chosen]
        live = [(p + (y,), q) for q, p, y in top if y != EOS]
        if len(finished) >= beam or not live:
            break
        t += 1
    if finished:
        return [(q, p, False) for q, p in sorted(finished, key=lambda e: -e[0])[:nbest]]
    return [(q, p, True) for q, p in sorted(backoff, key=lambda e: -e[0])[:nbest]]
