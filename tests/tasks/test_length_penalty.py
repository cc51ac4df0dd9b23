"""TuneLengthPenalty: the plain NMT systems' length penalty chosen by BLEU on the tuning window, against decodings of
every alpha done here, and DecodeTNMT decoding with the choice."""
from __future__ import annotations

import re

import pytest
import torch
from luigi.execution_summary import LuigiStatusCode

from pipeline.config import load_profile
from pipeline.decode import SearchSettings
from pipeline.decode.translate import load_models, translate_lines
from pipeline.errors import ConfigError
from pipeline.evaluation.bleu import corpus_bleu
from pipeline.io import read_json, read_lines
from tasks import ApplyBPE, DecodeTNMT, NMTSystem, TokenizeSplit
from tasks.decode import DecodeLTNMT
from tasks.length_penalty import TuneLengthPenalty, choose_length_penalty
from tests.conftest import write_deen_folder
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_decode_tasks import deterministic_configs

torch.set_num_threads(1)

GRID = (0.0, 1.0, 3.0)


def _configs(folder, grid: str, tune_sentences: int = 50):
    """deterministic_configs with the [decode] line `grid` and a tuning window of `tune_sentences`."""
    configs = deterministic_configs(folder)
    profile = configs / "profiles" / "tiny.toml"
    text = re.sub(r"^tune_sentences = 50 ", f"tune_sentences = {tune_sentences} ", profile.read_text(), flags=re.M)
    profile.write_text(text.replace("[decode]\n", f"[decode]\n{grid}\n", 1))
    return configs


def test_the_chosen_length_penalty_is_the_best_of_the_grid_and_the_decoding_uses_it(tmp_path):
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    (tmp_path / "grid").mkdir()
    configs = _configs(tmp_path / "grid", f"grid_length_penalty = {list(GRID)}", tune_sentences=20)
    params = shared_params(tmp_path, data, config_dir=configs)
    tuning = TuneLengthPenalty(models="TNMT", **params)
    decoding = DecodeTNMT(split="newstest2016", **params)
    assert build(tuning, decoding).status == LuigiStatusCode.SUCCESS

    # every alpha of the grid decoded here: the same BLEU as the tuning recorded
    profile = load_profile("tiny", configs)
    decode = profile.decode
    tune = profile.lmbr.tune_window()
    models = load_models([NMTSystem(system="TNMT", **params).artifact_dir() / "system.json"], "cpu")
    split = tuning.config.splits.tune
    lines = list(read_lines(ApplyBPE(split=split, **params).artifact_dir() / "bpe.de.gz"))[tune.start:tune.stop]
    references = list(read_lines(TokenizeSplit(split=split, **params).artifact_dir() / "raw.en.gz"))[tune.start:
                                                                                                      tune.stop]
    processor = _processor(decoding)
    outputs, bleu = {}, {}
    for alpha in GRID:
        settings = SearchSettings(beam=decode.beam, length_penalty=alpha, max_length_a=decode.max_length_a,
                                  max_length_b=decode.max_length_b, early_exit=alpha == 0)
        outputs[alpha] = translate_lines(lines, models, settings, processor, source=None,
                                         batch_sentences=decode.batch_sentences, sort=decode.sort).text
        bleu[alpha] = corpus_bleu(outputs[alpha], references, "en").score
    record = read_json(tuning.artifact_dir() / "length_penalty.json")
    assert {point["length_penalty"]: point["bleu"] for point in record["bleu"]} == bleu
    assert record["sentences"] == 20 == len(lines)
    assert outputs[0.0] != outputs[3.0]  # the penalty changes what the search keeps
    assert tuning.chosen() == choose_length_penalty(bleu, profile.lmbr.tie_bleu)

    # DecodeTNMT decodes the evaluation split with the chosen alpha (early exit only at 0)
    chosen = tuning.chosen()
    assert decoding.length_penalty() == chosen and decoding.signature()["stats"]["length_penalty"] == chosen
    assert decoding.signature()["params"]["length_penalty"] == "tuned"
    eval_lines = list(read_lines(ApplyBPE(split="newstest2016", **params).artifact_dir() / "bpe.de.gz"))
    settings = SearchSettings(beam=decode.beam, length_penalty=chosen, max_length_a=decode.max_length_a,
                              max_length_b=decode.max_length_b, early_exit=chosen == 0)
    expected = translate_lines(eval_lines, models, settings, processor, source=None,
                               batch_sentences=decode.batch_sentences, sort=decode.sort)
    assert list(read_lines(decoding.artifact_dir() / "translation.en")) == expected.text

    # the hybrids keep the profile's length penalty and are not tied to the tuning
    ltnmt = DecodeLTNMT(split="newstest2016", **params)
    assert not ltnmt.tunes_length() and ltnmt.length_penalty() == decode.length_penalty
    assert "length" not in ltnmt.requires()


def _processor(task: DecodeTNMT):
    """DecodeTNMT's target postprocessing (detokenizer and truecaser)."""
    from pathlib import Path

    from pipeline.text import TextProcessor, get_tokenizer
    from tasks.data import load_truecaser

    tokenizer = get_tokenizer(task.config.languages["en"].tokenizer, "en", Path(task.cache_dir) / "tokenizers")
    truecaser = load_truecaser(task.requires()["truecaser"].artifact_dir(), "en")
    return TextProcessor(tokenizer=tokenizer, truecaser=truecaser, bpe=None)


def test_without_a_grid_the_decodings_keep_their_artifacts(tmp_path):
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=4)
    plain = shared_params(tmp_path, data, config_dir=deterministic_configs(tmp_path / "plain"))
    (tmp_path / "grid").mkdir()
    tuned = shared_params(tmp_path, data, config_dir=_configs(tmp_path / "grid", "grid_length_penalty = [0.0, 1.0]"))
    for system in (DecodeTNMT, DecodeLTNMT):
        assert "length_penalty" not in system(split="newstest2016", **plain).params()
    assert (DecodeTNMT(split="newstest2016", **plain).artifact_dir()
            != DecodeTNMT(split="newstest2016", **tuned).artifact_dir())
    assert (DecodeLTNMT(split="newstest2016", **plain).artifact_dir()
            == DecodeLTNMT(split="newstest2016", **tuned).artifact_dir())


@pytest.mark.parametrize("bleu, tie, expected", [
    ({0.0: 10.0, 1.0: 12.0, 2.0: 11.0}, 0.0, 1.0),
    ({0.0: 10.0, 1.0: 12.0, 2.0: 12.0}, 0.0, 1.0),   # a tie: the smaller alpha
    ({0.0: 11.8, 1.0: 12.0, 2.0: 11.0}, 0.3, 0.0),   # within tie_bleu: the smaller alpha
    ({0.0: 11.6, 1.0: 12.0, 2.0: 11.0}, 0.3, 1.0),
])
def test_the_choice_is_the_best_alpha_and_ties_go_to_the_smaller(bleu, tie, expected):
    assert choose_length_penalty(bleu, tie) == expected


def test_a_negative_length_penalty_in_the_grid_is_refused(tmp_path):
    (tmp_path / "grid").mkdir()
    configs = _configs(tmp_path / "grid", "grid_length_penalty = [0.0, -1.0]")
    with pytest.raises(ConfigError, match="grid_length_penalty"):
        load_profile("tiny", configs)
