import math

import pytest
import torch

from pipeline.nmt.transformer import TransformerModel, sinusoidal_positions
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
