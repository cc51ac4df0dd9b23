"""A pretrained model's generation_config: what shapes its output is followed, so that our search still equals
`generate`; what is not followed is named."""
from __future__ import annotations

import logging

import pytest

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from pipeline.nmt.generation_config import read_generation_rules  # noqa: E402
from pipeline.nmt.pretrained import load_pretrained  # noqa: E402
from tests.pipeline.nmt.test_pretrained import assert_same_nbest, generate_nbest, our_nbest  # noqa: E402
from tests.pipeline.nmt.tiny_hf import (FAMILIES, bias_token, synthetic_lines, tiny_family,  # noqa: E402
                                        tiny_marian)

LINES = synthetic_lines(6, seed=11)


def with_generation_config(folder, family: str, **settings):
    """The tiny model of `family` in `folder`, its generation_config.json carrying `settings`, and a word the config
    bans made the likeliest output (the pad token for Marian, as OPUS-MT's config bans; a word for M2M100)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tiny_family(family, folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    banned = tokenizer.pad_token_id if family == "marian" else tokenizer.convert_tokens_to_ids(
        tokenizer.tokenize("haus")[0])
    bias_token(model, banned, 6.0, unit=1)  # unit 0 carries tiny_hf's EOS bias
    for key, value in {"bad_words_ids": [[banned]], **settings}.items():
        setattr(model.generation_config, key, value)
    model.save_pretrained(folder)
    return folder, banned


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_our_search_follows_the_bad_words_of_the_generation_config_and_still_equals_generate(family, tmp_path):
    folder, banned = with_generation_config(tmp_path / family, family)
    system = load_pretrained(folder, "de", "en")
    assert system.model.banned == (banned,) and system.generation.followed["banned"] == [banned]
    theirs = generate_nbest(system, LINES)  # generate applies the model's generation_config itself
    assert all(banned not in tokens for sentence in theirs for tokens, _ in sentence)
    ours = our_nbest(system, LINES, batch=3)
    assert_same_nbest(ours, theirs, system.vocab)


def test_the_favoured_word_would_be_produced_without_the_ban(tmp_path):
    """The test above can fail: without the ban, our search emits the favoured pad token."""
    folder, banned = with_generation_config(tmp_path / "m", "marian")
    system = load_pretrained(folder, "de", "en")
    system.model.banned = ()
    assert any(banned in tokens for sentence in our_nbest(system, LINES, batch=3) for tokens, _ in sentence)


def test_settings_not_followed_are_named_and_logged(tmp_path, caplog):
    folder, _ = with_generation_config(tmp_path / "m", "marian", num_beams=6, max_length=64, no_repeat_ngram_size=3,
                                       repetition_penalty=1.2, forced_eos_token_id=0)
    with caplog.at_level(logging.WARNING, logger="pipeline.nmt.generation_config"):
        system = load_pretrained(folder, "de", "en")
    rules = system.generation
    assert set(rules.not_followed) == {"no_repeat_ngram_size", "repetition_penalty"}
    assert "not applied by this search" in rules.not_followed["no_repeat_ngram_size"]
    assert "num_beams=6" in rules.followed["search"] and "max_length=64" in rules.followed["search"]
    assert "no_repeat_ngram_size=3: not applied" in caplog.text and "repetition_penalty" in caplog.text


def test_a_multilingual_models_forced_first_token_is_the_tasks_language(tmp_path):
    folder, _ = with_generation_config(tmp_path / "m2m", "m2m100")
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    french = tokenizer.convert_tokens_to_ids("__fr__")
    model.generation_config.forced_bos_token_id = french
    rules = read_generation_rules(model, "m2m", multilingual=True)
    assert rules.forced_bos is None and "the task's target language token" in rules.not_followed["forced_bos_token_id"]
    model.save_pretrained(folder)
    system = load_pretrained(folder, "de", "en")
    assert system.model.bos_id == tokenizer.convert_tokens_to_ids("__en__")


def test_a_model_that_does_not_declare_its_languages_is_taken_with_a_warning(tmp_path, caplog):
    folder = tiny_marian(tmp_path / "m", source_lang=None, target_lang=None)
    with caplog.at_level(logging.WARNING, logger="pipeline.nmt.pretrained"):
        system = load_pretrained(folder, "de", "en")
    assert not system.languages_declared
    assert "does not declare the languages it translates; taken to translate de -> en" in caplog.text
    declared = load_pretrained(tiny_marian(tmp_path / "d"), "de", "en")
    assert declared.languages_declared
