from pathlib import Path

import pytest

from pipeline import config
from pipeline.errors import ConfigError

PAPER_TASKS = ["chi-eng", "eng-ger", "eng-jpn", "ger-eng", "jpn-eng"]


def copy_configs(tmp_path: Path) -> Path:
    for kind in ("tasks", "profiles"):
        (tmp_path / kind).mkdir(parents=True)
        for f in (config.CONFIG_DIR / kind).glob("*.toml"):
            (tmp_path / kind / f.name).write_text(f.read_text())
    return tmp_path


def test_all_five_tasks_and_three_profiles_load():
    assert config.available("tasks") == PAPER_TASKS
    assert config.available("profiles") == ["paper", "small", "tiny"]
    directions = {(t.source, t.target) for t in map(config.load_task, PAPER_TASKS)}
    assert directions == {("de", "en"), ("en", "de"), ("zh", "en"), ("en", "ja"), ("ja", "en")}
    ger_eng = config.load_task("ger-eng")
    assert ger_eng.splits.devtest[0] == "newstest2016" and ger_eng.splits.tune == "dev"
    assert ger_eng.lm.order == 5 and ger_eng.languages["de"].tokenizer == "moses"
    assert config.load_task("jpn-eng").languages["ja"] == config.LanguageConfig(tokenizer="mecab", truecase=False)
    assert config.load_profile("tiny").data.train_pairs > 0


def test_unknown_key_names_file_and_key(tmp_path):
    folder = copy_configs(tmp_path)
    path = folder / "tasks" / "ger-eng.toml"
    path.write_text(path.read_text().replace("[bpe]\njoint", "[bpe]\njiont"))
    with pytest.raises(ConfigError) as e:
        config.load_task("ger-eng", folder)
    assert str(path) in str(e.value) and "'bpe.jiont'" in str(e.value) and "joint" in str(e.value)


def test_wrong_type_names_file_and_key(tmp_path):
    folder = copy_configs(tmp_path)
    path = folder / "profiles" / "tiny.toml"
    path.write_text(path.read_text().replace("train_pairs = 4000", 'train_pairs = "many"'))
    with pytest.raises(ConfigError, match=r"tiny.toml: key 'data.train_pairs' must be int, not str"):
        config.load_profile("tiny", folder)


def test_bool_is_not_accepted_as_int(tmp_path):
    folder = copy_configs(tmp_path)
    path = folder / "tasks" / "ger-eng.toml"
    path.write_text(path.read_text().replace("order = 5", "order = true"))
    with pytest.raises(ConfigError, match=r"key 'lm.order' must be int, not bool"):
        config.load_task("ger-eng", folder)


def test_missing_key_and_missing_file(tmp_path):
    folder = copy_configs(tmp_path)
    path = folder / "tasks" / "chi-eng.toml"
    path.write_text(path.read_text().replace('tune = "dev"', ""))
    with pytest.raises(ConfigError, match=r"chi-eng.toml: missing key 'splits.tune'"):
        config.load_task("chi-eng", folder)
    with pytest.raises(ConfigError, match=r"fr-eng.toml: no such config file \(known tasks: chi-eng, eng-ger"):
        config.load_task("fr-eng", folder)


def test_unknown_tokenizer_and_bad_checksum(tmp_path):
    folder = copy_configs(tmp_path)
    path = folder / "tasks" / "jpn-eng.toml"
    text = path.read_text()
    path.write_text(text.replace('tokenizer = "mecab"', 'tokenizer = "kytea"'))
    with pytest.raises(ConfigError, match=r"key 'languages.ja.tokenizer' is 'kytea' \(known: moses, jieba, mecab\)"):
        config.load_task("jpn-eng", folder)
    path.write_text(text.replace('checksum = "sha1:', 'checksum = "crc:'))
    with pytest.raises(ConfigError, match=r"key 'downloads.test.checksum'"):
        config.load_task("jpn-eng", folder)


