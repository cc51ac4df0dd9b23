import dataclasses
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


def edit_config(tmp_path: Path, relative: str, old: str, new: str) -> Path:
    """A copy of the configs in tmp_path with `old` replaced by `new` in the file `relative`; the copy's folder."""
    folder = copy_configs(tmp_path)
    path = folder / relative
    text = path.read_text()
    assert old in text, f"{relative} has no {old!r}"
    path.write_text(text.replace(old, new))
    return folder


def test_all_five_tasks_and_five_profiles_load():
    assert config.available("tasks") == PAPER_TASKS
    assert config.available("profiles") == ["medium", "medium-gpu", "paper", "paper-rehearsal", "tiny"]
    directions = {(t.source, t.target) for t in map(config.load_task, PAPER_TASKS)}
    assert directions == {("de", "en"), ("en", "de"), ("zh", "en"), ("en", "ja"), ("ja", "en")}
    ger_eng = config.load_task("ger-eng")
    assert ger_eng.splits.devtest[0] == "newstest2016" and ger_eng.splits.tune == "dev"
    assert ger_eng.lm.order == 5 and ger_eng.languages["de"].tokenizer == "moses"
    assert config.load_task("jpn-eng").languages["ja"] == config.LanguageConfig(tokenizer="mecab", truecase=False)
    assert config.load_profile("tiny").data.train_pairs > 0


def _flat(value, prefix=""):
    if dataclasses.is_dataclass(value):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.name != "path"}
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): value}


def test_the_paper_rehearsal_changes_sizes_only():
    """Every setting that picks a code path is the paper's: only the sizes below may differ."""
    paper, rehearsal = _flat(config.load_profile("paper")), _flat(config.load_profile("paper-rehearsal"))
    sizes = {"name", "description", "data.train_pairs", "data.tune_sentences", "data.eval_sentences",
             "data.train_source", "bpe.merges", "lm.memory", "lm.discount_fallback", "pbmt.mert_iterations",
             "pbmt.mert_random_directions", "pbmt.mert_restarts", "pbmt.workers", "lmbr.tune_sentences",
             "lmbr.max_evidence_states"}
    for arch in ("gru", "transformer"):
        sizes |= {f"nmt.{arch}.{key}" for key in ("embed_size", "hidden_size", "attention_size", "layers",
                                                   "model_size", "heads", "ff_size")}
        sizes |= {f"nmt.{arch}.training.{key}" for key in ("max_tokens", "lr", "warmup_updates", "max_updates",
                                                            "budget_seconds", "checkpoint_every", "valid_sentences",
                                                            "ranks")}
    assert paper.keys() == rehearsal.keys()
    assert {k for k in paper if paper[k] != rehearsal[k]} <= sizes
    assert rehearsal["decode.beam"] == 12 and rehearsal["nmt.gru.training.seeds"] == (1, 2, 3)
    assert rehearsal["nmt.transformer.training.average_checkpoints"] == 20
    assert rehearsal["nmt.gru.training.ranks"] == rehearsal["nmt.transformer.training.ranks"] == 2


def test_medium_gpu_is_medium_but_for_its_nmt_recipes():
    medium, gpu = _flat(config.load_profile("medium")), _flat(config.load_profile("medium-gpu"))
    changed = {key for key in medium if medium[key] != gpu[key]}
    assert all(key.startswith("nmt.") or key in ("name", "description") for key in changed), changed
    assert (gpu["nmt.transformer.training.max_tokens"], gpu["nmt.transformer.dropout"]) == (8000, 0.3)
    assert gpu["nmt.gru.training.seeds"] == (1, 2, 3) and gpu["nmt.gru.embed_size"] == medium["nmt.gru.embed_size"]


def test_a_profile_based_on_itself_is_refused(tmp_path):
    folder = edit_config(tmp_path, "profiles/medium-gpu.toml", 'based_on = "medium"', 'based_on = "medium-gpu"')
    with pytest.raises(ConfigError, match=r"medium-gpu.toml: key 'based_on' must name another profile"):
        config.load_profile("medium-gpu", folder)


