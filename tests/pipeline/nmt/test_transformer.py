import math

import pytest
import torch

from pipeline.nmt.transformer import TransformerModel, _fused_linear, sinusoidal_positions
from tests.pipeline.nmt.conftest import make_model, transformer_config


def test_sinusoidal_positions_have_sines_then_cosines():
    table = sinusoidal_positions(50, 8)
    assert table.shape == (50, 8)
    assert table[0].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert table[7, 0].item() == pytest.approx(math.sin(7)) and table[7, 4].item() == pytest.approx(math.cos(7))


def test_sizes_are_checked(vocab):
    with pytest.raises(ValueError, match="model_size 30 is not a multiple of heads 4"):
        TransformerModel(transformer_config(vocab, model_size=30))
    model = make_model("transformer", vocab, max_positions=6).eval()
    with pytest.raises(ValueError, match="7 positions exceeds max_positions 6"):
        model(torch.full((1, 7), 5), torch.tensor([7]), torch.full((1, 2), 5))


def test_the_output_projection_is_tied_to_the_target_embeddings(vocab):
    model = make_model("transformer", vocab)
    assert model.output.weight is model.tgt_embed.weight
    assert model.num_parameters() < sum(p.numel() for p in model.state_dict().values())


def _unfused(state: dict) -> dict:
    """A state dict in the layout before the fused projections: separate query, key and value layers."""
    old = {}
    for name, tensor in state.items():
        if ".in_proj." in name:
            for part, piece in zip(("query", "key", "value"), tensor.chunk(3)):
                old[name.replace("in_proj", part)] = piece.clone()
        elif ".key_value." in name:
            for part, piece in zip(("key", "value"), tensor.chunk(2)):
                old[name.replace("key_value", part)] = piece.clone()
        else:
            old[name] = tensor
    return old


def test_a_checkpoint_of_separate_projections_loads_into_the_fused_ones(vocab):
    trained = make_model("transformer", vocab, seed=4).eval()
    old_layout = _unfused(trained.state_dict())
    assert any(".self_attn.query." in n for n in old_layout) and not any("in_proj" in n for n in old_layout)
    loaded = make_model("transformer", vocab, seed=5).eval()
    loaded.load_state_dict(old_layout)
    src, lengths, tgt = torch.randint(4, len(vocab), (3, 6)), torch.tensor([6, 4, 2]), torch.randint(4, len(vocab), (3, 5))
    with torch.no_grad():
        assert torch.equal(loaded(src, lengths, tgt), trained(src, lengths, tgt))


@pytest.mark.parametrize("parts", [2, 3])
def test_a_fused_projection_is_drawn_as_the_separate_layers_are(parts):
    """_fused_linear draws what `parts` separate nn.Linear(d, d) would, in the same order (weights and biases
    concatenated), and leaves the random generator where they leave it: the rest of a model gets the same draws."""
    torch.manual_seed(3)
    separate = [torch.nn.Linear(8, 8) for _ in range(parts)]
    after_separate = torch.rand(16)
    torch.manual_seed(3)
    fused = _fused_linear(8, parts)
    after_fused = torch.rand(16)
    assert fused.weight.shape == (parts * 8, 8) and fused.weight.fused_blocks == parts
    assert torch.equal(fused.weight, torch.cat([layer.weight for layer in separate]))
    assert torch.equal(fused.bias, torch.cat([layer.bias for layer in separate]))
    assert torch.equal(after_fused, after_separate)


def test_xavier_initialises_each_part_of_a_fused_projection_as_its_own_matrix(vocab, monkeypatch):
    """The model's Xavier initialisation runs on every [d, d] part of in_proj [3d, d] and key_value [2d, d], never on
    the fused matrix (whose fan would make the bound sqrt(6 / 4d) instead of sqrt(6 / 2d)); the same seed, the same
    initial model."""
    initialised = set()  # (address, shape) of every tensor Xavier-initialised
    xavier = torch.nn.init.xavier_uniform_

    def recorded(tensor, *args, **kwargs):
        initialised.add((tensor.data_ptr(), tuple(tensor.shape)))
        return xavier(tensor, *args, **kwargs)

    monkeypatch.setattr(torch.nn.init, "xavier_uniform_", recorded)
    model = make_model("transformer", vocab, seed=6)
    d, layers = model.config.model_size, model.config.layers
    fused = [p for p in model.parameters() if hasattr(p, "fused_blocks")]
    assert len(fused) == 3 * layers  # in_proj of every encoder and decoder layer, key_value of every decoder layer
    for weight in fused:
        assert (weight.data_ptr(), tuple(weight.shape)) not in initialised
        assert all((block.data_ptr(), (d, d)) in initialised for block in weight.chunk(weight.fused_blocks))
    bound = math.sqrt(6 / (2 * d))
    for layer in model.decoder_layers:
        for weight in (layer.self_attn.in_proj.weight, layer.cross_attn.key_value.weight):
            assert weight.abs().max() <= bound and weight.abs().max() > 0.9 * bound
    again = make_model("transformer", vocab, seed=6)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))


def test_attention_and_activation_dropout_are_their_own_settings(vocab):
    """0 by default (fairseq's defaults): the residual dropout alone leaves attention on the fused kernel and the
    feed-forward without a mask; set, they drop attention weights and ReLU outputs in training."""
    plain = make_model("transformer", vocab, seed=7, dropout=0.1)
    assert plain.encoder_layers[0].self_attn.dropout == 0.0
    assert isinstance(plain.encoder_layers[0].ff.dropout, torch.nn.Identity)
    both = make_model("transformer", vocab, seed=7, dropout=0.0, attention_dropout=0.5, activation_dropout=0.5)
    src, lengths, tgt = torch.randint(4, len(vocab), (2, 5)), torch.tensor([5, 3]), torch.randint(4, len(vocab), (2, 4))
    torch.manual_seed(0)
    noisy = both.train()(src, lengths, tgt)
    clean = both.eval()(src, lengths, tgt)
    assert not torch.allclose(noisy, clean)
