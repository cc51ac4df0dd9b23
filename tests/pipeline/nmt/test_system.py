import pytest
import torch

from pipeline.nmt.checkpoint import CheckpointError, save_checkpoint
from pipeline.nmt.system import load_system, system_members, write_system
from pipeline.vocab import Vocabulary
from tests.pipeline.nmt.conftest import make_model


def test_a_system_loads_its_members_as_one_ensemble(vocab, tmp_path):
    (tmp_path / "models").mkdir()
    vocab.save(tmp_path / "models" / "vocab.json")
    models = [make_model("gru", vocab, seed=s).eval() for s in (1, 2)]
    paths = [save_checkpoint(tmp_path / "models" / f"m{i}.pt", m.config, m.state_dict(),
                             {"source": "vocab.json", "target": "vocab.json"}) for i, m in enumerate(models)]
    write_system(tmp_path / "sys" / "system.json", "gru", paths)
    assert system_members(tmp_path / "sys" / "system.json") == [tmp_path / "sys" / "../models/m0.pt",
                                                                 tmp_path / "sys" / "../models/m1.pt"]
    ensemble, src_vocab, tgt_vocab = load_system(tmp_path / "sys" / "system.json")
    assert len(ensemble) == 2 and src_vocab == tgt_vocab == vocab
    src, lengths, prev = torch.tensor([[5, 6, 2]]), torch.tensor([3]), torch.tensor([vocab.bos_id])
    with torch.no_grad():
        got, _ = ensemble.step(ensemble.encode(src, lengths), prev)
        expected = sum(m.step(m.encode(src, lengths), prev)[0] for m in models) / 2
    torch.testing.assert_close(got, expected)


def test_members_must_share_their_vocabularies(vocab, tmp_path):
    other = Vocabulary(vocab.tokens[:4] + tuple(reversed(vocab.tokens[4:])))
    vocab.save(tmp_path / "a.json")
    other.save(tmp_path / "b.json")
    model = make_model("gru", vocab)
    paths = [save_checkpoint(tmp_path / f"m{i}.pt", model.config, model.state_dict(), {"source": v, "target": v})
             for i, v in enumerate(("a.json", "b.json"))]
    write_system(tmp_path / "system.json", "gru", paths)
    with pytest.raises(CheckpointError, match="m1.pt: its vocabularies differ"):
        load_system(tmp_path / "system.json")
