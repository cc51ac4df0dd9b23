"""Real Luigi (local scheduler) on the small de-en corpus: FNMT and TNMT decode a split with the batched beam decoder
(models trained for seconds), and EvaluateSystem scores them."""
import re

import torch
from luigi.execution_summary import LuigiStatusCode

from pipeline.io import read_lines
from tasks import DecodeFNMT, DecodeTNMT, EvaluateSystem
from tasks.systems import translation_task
from tests.conftest import sentence_pairs, write_pair
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_nmt_tasks import quick_configs

torch.set_num_threads(1)


def test_fnmt_and_tnmt_translate_a_split_line_for_line(tmp_path):
    data = tmp_path / "data"
    write_pair(data, "train", sentence_pairs(300, seed=1))
    write_pair(data, "dev", sentence_pairs(40, seed=2))
    test = sentence_pairs(20, seed=3)
    test[4] = ("An empty source line.", "")  # (en, de): ger-eng translates from the empty German line
    write_pair(data, "newstest2016", test)
    configs = quick_configs(tmp_path)
    profile = configs / "profiles" / "tiny.toml"
    profile.write_text(re.sub(r"^batch_sentences = .*$", "batch_sentences = 3", profile.read_text(), flags=re.M))
    params = shared_params(tmp_path, data, config_dir=configs)
    fnmt = DecodeFNMT(split="newstest2016", **params)
    tnmt = DecodeTNMT(split="newstest2016", **params)
    bleu = EvaluateSystem(system="FNMT", split="newstest2016", **params)
    assert translation_task("FNMT") is DecodeFNMT and translation_task("TNMT") is DecodeTNMT
    assert build(fnmt, tnmt, bleu).status == LuigiStatusCode.SUCCESS
    for task in (fnmt, tnmt):
        folder = task.artifact_dir()
        translation = list(read_lines(folder / "translation.en"))
        subwords = list(read_lines(folder / "bpe.en"))
        assert len(translation) == len(subwords) == 20
        assert translation[4] == "" and subwords[4] == ""
        # (models trained for seconds may well say nothing: the line count and the empty line are what matter)
        stats = task.signature()["stats"]
        assert set(stats["timings"]) == {"nmt_load", "nmt_decode", "postprocess"} and stats["words_per_minute"] > 0
        assert stats["beam"] == 4 and stats["batch_sentences"] == 3 and stats["decoded_sentences"] == 19
        assert stats["peak_memory_bytes"] > 0 and stats["source_words"] > 0
    assert fnmt.signature()["stats"]["models"] == 2 and tnmt.signature()["stats"]["models"] == 1
    record = bleu.signature()["stats"]
    assert record["lines"] == 20 and 0 <= record["bleu"]["score"] <= 100
    assert record["timings"]["nmt_decode"] == fnmt.signature()["stats"]["timings"]["nmt_decode"]