def test_unknown_key_names_file_and_key(tmp_path):
    folder = edit_config(tmp_path, "tasks/ger-eng.toml", "[bpe]\njoint", "[bpe]\njiont")
    path = folder / "tasks" / "ger-eng.toml"
    with pytest.raises(ConfigError) as e:
        config.load_task("ger-eng", folder)
    assert str(path) in str(e.value) and "'bpe.jiont'" in str(e.value) and "joint" in str(e.value)


def test_wrong_type_names_file_and_key(tmp_path):
    folder = edit_config(tmp_path, "profiles/tiny.toml", "train_pairs = 4000", 'train_pairs = "many"')
    with pytest.raises(ConfigError, match=r"tiny.toml: key 'data.train_pairs' must be int, not str"):
        config.load_profile("tiny", folder)


def test_bool_is_not_accepted_as_int(tmp_path):
    folder = edit_config(tmp_path, "tasks/ger-eng.toml", "order = 5", "order = true")
    with pytest.raises(ConfigError, match=r"key 'lm.order' must be int, not bool"):
        config.load_task("ger-eng", folder)


def test_missing_key_and_missing_file(tmp_path):
    folder = edit_config(tmp_path, "tasks/chi-eng.toml", 'tune = "dev"', "")
    with pytest.raises(ConfigError, match=r"chi-eng.toml: missing key 'splits.tune'"):
        config.load_task("chi-eng", folder)
    with pytest.raises(ConfigError, match=r"fr-eng.toml: no such config file \(known tasks: chi-eng, eng-ger"):
        config.load_task("fr-eng", folder)


def test_unknown_tokenizer_and_bad_checksum(tmp_path):
    folder = edit_config(tmp_path / "a", "tasks/jpn-eng.toml", 'tokenizer = "mecab"', 'tokenizer = "kytea"')
    with pytest.raises(ConfigError, match=r"key 'languages.ja.tokenizer' is 'kytea' \(known: moses, jieba, mecab\)"):
        config.load_task("jpn-eng", folder)
    folder = edit_config(tmp_path / "b", "tasks/jpn-eng.toml", 'checksum = "sha1:', 'checksum = "crc:')
    with pytest.raises(ConfigError, match=r"key 'downloads.test.checksum'"):
        config.load_task("jpn-eng", folder)


def test_named_data_sources_are_checked(tmp_path):
    ger = config.load_task("ger-eng")
    assert ger.sacrebleu == {"test": "wmt17"} and not ger.downloads
    assert [c.id for c in ger.corpora][:2] == ["Statmt-europarl_wmt13-7-deu-eng", "Statmt-commoncrawl_wmt13-1-deu-eng"]
    assert config.load_task("jpn-eng").downloads["test"].official == "KFTT 1.0 kyoto-test"  # sacrebleu lacks KFTT
    folder = edit_config(tmp_path / "a", "tasks/chi-eng.toml", 'test = "wmt17"', 'test = "wmt99"')
    with pytest.raises(ConfigError, match=r"chi-eng.toml: key 'sacrebleu.test': sacrebleu has no test set 'wmt99' "
                                          r"for zh-en"):
        config.load_task("chi-eng", folder)
    folder = edit_config(tmp_path / "b", "tasks/chi-eng.toml", 'checksum = ""', 'checksum = "sha256"')
    with pytest.raises(ConfigError, match=r"key 'corpora\[0\].checksum' must be '' \(not known yet\) or"):
        config.load_task("chi-eng", folder)
    folder = edit_config(tmp_path / "c", "tasks/chi-eng.toml", 'id = "OPUS-unpc-v1.0-eng-zho"\nname = "',
                         'ids = "OPUS-unpc-v1.0-eng-zho"\nname = "')
    with pytest.raises(ConfigError, match=r"unknown key 'corpora\[0\].ids'"):
        config.load_task("chi-eng", folder)


