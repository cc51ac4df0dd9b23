import pytest
import torch

from pipeline.nmt.average import average_checkpoints, average_last, average_state_dicts
from pipeline.nmt.checkpoint import CheckpointError, checkpoint_name, load_checkpoint, save_checkpoint
from tests.pipeline.nmt.conftest import make_model


def save(model, path):
    return save_checkpoint(path, model.config, model.state_dict())


@pytest.mark.parametrize("arch", ["gru", "transformer"])
def test_the_average_of_identical_checkpoints_is_the_checkpoint(arch, vocab, tmp_path):
    model = make_model(arch, vocab, seed=1)
    paths = [save(model, tmp_path / checkpoint_name(i)) for i in range(3)]
    averaged = load_checkpoint(average_checkpoints(paths, tmp_path / "avg.pt"))
    for name, value in model.state_dict().items():
        assert torch.equal(averaged.model[name], value), name
    assert averaged.meta["averaged_from"] == [p.name for p in paths]


def test_the_average_of_two_checkpoints_is_the_mean_of_their_tensors(vocab, tmp_path):
    a, b = make_model("transformer", vocab, seed=1), make_model("transformer", vocab, seed=2)
    out = average_checkpoints([save(a, tmp_path / "a.pt"), save(b, tmp_path / "b.pt")], tmp_path / "avg.pt")
    averaged = load_checkpoint(out).model
    for name, value in a.state_dict().items():
        expected = (value + b.state_dict()[name]) / 2
        torch.testing.assert_close(averaged[name], expected, atol=1e-7, rtol=0)
    assert not torch.equal(a.state_dict()["src_embed.weight"], b.state_dict()["src_embed.weight"])
    in_memory = average_state_dicts([a.state_dict(), b.state_dict()])
    assert all(torch.equal(in_memory[k], averaged[k]) for k in averaged)


def test_average_last_takes_the_newest_k(vocab, tmp_path):
    for update, seed in ((5, 1), (10, 2), (15, 3)):
        save(make_model("gru", vocab, seed=seed), tmp_path / checkpoint_name(update))
    used = average_last(tmp_path, 2, tmp_path / "out" / "model.pt")
    assert [p.name for p in used] == [checkpoint_name(10), checkpoint_name(15)]
    assert len(average_last(tmp_path, 20, tmp_path / "all.pt")) == 3  # fewer than K: all of them


def test_checkpoints_of_different_models_do_not_average(vocab, tmp_path):
    paths = [save(make_model("gru", vocab), tmp_path / "a.pt"),
             save(make_model("gru", vocab, hidden_size=32), tmp_path / "b.pt")]
    with pytest.raises(CheckpointError, match=rf"{paths[1]}: model config .* differs"):
        average_checkpoints(paths, tmp_path / "avg.pt")
    with pytest.raises(CheckpointError, match="no checkpoint-"):
        average_last(tmp_path / "empty", 3, tmp_path / "x.pt")
