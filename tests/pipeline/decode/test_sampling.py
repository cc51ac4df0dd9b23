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


def test_sample_batches_give_each_source_its_samples_whatever_the_batching():
    from pipeline.decode.sampling import sample_batches

    model = PrefixModel(vocab=8, seed=3)
    sources = [s + [EOS] for s in SOURCES * 2]
    settings = SamplingSettings(samples=8, epsilon=0.02, max_length_a=0, max_length_b=8)
    one = sample_batches(model, sources, settings, seed=3, batch_sentences=1)
    many = sample_batches(model, sources, settings, seed=3, batch_sentences=5, sort=False)
    assert [[h.tokens for h in s] for s in one] == [[h.tokens for h in s] for s in many]
    assert [[h.tokens for h in s] for s in one[:4]] != [[h.tokens for h in s] for s in one[4:]]  # ids differ


def test_translate_lines_samples_each_line_and_mbr_chooses_among_the_texts(tmp_path):
    """A tiny Marian model through translate_lines with SamplingSettings: K samples per line (an empty line none),
    the same for the same seed whatever the batching, and the MBR choice among their texts by chrF."""
    pytest.importorskip("transformers")
    pytest.importorskip("sentencepiece")
    from pipeline.decode.translate import load_models, translate_lines
    from pipeline.mbr.selection import mbr_choose
    from pipeline.mbr.utility import chrf_matrix
    from tests.pipeline.nmt.tiny_hf import synthetic_lines, tiny_family

    models = load_models([tiny_family("marian", tmp_path / "m")], languages=("de", "en"))
    lines = synthetic_lines(4, seed=9) + [""]
    settings = SamplingSettings(samples=6, epsilon=0.02, max_length_a=0, max_length_b=20)
    first = translate_lines(lines, models, settings, batch_sentences=2, seed=5)
    again = translate_lines(lines, models, settings, batch_sentences=5, sort=False, seed=5)
    assert first.nbest_text == again.nbest_text
    assert [len(samples) for samples in first.nbest_text] == [6, 6, 6, 6, 0]
    assert first.stats["samples"] == 6 and first.stats["seed"] == 5 and "beam" not in first.stats
    for texts in first.nbest_text[:4]:
        choice = mbr_choose(chrf_matrix(texts, texts))
        assert texts[choice.index] in texts and choice.expected.shape == (6,)
