import torch

from tests.pipeline.nmt.conftest import make_model


def test_padding_tokens_never_reach_the_scores(vocab):
    """Whatever ids fill the padding, a sentence's scores stay the same (packing and the attention mask)."""
    model = make_model("gru", vocab, seed=1).eval()
    src = torch.tensor([[5, 6, 7, vocab.eos_id, vocab.pad_id, vocab.pad_id]])
    other = src.clone()
    other[0, 4:] = torch.tensor([9, 8])
    tgt_in = torch.tensor([[vocab.bos_id, 7, 6]])
    with torch.no_grad():
        a = model.score(src, torch.tensor([4]), tgt_in)
        b = model.score(other, torch.tensor([4]), tgt_in)
    assert torch.equal(a, b)
    state = model.encode(src, torch.tensor([4]))
    assert state.tensors["mask"].tolist() == [[True] * 4 + [False] * 2]
    assert state.tensors["memory"].shape == (1, 6, 2 * model.config.hidden_size)