def test_the_training_data_source_is_the_folder_but_for_the_paper_profile(tmp_path):
    assert [config.load_profile(p).data.train_source for p in ("tiny", "medium", "paper")] == \
        ["folder", "folder", "corpora"]
    assert "train_source" not in config.load_profile("paper").data.hashed()  # the data stage hashes the corpora
    folder = edit_config(tmp_path, "profiles/paper.toml", 'train_source = "corpora"', 'train_source = "web"')
    with pytest.raises(ConfigError, match=r"key 'data.train_source' must be one of folder, corpora"):
        config.load_profile("paper", folder)


def test_split_key_names_the_config_key():
    task = config.load_task("ger-eng")
    assert task.split_key("newstest2014") == "splits.devtest"
    assert task.split_key("dev") == "splits.tune"
    with pytest.raises(ConfigError, match="split 'newstest2099' is not named"):
        task.split_key("newstest2099")


def test_a_task_caps_the_training_pairs_of_a_named_profile_only(tmp_path):
    jpn, ger = config.load_task("jpn-eng"), config.load_task("ger-eng")
    medium, tiny = config.load_profile("medium"), config.load_profile("tiny")
    assert medium.data.train_pairs == 0 and jpn.data_for(medium).train_pairs == 100000
    assert jpn.data_for(tiny) == tiny.data and ger.data_for(medium) == medium.data  # no cap: the same settings
    folder = edit_config(tmp_path, "tasks/jpn-eng.toml", "medium = 100000", "medium = 0")
    with pytest.raises(ConfigError, match="'train_pairs.medium' must be at least 1"):
        config.load_task("jpn-eng", folder)


def test_variants_of_table2_load_and_are_validated(tmp_path):
    medium = config.load_profile("medium")
    assert set(medium.variants) == {"research", "accelerated"}
    accelerated = medium.variant("accelerated")
    assert (accelerated.beam, accelerated.lmbr_nbest, accelerated.threshold, accelerated.single_model) == \
        (4, 200, 0.01, True)
    research = medium.variant("research")
    assert accelerated.searches_as_tuned() and not accelerated.tuned_choices  # its own 200-best, the tuned search
    assert research.searches_as_tuned() and research.tuned_choices and not research.tuned_search
    with pytest.raises(ConfigError, match=r"no \[variants.fast\]"):
        medium.variant("fast")
    folder = edit_config(tmp_path, "profiles/medium.toml", "lmbr_nbest = 200", "lmbr_nbest = -1")
    with pytest.raises(ConfigError, match="'variants.accelerated.lmbr_nbest' must not be negative"):
        config.load_profile("medium", folder)


def test_variants_set_pbmt_limits_and_the_nbest_list_or_keep_the_profiles(tmp_path):
    medium = config.load_profile("medium")
    accelerated, research = medium.variant("accelerated"), medium.variant("research")
    assert (accelerated.pbmt_stack_limit, accelerated.pbmt_distortion_limit, accelerated.pbmt_options_per_phrase,
            accelerated.pbmt_nbest) == (5, 3, 5, 0)
    assert (research.pbmt_stack_limit, research.pbmt_options_per_phrase, research.pbmt_nbest) == (0, 0, -1)
    folder = edit_config(tmp_path / "a", "profiles/medium.toml", "pbmt_options_per_phrase = 5 ",
                         "pbmt_options_per_phrase = -5 ")
    with pytest.raises(ConfigError, match="'variants.accelerated.pbmt_options_per_phrase' must not be negative"):
        config.load_profile("medium", folder)
    folder = edit_config(tmp_path / "b", "profiles/medium.toml", "pbmt_nbest = 0 ", "pbmt_nbest = -2 ")
    with pytest.raises(ConfigError, match="'variants.accelerated.pbmt_nbest' must be -1"):
        config.load_profile("medium", folder)