def test_split_key_names_the_config_key():
    task = config.load_task("ger-eng")
    assert task.split_key("newstest2014") == "splits.devtest"
    assert task.split_key("dev") == "splits.tune"
    with pytest.raises(ConfigError, match="split 'newstest2099' is not named"):
        task.split_key("newstest2099")


def test_a_task_caps_the_training_pairs_of_a_named_profile_only(tmp_path):
    jpn, ger = config.load_task("jpn-eng"), config.load_task("ger-eng")
    small, tiny = config.load_profile("small"), config.load_profile("tiny")
    assert small.data.train_pairs == 0 and jpn.data_for(small).train_pairs == 100000
    assert jpn.data_for(tiny) == tiny.data and ger.data_for(small) == small.data  # no cap: the same settings
    folder = copy_configs(tmp_path)
    path = folder / "tasks" / "jpn-eng.toml"
    path.write_text(path.read_text().replace("small = 100000", "small = 0"))
    with pytest.raises(ConfigError, match="'train_pairs.small' must be at least 1"):
        config.load_task("jpn-eng", folder)


def test_variants_of_table2_load_and_are_validated(tmp_path):
    small = config.load_profile("small")
    assert set(small.variants) == {"research", "accelerated"}
    accelerated = small.variant("accelerated")
    assert (accelerated.beam, accelerated.lmbr_nbest, accelerated.threshold, accelerated.single_model) == \
        (4, 200, 0.01, True)
    with pytest.raises(ConfigError, match=r"no \[variants.fast\]"):
        small.variant("fast")
    folder = copy_configs(tmp_path)
    path = folder / "profiles" / "small.toml"
    path.write_text(path.read_text().replace("lmbr_nbest = 200", "lmbr_nbest = -1"))
    with pytest.raises(ConfigError, match="'variants.accelerated.lmbr_nbest' must not be negative"):
        config.load_profile("small", folder)


def test_variants_set_pbmt_limits_and_the_nbest_list_or_keep_the_profiles(tmp_path):
    small = config.load_profile("small")
    accelerated, research = small.variant("accelerated"), small.variant("research")
    assert (accelerated.pbmt_stack_limit, accelerated.pbmt_distortion_limit, accelerated.pbmt_options_per_phrase,
            accelerated.pbmt_nbest) == (5, 3, 5, 0)
    assert (research.pbmt_stack_limit, research.pbmt_options_per_phrase, research.pbmt_nbest) == (0, 0, -1)
    folder = copy_configs(tmp_path)
    path = folder / "profiles" / "small.toml"
    text = path.read_text()
    path.write_text(text.replace("pbmt_options_per_phrase = 5 ", "pbmt_options_per_phrase = -5 "))
    with pytest.raises(ConfigError, match="'variants.accelerated.pbmt_options_per_phrase' must not be negative"):
        config.load_profile("small", folder)
    path.write_text(text.replace("pbmt_nbest = 0 ", "pbmt_nbest = -2 "))
    with pytest.raises(ConfigError, match="'variants.accelerated.pbmt_nbest' must be -1"):
        config.load_profile("small", folder)


def test_alphas_of_the_lmbr_grid_must_be_positive(tmp_path):
    assert config.load_profile("small").lmbr.alphas(1.0) == (1.0,)  # none listed: the lattices' alpha only
    assert config.load_profile("paper").lmbr.alphas(1.0) == (0.5, 1.0)
    folder = copy_configs(tmp_path)
    path = folder / "profiles" / "small.toml"
    path.write_text(path.read_text().replace("grid_alpha = []", "grid_alpha = [1.0, 0.0]"))
    with pytest.raises(ConfigError, match="'lmbr.grid_alpha' must list positive values"):
        config.load_profile("small", folder)


def test_a_negative_evidence_state_bound_is_refused(tmp_path):
    folder = copy_configs(tmp_path)
    path = folder / "profiles" / "small.toml"
    path.write_text(path.read_text().replace("max_evidence_states = 100000", "max_evidence_states = -1"))
    with pytest.raises(ConfigError, match="'lmbr.max_evidence_states' must not be negative"):
        config.load_profile("small", folder)
