"""The token mask hook (pipeline/decode/hooks.py): forbidden tokens never appear, and the search is otherwise the
same: with a beam as wide as the search space it ranks exactly the outputs without them, as brute force does."""
from __future__ import annotations

import pytest
import torch

from pipeline.decode import SearchSettings, beam_search
from pipeline.decode.hooks import token_mask_factory
from pipeline.nmt.token_batches import pad_sequences
from tests.pipeline.decode.helpers import PAD, PrefixModel, exhaustive
from tests.pipeline.decode.test_beam_search import random_sources


@pytest.mark.parametrize("seed, forbidden", [(0, [4]), (1, [3, 4]), (2, [4, 4])])
def test_a_wide_search_with_forbidden_tokens_ranks_exactly_the_outputs_without_them(seed, forbidden):
    vocab, limit = 5, 3
    model = PrefixModel(vocab=vocab, seed=seed)
    sources = random_sources(3, seed, vocab=9)
    src, lengths = pad_sequences(sources, PAD)
    factory = token_mask_factory(forbidden)
    wide = vocab ** limit
    results = beam_search(model, src, lengths, torch.full((len(sources),), limit),
                          SearchSettings(beam=wide, nbest=wide), factory(range(len(sources)), torch.device("cpu")))
    for source, hyps in zip(sources, results):
        truth = [(score, tokens) for score, tokens in exhaustive(model.scorer(source), vocab, limit)
                 if not set(tokens) & set(forbidden)]
        assert [h.tokens for h in hyps] == [tokens for _, tokens in truth]
        assert [h.score for h in hyps] == pytest.approx([score for score, _ in truth], abs=1e-4)
        assert all(not set(h.tokens) & set(forbidden) for h in hyps)


def test_no_forbidden_tokens_is_no_hook():
    assert token_mask_factory([]) is None
