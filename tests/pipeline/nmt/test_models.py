import shutil

import pytest

from pipeline.config import CONFIG_DIR, load_profile
from pipeline.errors import ConfigError
from pipeline.nmt.models import build_model, limit_vocabulary, model_config
from pipeline.vocab import Vocabulary


def test_profile_sizes_become_model_configs_with_the_vocabulary_specials():
    src = Vocabulary.build([["a", "b", "c"]])
    tgt = Vocabulary.build([["x", "y"]])
    nmt = load_profile("tiny").nmt
    gru = model_config("gru", nmt.gru, src, tgt)
    assert (gru.src_vocab_size, gru.tgt_vocab_size) == (7, 6)
    assert (gru.pad_id, gru.bos_id, gru.eos_id) == (tgt.pad_id, tgt.bos_id, tgt.eos_id)
    assert gru.hidden_size == nmt.gru.hidden_size and gru.dropout == nmt.gru.dropout
    transformer = model_config("transformer", nmt.transformer, src, tgt)
    assert transformer.model_size == nmt.transformer.model_size and transformer.heads == nmt.transformer.heads
    assert build_model(transformer).num_parameters() > 0
    with pytest.raises(ValueError, match="unknown NMT architecture 'rnn'"):
        model_config("rnn", nmt.gru, src, tgt)


def test_the_paper_profile_has_the_papers_vocabularies_averaging_and_ensembles():
    nmt = load_profile("paper").nmt
    assert (nmt.gru.vocab_size, nmt.transformer.vocab_size) == (50000, 30000)
    assert nmt.transformer.training.average_checkpoints == 20 and len(nmt.gru.training.seeds) == 3


def test_limit_vocabulary_keeps_the_most_frequent_entries_and_the_specials():
    vocab = Vocabulary.build([["a", "a", "a", "b", "b", "c"]])
    assert limit_vocabulary(vocab, 6).tokens[4:] == ("a", "b")
    assert limit_vocabulary(vocab, 0) is vocab and limit_vocabulary(vocab, 100) is vocab


def test_an_nmt_profile_value_out_of_range_names_the_file_and_key(tmp_path):
    shutil.copytree(CONFIG_DIR, tmp_path / "configs")
    path = tmp_path / "configs" / "profiles" / "paper.toml"
    path.write_text(path.read_text().replace("average_checkpoints = 20", "average_checkpoints = 21"))
    with pytest.raises(ConfigError, match=r"paper.toml: key 'nmt.transformer.training.average_checkpoints' must be"):
        load_profile("paper", tmp_path / "configs")