def test_alphas_of_the_lmbr_grid_must_be_positive(tmp_path):
    assert config.load_profile("medium").lmbr.alphas(1.0) == (1.0,)  # none listed: the lattices' alpha only
    assert config.load_profile("paper").lmbr.alphas(1.0) == (0.5, 1.0)
    folder = edit_config(tmp_path, "profiles/medium.toml", "grid_alpha = []", "grid_alpha = [1.0, 0.0]")
    with pytest.raises(ConfigError, match="'lmbr.grid_alpha' must list positive values"):
        config.load_profile("medium", folder)


def test_a_negative_evidence_state_bound_is_refused(tmp_path):
    folder = edit_config(tmp_path, "profiles/medium.toml", "max_evidence_states = 100000", "max_evidence_states = -1")
    with pytest.raises(ConfigError, match="'lmbr.max_evidence_states' must not be negative"):
        config.load_profile("medium", folder)


def test_gain_forms_are_checked_and_the_grid_defaults_to_the_untuned_form(tmp_path):
    assert config.load_profile("medium").lmbr.gain_forms() == ("per_step", "bounded")
    folder = edit_config(tmp_path / "a", "profiles/medium.toml", 'grid_gains = ["per_step", "bounded"]',
                         "grid_gains = []")
    assert config.load_profile("medium", folder).lmbr.gain_forms() == ("per_step",)
    folder = edit_config(tmp_path / "b", "profiles/medium.toml", 'gains = "per_step"', 'gains = "once"')
    with pytest.raises(ConfigError, match="'lmbr.gains' must be one of per_step, bounded"):
        config.load_profile("medium", folder)
    folder = edit_config(tmp_path / "c", "profiles/medium.toml", 'grid_gains = ["per_step", "bounded"]',
                         'grid_gains = ["bounded", "twice"]')
    with pytest.raises(ConfigError, match="'lmbr.grid_gains' must list gain forms"):
        config.load_profile("medium", folder)


def test_searches_are_checked_and_without_a_grid_the_profile_s_search_is_the_only_one(tmp_path):
    assert config.load_profile("medium").lmbr.search_forms() == ("free", "anchored")
    assert config.load_profile("tiny").lmbr.search_forms() == ("free",)
    folder = edit_config(tmp_path / "a", "profiles/medium.toml", 'grid_search = ["free", "anchored"]',
                         'grid_search = ["free", "everywhere"]')
    with pytest.raises(ConfigError, match="'lmbr.grid_search' must list searches of free, anchored"):
        config.load_profile("medium", folder)
    folder = edit_config(tmp_path / "b", "profiles/medium.toml", 'grid_search = ["free", "anchored"]',
                         'grid_search = []\nsearch = "wide"')
    with pytest.raises(ConfigError, match="'lmbr.search' must be one of free, anchored"):
        config.load_profile("medium", folder)


def test_a_patience_below_one_is_refused(tmp_path):
    assert config.load_profile("medium").lmbr.patience == 4.0
    folder = edit_config(tmp_path, "profiles/medium.toml", "patience = 4.0", "patience = 0.5")
    with pytest.raises(ConfigError, match="'lmbr.patience' must be at least 1"):
        config.load_profile("medium", folder)


def test_race_checkpoints_must_rise_within_the_tuning_sentences(tmp_path):
    lmbr = config.load_profile("medium").lmbr
    assert (lmbr.race_sentences, lmbr.race_keep) == ((25, 50), 0.3333)
    assert config.load_profile("tiny").lmbr.race_sentences == ()  # no race: the full grid
    for name, bad in (("a", "[50, 25]"), ("b", "[25, 300]"), ("c", "[0, 50]")):
        folder = edit_config(tmp_path / name, "profiles/medium.toml", "race_sentences = [25, 50]",
                             f"race_sentences = {bad}")
        with pytest.raises(ConfigError, match="'lmbr.race_sentences' must list increasing prefixes"):
            config.load_profile("medium", folder)
    folder = edit_config(tmp_path / "d", "profiles/medium.toml", "race_keep = 0.3333", "race_keep = 0.0")
    with pytest.raises(ConfigError, match=r"'lmbr.race_keep' must be in \(0, 1\]"):
        config.load_profile("medium", folder)
    assert lmbr.race_finalists == 1  # off: the race of before
    folder = edit_config(tmp_path / "e", "profiles/medium.toml", "race_finalists = 1", "race_finalists = 0")
    with pytest.raises(ConfigError, match="'lmbr.race_finalists' must be at least 1"):
        config.load_profile("medium", folder)


