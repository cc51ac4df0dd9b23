"""Steps 5-6 of Algorithm 1: finished hypotheses, the backoff stack, and the final n-best choice.

The paper's EOS policy: a candidate ending in EOS that is among the top B of its sentence moves to the sentence's
finished set F_s and leaves the beam (its slot is -inf from then on, so the beam refills from the other
candidates). EOS candidates that are *not* among the top B go to a per-sentence backoff stack that keeps the best K
of them; if F_s is still empty when the sentence stops, its hypotheses come from the stack instead.

A sentence stops when F_s holds B hypotheses or when it has no live hypothesis left (at its length limit only EOS
can be chosen, so every live hypothesis finishes there); with a hook that bounds its gains, when no live hypothesis
can beat F_s any more (beam_search.py). The n-best list is F_s ranked by
score / length^alpha (alpha = length_penalty; 0 ranks by the raw log-probability sum), length counting EOS.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from pipeline.decode.scores import NEG_INF

__all__ = ["BackoffStack", "FinishedSet", "Hypothesis", "normalized_score"]


@dataclass(frozen=True)
class Hypothesis:
    """A finished translation: token ids without EOS, the sum of its step scores (EOS included), the score it was
    ranked by, and whether it came from the backoff stack (no EOS of this sentence ever survived the top B)."""

    tokens: tuple[int, ...]
    score: float
    ranking_score: float
    backoff: bool = False


def normalized_score(score: float, length: int, length_penalty: float) -> float:
    """score / length^alpha, length counting the EOS; alpha 0 returns the score."""
    return score / (length ** length_penalty) if length_penalty else score


class FinishedSet:
    """F_s of one sentence: (score, tokens) pairs, in the order they finished."""

    def __init__(self) -> None:
        self.entries: list[tuple[float, tuple[int, ...]]] = []

    def add(self, score: float, tokens: tuple[int, ...]) -> None:
        self.entries.append((score, tokens))

    def __len__(self) -> int:
        return len(self.entries)


def best_hypotheses(entries: list[tuple[float, tuple[int, ...]]], nbest: int, length_penalty: float,
                    backoff: bool = False) -> list[Hypothesis]:
    """The `nbest` best entries by normalized score, best first (ties: the earlier entry first)."""
    hyps = [Hypothesis(tokens, score, normalized_score(score, len(tokens) + 1, length_penalty), backoff)
            for score, tokens in entries if score > NEG_INF]
    return sorted(hyps, key=lambda h: -h.ranking_score)[:nbest]


class BackoffStack:
    """Per sentence of a batch, the best K EOS candidates that did not make the top B, on the device.

    scores [N, K] (best first, -inf: empty), tokens [N, K, capacity] (the prefix before EOS, zero padded) and
    lengths [N, K]; capacity is the longest prefix that can occur (the largest length limit of the batch).
    """

    def __init__(self, num_sentences: int, k: int, capacity: int, device: torch.device) -> None:
        self.k, self.capacity = k, capacity
        self.scores = torch.full((num_sentences, k), NEG_INF, device=device)
        self.tokens = torch.zeros((num_sentences, k, capacity), dtype=torch.long, device=device)
        self.lengths = torch.zeros((num_sentences, k), dtype=torch.long, device=device)

    def offer(self, scores: Tensor, rows: Tensor, history: Tensor) -> None:
        """Merge candidates scores [N, B] (-inf: none), whose prefixes are the rows [N, B] of history [R, t].

        Cheap when no candidate beats the worst kept entry of its sentence (the usual case after a few steps).
        """
        if not bool((scores.max(dim=1).values > self.scores[:, -1]).any()):
            return
        n, b = scores.shape
        t = history.shape[1]
        merged, pick = torch.cat([self.scores, scores], dim=1).topk(self.k, dim=1)
        prefixes = torch.zeros((n, b, self.capacity), dtype=torch.long, device=history.device)
        prefixes[:, :, :t] = history.index_select(0, rows.clamp(min=0).view(-1)).view(n, b, t)
        tokens = torch.cat([self.tokens, prefixes], dim=1)
        self.tokens = tokens.gather(1, pick[:, :, None].expand(-1, -1, self.capacity))
        lengths = torch.cat([self.lengths, self.lengths.new_full((n, b), t)], dim=1)
        self.lengths = lengths.gather(1, pick)
        self.scores = merged

    def merge(self, other: "BackoffStack", shift: int = 0) -> None:
        """Append the sentences of another stack (same K) whose batch is `shift` steps behind: its prefixes get
        `shift` leading zeros, as its rows' histories do in the joined batch; prefixes are padded to the larger
        capacity."""
        capacity = max(self.capacity, other.capacity + shift)
        theirs = torch.nn.functional.pad(other.tokens, (shift, 0))
        pad = [t if t.shape[2] == capacity else torch.cat([t, t.new_zeros(t.shape[0], t.shape[1], capacity -
                                                                           t.shape[2])], dim=2)
               for t in (self.tokens, theirs)]
        self.tokens, self.capacity = torch.cat(pad), capacity
        self.scores = torch.cat([self.scores, other.scores])
        self.lengths = torch.cat([self.lengths, other.lengths + shift])

    def select(self, keep: Tensor) -> None:
        """Keep the sentences `keep` [N'] only."""
        self.scores = self.scores.index_select(0, keep)
        self.tokens = self.tokens.index_select(0, keep)
        self.lengths = self.lengths.index_select(0, keep)

    def entries(self, sentence: int, start: int = 0) -> list[tuple[float, tuple[int, ...]]]:
        """The (score, tokens) pairs kept for batch sentence `sentence` (position among the current N), without
        the first `start` positions of the prefixes (the steps before the sentence joined its batch)."""
        scores = self.scores[sentence].tolist()
        lengths = self.lengths[sentence].tolist()
        tokens = self.tokens[sentence].tolist()
        return [(s, tuple(tokens[i][start:lengths[i]])) for i, s in enumerate(scores) if s > NEG_INF]
