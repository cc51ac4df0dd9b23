"""Bounded LMBR gains (lattices/gains.py through pipeline/decode/lmbr_hook.py's BoundedLmbrHook): every n-gram of the
evidence space paid at most once per hypothesis, against a brute-force scorer."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from lattices.batch import LMatrixBatch
from lattices.gains import NgramGains
from lattices.lmatrix import build_lmatrix
from lattices.posteriors import NgramPosteriors
from lattices.theta import Theta
from pipeline.decode.lmbr_hook import BoundedLmbrHook, LmbrHook

BOS, EOS, VOCAB = 1, 2, 7
THETA = Theta.from_precisions([60.0, 35.0, 21.0, 13.0], "plain")


def random_evidence(rng: random.Random, order: int = 4) -> NgramPosteriors:
    """The n-grams (orders 1..4) of a few random strings <s> w... </s> over tokens 3-6, with random posteriors;
    the strings repeat tokens, so n-grams recur within a string."""
    grams = set()
    for _ in range(rng.randint(1, 4)):
        string = [BOS, *(rng.randint(3, 6) for _ in range(rng.randint(1, 7))), EOS]
        for n in range(1, order + 1):
            grams.update(tuple(string[i:i + n]) for i in range(len(string) - n + 1))
    ngrams = tuple(sorted(grams, key=lambda g: (len(g), g)))
    return NgramPosteriors.from_ngrams(ngrams, np.asarray([rng.uniform(0.05, 1.0) for _ in ngrams]), order)


def bounded_score(hypothesis: tuple[int, ...], posteriors: dict, theta: Theta) -> float:
    """Brute force: Theta_0 per token + Theta_|u| p(u) for each DISTINCT n-gram u of [BOS] + hypothesis that ends
    on a hypothesis token and is in the evidence space; -inf with BOS, never an output of LMBR decoding."""
    if BOS in hypothesis:
        return float("-inf")
    string = (BOS, *hypothesis)
    distinct = {string[i:j + 1] for j in range(1, len(string)) for i in range(max(0, j - 3), j + 1)}
    return len(hypothesis) * theta.values[0] + sum(theta.values[len(u)] * posteriors[u] for u in distinct
                                                    if u in posteriors)


def per_step_score(hypothesis: tuple[int, ...], posteriors: dict, theta: Theta) -> float:
    if BOS in hypothesis:  # never an output of LMBR decoding
        return float("-inf")
    string = (BOS, *hypothesis)
    return sum(theta.values[0] + sum(theta.values[j - i + 1] * posteriors.get(string[i:j + 1], 0.0)
                                     for i in range(max(0, j - 3), j + 1)) for j in range(1, len(string)))


def hook_scores(hook, hypotheses: list[tuple[int, ...]]) -> list[float]:
    """Step the hook along each hypothesis (its last token scored, never appended, like an EOS) and sum the
    scores it gives the chosen tokens (NMT log-probabilities 0)."""
    R = len(hypotheses)
    hook.reorder(torch.zeros(R, dtype=torch.long))
    totals = torch.zeros(R, dtype=torch.float64)
    length = len(hypotheses[0])
    for t in range(length):
        scores = hook.scores(torch.zeros(R, VOCAB), t)
        tokens = torch.tensor([h[t] for h in hypotheses])
        totals += scores.gather(1, tokens[:, None])[:, 0].double()
        if t < length - 1:
            hook.reorder(torch.arange(R))
            hook.advance(tokens)
    return totals.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_bounded_scores_equal_the_brute_force_sum_over_distinct_ngrams(seed):
    rng = random.Random(seed)
    posteriors = random_evidence(rng)
    matrix = build_lmatrix(posteriors, THETA, VOCAB)
    post = posteriors.as_dict()
    evidence_tokens = sorted({g[0] for g in post if g[0] != BOS})
    for length in (1, 3, 6, 10):
        # hypotheses that walk the evidence (repeating its n-grams) and random ones
        hypotheses = [tuple(rng.choice(evidence_tokens) for _ in range(length)) for _ in range(12)]
        hypotheses += [tuple(rng.randrange(VOCAB) for _ in range(length)) for _ in range(4)]
        bounded = hook_scores(BoundedLmbrHook(LMatrixBatch([matrix]), BOS, [NgramGains.from_lmatrix(matrix)]),
                              hypotheses)
        assert bounded == pytest.approx([bounded_score(h, post, THETA) for h in hypotheses], abs=1e-4)
        per_step = hook_scores(LmbrHook(LMatrixBatch([matrix]), BOS), hypotheses)
        assert per_step == pytest.approx([per_step_score(h, post, THETA) for h in hypotheses], abs=1e-4)


def test_a_repeated_ngram_is_paid_once_under_bounded_gains_and_each_time_per_step():
    posteriors = NgramPosteriors.from_ngrams(((3,), (4,), (3, 4), (4, 3)), np.asarray([0.9, 0.8, 0.7, 0.1]), 2)
    theta = Theta((0.0, 1.0, 1.0), "plain", 1.0, 1.0, 1.0)
    matrix = build_lmatrix(posteriors, theta, VOCAB)
    loop = (3, 4, 3, 4, 3, 4)
    [bounded] = hook_scores(BoundedLmbrHook(LMatrixBatch([matrix]), BOS, [NgramGains.from_lmatrix(matrix)]), [loop])
    [per_step] = hook_scores(LmbrHook(LMatrixBatch([matrix]), BOS), [loop])
    assert bounded == pytest.approx(0.9 + 0.8 + 0.7 + 0.1)
    assert per_step == pytest.approx(3 * (0.9 + 0.8 + 0.7) + 2 * 0.1)


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_gain_tables_hold_every_ngram_once_with_its_context_row(seed):
    posteriors = random_evidence(random.Random(seed))
    matrix = build_lmatrix(posteriors, THETA, VOCAB)
    gains = NgramGains.from_lmatrix(matrix)
    histories = matrix.automaton.histories
    assert len(gains) == len(posteriors) and np.all(np.diff(gains.keys) > 0)
    rebuilt = {(*histories[c], y): g for c, y, g in zip(gains.contexts, gains.tokens, gains.gains)}
    expected = {u: THETA.values[len(u)] * p for u, p in posteriors.as_dict().items()}
    assert rebuilt.keys() == expected.keys()
    assert [rebuilt[u] for u in expected] == [np.float32(g) for g in expected.values()]  # theta_n p, rounded once
    assert all(gains.orders[i] == len(histories[c]) + 1 for i, c in enumerate(gains.contexts))
    for row, h in enumerate(histories):
        assert [histories[r] if r >= 0 else None for r in gains.suffix_rows[row]] == [
            h[len(h) - k:] if k <= len(h) else None for k in range(4)]
