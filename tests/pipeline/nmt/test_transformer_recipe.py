"""The low-resource recipe's training-only regularisers of the Transformer: source and target word dropout and
decoder LayerDrop. Each is checked against what it claims to compute, and against the plain model outside training."""
from __future__ import annotations

import copy
import dataclasses

import pytest
import torch

from pipeline.nmt.transformer import TransformerConfig, TransformerModel

BASE = TransformerConfig(src_vocab_size=30, tgt_vocab_size=32, pad_id=0, bos_id=1, eos_id=2, layers=3, model_size=16,
                         heads=2, ff_size=32)


def _model(**recipe: float) -> TransformerModel:
    torch.manual_seed(0)
    return TransformerModel(dataclasses.replace(BASE, **recipe))


def _batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    src = torch.randint(4, 30, (3, 7))
    tgt_in = torch.randint(4, 32, (3, 5))
    return src, torch.tensor([7, 5, 6]), tgt_in


def test_word_dropout_zeroes_whole_embeddings_at_its_rate_and_scales_the_rest():
    model = _model(source_word_dropout=0.25).train()
    tokens = torch.randint(4, 30, (64, 50))
    torch.manual_seed(3)
    out = model._embed(model.src_embed, tokens, 0, 0.25)
    positions = model.positions[:50]
    words = model.src_embed(tokens) * model.embed_scale
    dropped = torch.isclose(out, positions.expand_as(out), atol=1e-6).all(dim=-1)   # [64, 50]: word part gone
    kept = torch.isclose(out, words / 0.75 + positions, atol=1e-5).all(dim=-1)
    assert bool((dropped | kept).all())                   # each token all or nothing, kept ones scaled 1 / (1 - p)
    assert dropped.float().mean().item() == pytest.approx(0.25, abs=0.03)
    model.eval()
    assert torch.equal(model._embed(model.src_embed, tokens, 0, 0.25), words + positions)  # off outside training


@pytest.mark.parametrize("recipe", [{"source_word_dropout": 0.5}, {"target_word_dropout": 0.5},
                                    {"decoder_layerdrop": 0.5}])
def test_each_regulariser_changes_training_passes_only(recipe):
    plain, regularised = _model(), _model(**recipe)
    assert all(torch.equal(a, b) for a, b in zip(plain.parameters(), regularised.parameters()))
    src, lengths, tgt_in = _batch()
    plain.train(), regularised.train()
    differs = False
    for seed in range(8):  # with p = 0.5 some draw of the eight drops something
        torch.manual_seed(seed)
        differs |= not torch.allclose(regularised(src, lengths, tgt_in), plain(src, lengths, tgt_in), atol=1e-6)
    assert differs
    plain.eval(), regularised.eval()
    assert torch.equal(regularised(src, lengths, tgt_in), plain(src, lengths, tgt_in))


def test_layerdrop_skips_exactly_the_drawn_layers_and_they_get_no_gradient():
    model = _model(decoder_layerdrop=0.5).train()
    src, lengths, tgt_in = _batch()
    for seed in range(20):
        torch.manual_seed(seed)
        skipped = model._skipped_layers()
        if skipped and len(skipped) < len(model.decoder_layers):
            break
    assert skipped and len(skipped) < len(model.decoder_layers)
    # the same draw inside a forward pass (word dropout is off, so the layer draw is its first random number)
    torch.manual_seed(seed)
    model.zero_grad()
    out = model(src, lengths, tgt_in)
    out.sum().backward()
    reference = copy.deepcopy(model)
    reference.decoder_layers = torch.nn.ModuleList(
        layer for i, layer in enumerate(reference.decoder_layers) if i not in skipped)
    reference.config = dataclasses.replace(reference.config, decoder_layerdrop=0.0)
    assert torch.allclose(out, reference(src, lengths, tgt_in), atol=1e-6)
    for i, layer in enumerate(model.decoder_layers):
        has_grad = any(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in layer.parameters())
        assert has_grad == (i not in skipped)


def test_layerdrop_draws_at_its_rate_and_never_outside_training():
    model = _model(decoder_layerdrop=0.2).train()
    torch.manual_seed(5)
    counts = sum(len(model._skipped_layers()) for _ in range(2000))
    assert counts / (2000 * len(model.decoder_layers)) == pytest.approx(0.2, abs=0.02)
    model.eval()
    assert model._skipped_layers() == set()
