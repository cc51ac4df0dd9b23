"""Epsilon sampling: every drawn token at or above epsilon (or its step's most probable), seeded and batch-invariant,
scores that are the drawn tokens' sums, the hook's masks obeyed, and the draw's frequencies those of the truncated
distribution."""
from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from pipeline.decode.hooks import TokenMaskHook
from pipeline.decode.sampling import SamplingSettings, epsilon_truncate, sample_sources
from tests.pipeline.decode.helpers import EOS, PrefixModel

SOURCES = [[3, 4, 5], [4, 4], [5, 3, 3, 4], [3]]


def draw(model, sources, settings, seed=1, ids=None, limit=8, hook=None):
    src = torch.zeros((len(sources), max(map(len, sources))), dtype=torch.long)
    for i, s in enumerate(sources):
        src[i, :len(s)] = torch.tensor(s)
    lengths = torch.tensor([len(s) for s in sources])
    ids = torch.arange(len(sources)) if ids is None else torch.tensor(ids)
    return sample_sources(model, src, lengths, torch.full((len(sources),), limit), settings, ids, seed, hook)


def test_no_token_below_epsilon_is_ever_drawn_and_scores_are_the_sums():
    model = PrefixModel(vocab=8, seed=3, scale=2.5)
    settings = SamplingSettings(samples=64, epsilon=0.05)
    for source, samples in zip(SOURCES, draw(model, SOURCES, settings)):
        scorer = model.scorer(source)
        assert len(samples) == 64
        for hyp in samples:
            total = 0.0
            for i, token in enumerate(hyp.tokens + (EOS,)):
                log_probs = scorer(hyp.tokens[:i])
                p = math.exp(log_probs[token])
                forced = token == EOS and i == 8  # the length limit
                assert p >= 0.05 or forced or token == max(range(8), key=lambda y: log_probs[y]), (hyp.tokens, i, p)
                total += log_probs[token]
            assert hyp.score == pytest.approx(total, abs=1e-5)
            assert len(hyp.tokens) <= 8  # the length limit forces EOS


def test_the_same_seed_gives_the_same_samples_in_any_batch_and_another_seed_others():
    model = PrefixModel(vocab=8, seed=3)
    settings = SamplingSettings(samples=16, epsilon=0.02)
    together = draw(model, SOURCES, settings, seed=7)
    alone = [draw(model, [s], settings, seed=7, ids=[i])[0] for i, s in enumerate(SOURCES)]
    reversed_batch = draw(model, SOURCES[::-1], settings, seed=7, ids=[3, 2, 1, 0])[::-1]
    tokens = lambda lists: [[h.tokens for h in samples] for samples in lists]  # noqa: E731
    assert tokens(together) == tokens(alone) == tokens(reversed_batch)
    assert tokens(draw(model, SOURCES, settings, seed=8)) != tokens(together)


def test_a_hooks_forbidden_token_is_never_drawn():
    model = PrefixModel(vocab=8, seed=3, scale=2.5)
    plain = draw(model, SOURCES, SamplingSettings(samples=32, epsilon=0.0))
    assert any(5 in h.tokens for samples in plain for h in samples)
    masked = draw(model, SOURCES, SamplingSettings(samples=32, epsilon=0.0),
                  hook=TokenMaskHook(torch.tensor([5])))
    assert not any(5 in h.tokens for samples in masked for h in samples)


def test_the_draws_follow_the_truncated_distribution():
    """The first token of 4000 samples of one sentence against its truncated, renormalised probabilities."""
    model = PrefixModel(vocab=6, seed=11, scale=1.5)
    [samples] = draw(model, [[3, 4]], SamplingSettings(samples=4000, epsilon=0.1))
    first = Counter(h.tokens[0] if h.tokens else EOS for h in samples)
    log_probs = torch.tensor([model.scorer([3, 4])(())])
    expected = epsilon_truncate(log_probs, 0.1).exp()[0].tolist()
    for token, p in enumerate(expected):
        assert first[token] / 4000 == pytest.approx(p, abs=0.03), (token, first, expected)


def test_truncation_keeps_the_most_probable_token_and_bad_settings_are_errors():
    scores = torch.log(torch.tensor([[0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]]))
    kept = epsilon_truncate(scores, 0.26).exp()
    assert kept[0].tolist() == pytest.approx([0.4 / 0.7, 0.3 / 0.7, 0.0, 0.0])
    assert kept[1].tolist() == pytest.approx([1.0, 0.0, 0.0, 0.0])  # all below: the most probable stays
    with pytest.raises(ValueError, match="epsilon must be in"):
        SamplingSettings(epsilon=1.0)
    with pytest.raises(ValueError, match="samples must be at least 1"):
        SamplingSettings(samples=0)