def test_the_reordering_model_is_distance_based_by_default_and_checked(tmp_path):
    assert config.load_profile("tiny").pbmt.reordering == "distance"  # a profile that does not set it
    assert config.load_profile("paper").pbmt.reordering == "msd-bidirectional-fe"  # Moses' standard model
    folder = edit_config(tmp_path / "a", "profiles/medium.toml", "workers = 2  ",
                         'reordering = "msd-bidirectional-fe"\nworkers = 2  ')
    assert config.load_profile("medium", folder).pbmt.reordering == "msd-bidirectional-fe"
    folder = edit_config(tmp_path / "b", "profiles/medium.toml", "workers = 2  ", 'reordering = "msd"\nworkers = 2  ')
    with pytest.raises(ConfigError, match="key 'pbmt.reordering' must be one of 'distance', 'msd-bidirectional-fe'"):
        config.load_profile("medium", folder)


def test_every_profile_decodes_with_the_speed_features_on_and_early_exit_needs_raw_scores(tmp_path):
    for name in config.available("profiles"):
        decode = config.load_profile(name).decode
        assert decode.early_exit and decode.ancestry_cache and decode.precompute_embeddings, name
        assert decode.hashed()["early_exit"] is decode.hashed()["ancestry_cache"] is True
    folder = edit_config(tmp_path, "profiles/medium.toml", "early_exit = true", "early_exit = false")
    assert "early_exit" not in config.load_profile("medium", folder).decode.hashed()  # off: the ids of before
    folder = edit_config(tmp_path / "b", "profiles/medium.toml", "length_penalty = 0.0", "length_penalty = 1.0")
    with pytest.raises(ConfigError, match="'decode.early_exit' needs raw scores"):
        config.load_profile("medium", folder)


def test_gradient_accumulation_and_the_transformer_dropouts_are_checked(tmp_path):
    paper = config.load_profile("paper").nmt.transformer
    assert paper.training.update_freq * paper.training.max_tokens >= 24000  # the paper's ~25k tokens an update
    medium = config.load_profile("medium").nmt.transformer
    assert medium.attention_dropout == medium.activation_dropout == 0.0 and medium.training.update_freq == 1
    folder = edit_config(tmp_path / "a", "profiles/medium.toml", "distillation = \"pbmt\"",
                         "update_freq = 0\ndistillation = \"pbmt\"")
    with pytest.raises(ConfigError, match="'nmt.transformer.training.update_freq' must be at least 1"):
        config.load_profile("medium", folder)
    folder = edit_config(tmp_path / "b", "profiles/medium.toml", "attention_dropout = 0.0", "attention_dropout = 1.5")
    with pytest.raises(ConfigError, match="'nmt.transformer.attention_dropout' must be in"):
        config.load_profile("medium", folder)


def test_a_linear_schedule_needs_max_updates_above_its_warm_up(tmp_path):
    schedule = 'lr_schedule = "inverse_sqrt"\nwarmup_updates = 800'
    folder = edit_config(tmp_path / "a", "profiles/medium.toml", schedule,
                         'lr_schedule = "linear"\nwarmup_updates = 800')
    assert config.load_profile("medium", folder).nmt.transformer.training.lr_schedule == "linear"
    max_updates = config.load_profile("medium").nmt.transformer.training.max_updates
    folder = edit_config(tmp_path / "b", "profiles/medium.toml", schedule,
                         f'lr_schedule = "linear"\nwarmup_updates = {max_updates}')
    with pytest.raises(ConfigError, match="'nmt.transformer.training.max_updates' must be above "
                                          "training.warmup_updates with lr_schedule 'linear'"):
        config.load_profile("medium", folder)
    folder = edit_config(tmp_path / "c", "profiles/medium.toml", schedule,
                         'lr_schedule = "cosine"\nwarmup_updates = 800')
    with pytest.raises(ConfigError, match="'nmt.transformer.training.lr_schedule' must be one of inverse_sqrt, "
                                          "constant, linear"):
        config.load_profile("medium", folder)


