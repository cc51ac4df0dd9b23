import pytest
import torch

from pipeline.nmt.checkpoint import (CheckpointError, checkpoint_name, list_checkpoints, load_checkpoint, load_model,
                                     load_vocabularies, save_checkpoint)
from pipeline.nmt.models import build_model, config_from_dict
from tests.pipeline.nmt.conftest import gru_config, make_model, transformer_config


@pytest.mark.parametrize("arch", ["gru", "transformer"])
def test_a_saved_model_loads_with_the_same_weights_config_and_vocabularies(arch, vocab, tmp_path):
    vocab.save(tmp_path / "vocab.json")
    model = make_model(arch, vocab, seed=1)
    path = save_checkpoint(tmp_path / "ckpt" / checkpoint_name(7), model.config, model.state_dict(),
                           {"source": "../vocab.json", "target": "../vocab.json"}, training={"update": 7})
    assert [p.name for p in path.parent.iterdir()] == ["checkpoint-00000007.pt"]  # no temporary left behind
    loaded = load_model(path)
    assert loaded.config == model.config and not loaded.training
    for (name, a), b in zip(model.state_dict().items(), loaded.state_dict().values()):
        assert torch.equal(a, b), name
    ckpt = load_checkpoint(path)
    assert ckpt.training == {"update": 7}
    src, tgt = load_vocabularies(ckpt)
    assert src == tgt == vocab


def test_a_corrupt_checkpoint_is_an_error_naming_the_file(vocab, tmp_path):
    model = make_model("gru", vocab)
    path = save_checkpoint(tmp_path / "c.pt", model.config, model.state_dict())
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match=rf"{path}: not a readable checkpoint"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        load_checkpoint(tmp_path / "missing.pt")
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(CheckpointError, match=rf"{other}: not an NMT checkpoint"):
        load_checkpoint(other)


def test_weights_that_do_not_fit_the_config_are_an_error_naming_the_file(vocab, tmp_path):
    model = make_model("transformer", vocab)
    wrong = transformer_config(vocab, ff_size=64)
    path = save_checkpoint(tmp_path / "c.pt", wrong, model.state_dict())
    with pytest.raises(CheckpointError, match=rf"{path}: the weights do not match the model config"):
        load_model(path)


def test_vocabulary_of_another_size_is_an_error(vocab, tmp_path):
    vocab.save(tmp_path / "vocab.json")
    config = gru_config(vocab, tgt_vocab_size=len(vocab) + 2)
    path = save_checkpoint(tmp_path / "c.pt", config, build_model(config).state_dict(),
                           {"source": "vocab.json", "target": "vocab.json"})
    with pytest.raises(CheckpointError, match=r"target vocabulary .* has 14 entries, the model 16"):
        load_vocabularies(load_checkpoint(path))


def test_checkpoints_are_listed_by_update_and_configs_round_trip(vocab, tmp_path):
    for update in (100, 20, 3):
        (tmp_path / checkpoint_name(update)).write_bytes(b"")
    (tmp_path / "checkpoint-x.pt").write_bytes(b"")
    assert [p.name for p in list_checkpoints(tmp_path)] == [checkpoint_name(u) for u in (3, 20, 100)]
    config = transformer_config(vocab)
    assert config_from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown NMT architecture 'lstm'"):
        config_from_dict({**config.to_dict(), "architecture": "lstm"})