@pytest.mark.parametrize("setting, message", [
    ("decoder_layerdrop = 1.0", "'nmt.transformer.decoder_layerdrop' must be in \\[0, 1\\)"),
    ("source_word_dropout = -0.1", "'nmt.transformer.source_word_dropout' must be in \\[0, 1\\)"),
    ("target_word_dropout = 1.5", "'nmt.transformer.target_word_dropout' must be in \\[0, 1\\)"),
])
def test_the_low_resource_regularisers_are_probabilities(tmp_path, setting, message):
    folder = edit_config(tmp_path, "profiles/medium.toml", "[nmt.transformer]\n", f"[nmt.transformer]\n{setting}\n")
    with pytest.raises(ConfigError, match=message):
        config.load_profile("medium", folder)


@pytest.mark.parametrize("old, new, message", [
    ('distillation = "pbmt"', 'distillation = "hybrid"',
     "'nmt.transformer.training.distillation' must be one of none, pbmt, pbmt\\+references"),
    ('distillation_variant = "accelerated"', 'distillation_variant = "fast"',
     "'nmt.transformer.training.distillation_variant' names no \\[variants.fast\\]"),
])
def test_distillation_names_a_known_teacher_and_variant(tmp_path, old, new, message):
    folder = edit_config(tmp_path, "profiles/medium.toml", old, new)
    with pytest.raises(ConfigError, match=message):
        config.load_profile("medium", folder)
    training = config.load_profile("medium").nmt.transformer.training
    assert (training.distillation, training.distillation_variant) == ("pbmt", "accelerated")


def test_a_task_may_name_a_pretrained_model_by_hub_name_or_folder(tmp_path):
    checkout = config.CONFIG_DIR.parent
    assert config.load_task("ger-eng").pretrained.location(checkout) is None  # none by default
    folder = edit_config(tmp_path, "tasks/ger-eng.toml", "[lm]", '[pretrained]\nmodel = "Helsinki-NLP/opus-mt-de-en"'
                                                                 "\n\n[lm]")
    assert config.load_task("ger-eng", folder).pretrained.location(checkout) == "Helsinki-NLP/opus-mt-de-en"
    for value, expected in (("./models/opus-mt-de-en", checkout / "models" / "opus-mt-de-en"),
                            ("/srv/models/opus-mt-de-en", Path("/srv/models/opus-mt-de-en"))):
        pretrained = config.PretrainedTaskConfig(value)
        assert pretrained.location(checkout) == expected
    for bad in ("opus mt", "a/b/c", " Helsinki-NLP/opus-mt-de-en"):
        path = folder / "tasks" / "ger-eng.toml"
        path.write_text(path.read_text().replace(path.read_text().split("model = ")[1].split("\n")[0], f'"{bad}"'))
        with pytest.raises(ConfigError, match=r"ger-eng.toml: key 'pretrained.model' is .*a hub name \(owner/name\)"):
            config.load_task("ger-eng", folder)
    path.write_text(path.read_text().replace("model = ", "modle = "))
    with pytest.raises(ConfigError, match=r"unknown key 'pretrained.modle'"):
        config.load_task("ger-eng", folder)


def test_the_tuning_window_must_end_within_the_prepared_tuning_lines(tmp_path):
    lmbr = config.load_profile("medium").lmbr
    assert lmbr.tune_start == 0 and lmbr.tie_bleu == 0.0 and lmbr.tune_window() == range(0, 300)
    folder = edit_config(tmp_path / "a", "profiles/medium.toml", "tune_start = 0 ", "tune_start = 700 ")
    assert config.load_profile("medium", folder).lmbr.tune_window() == range(700, 1000)
    folder = edit_config(tmp_path / "b", "profiles/medium.toml", "tune_start = 0 ", "tune_start = 701 ")
    with pytest.raises(ConfigError, match=r"'lmbr.tune_start' the tuning window ends at sentence 1001 \(tune_start "
                                          r"701 \+ tune_sentences 300\), past the 1000 tuning lines"):
        config.load_profile("medium", folder)
    folder = edit_config(tmp_path / "c", "profiles/medium.toml", "tie_bleu = 0.0 ", "tie_bleu = -0.1 ")
    with pytest.raises(ConfigError, match="'lmbr.tie_bleu' must not be negative"):
        config.load_profile("medium", folder)


def test_a_task_replaces_nmt_settings_of_a_named_profile_only(tmp_path):
    jpn, ger = config.load_task("jpn-eng"), config.load_task("ger-eng")
    medium, tiny = config.load_profile("medium"), config.load_profile("tiny")
    replaced = jpn.nmt_for(medium, "transformer")
    assert replaced.training.max_updates == 3500 < medium.nmt.transformer.training.max_updates
    assert replaced.training.distillation == "none" != medium.nmt.transformer.training.distillation
    assert dataclasses.replace(replaced.training, max_updates=4000,
                               distillation="pbmt") == medium.nmt.transformer.training  # only those
    assert jpn.nmt_for(medium, "gru").training.max_updates == 3500
    assert jpn.nmt_for(tiny, "gru") == tiny.nmt.gru and ger.nmt_for(medium, "gru") == medium.nmt.gru
    folder = edit_config(tmp_path / "a", "tasks/jpn-eng.toml", "[nmt.medium.gru.training]\nmax_updates = 3500",
                         "[nmt.medium.gru]\ndropout = 0.3\n[nmt.medium.gru.training]\nseeds = [1, 2]")
    gru = config.load_task("jpn-eng", folder).nmt_for(medium, "gru")
    assert (gru.dropout, gru.training.seeds, gru.training.max_updates) == (0.3, (1, 2), 4000)
    for case, (old, new, error) in enumerate([
            ("[nmt.medium.gru.training]", "[nmt.medium.lstm.training]",
             r"jpn-eng.toml: key 'nmt.medium.lstm' names no NMT architecture"),
            ("[nmt.medium.gru.training]", "[nmt.huge.gru.training]", r"key 'nmt.huge' names no profile"),
            ("max_updates = 3500\ndistillation", "max_update = 3500\ndistillation",
             r"jpn-eng.toml: unknown key 'nmt.medium.transformer.training.max_update'"),
            ("[nmt.medium.gru.training]\nmax_updates = 3500", "[nmt.medium.gru]\ndropout = 1.5",
             r"jpn-eng.toml: key 'nmt.medium.gru.dropout' must be in \[0, 1\)"),
            ("[nmt.medium.gru.training]\nmax_updates = 3500", "[nmt.medium.gru.training]\nmax_updates = \"many\"",
             r"jpn-eng.toml: key 'nmt.medium.gru.training.max_updates' must be int, not str")]):
        folder = edit_config(tmp_path / str(case), "tasks/jpn-eng.toml", old, new)
        with pytest.raises(ConfigError, match=error):
            config.load_task("jpn-eng", folder)


def test_the_sample_mbr_settings_are_checked(tmp_path):
    assert config.load_profile("paper").mbr == config.SampleMbrProfile()  # a profile without [mbr]: the defaults
    for old, new, message in (("epsilon = 0.02", "epsilon = 1.0", "'mbr.epsilon' must be in \\[0, 1\\)"),
                              ('utilities = ["chrf", "bleu"]', 'utilities = ["comet"]',
                               "'mbr.utilities' must list utilities of chrf, bleu"),
                              ("grid_lattice_share = [0.0, 0.25", "grid_lattice_share = [1.5, 0.25",
                               "'mbr.grid_lattice_share' must list weights in \\[0, 1\\]")):
        folder = edit_config(tmp_path / old[:4], "profiles/medium.toml", old, new)
        with pytest.raises(ConfigError, match=message):
            config.load_profile("medium", folder)
