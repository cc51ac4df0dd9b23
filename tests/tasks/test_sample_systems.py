"""The rows over the Transformer's samples (TNMT-MBR, MBR-union, LTNMT-smp, LTNMT-mix) as Luigi stages on a small
de-en corpus: each selection against a brute force over sacrebleu's sentence scores, and the evidence each LMBR row
decodes with."""
from __future__ import annotations

import json
import re

from luigi.execution_summary import LuigiStatusCode
from sacrebleu import sentence_bleu, sentence_chrf

from lattices.posteriors import sample_posteriors
from pipeline.io import read_lines
from pipeline.vocab import Vocabulary
from tasks import BuildVocab
from tasks.sample_mbr import (DecodeLTNMTMixture, DecodeLTNMTSamples, DecodeSampleMBR, DecodeUnionMBR, SampleNMT,
                              TuneSampleMBR, sample_evidence)
from tasks.systems import comparisons, translation_task
from tests.conftest import write_deen_folder
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_decode_tasks import untuned_configs

SYSTEMS = ("TNMT-MBR", "MBR-union", "LTNMT-smp", "LTNMT-mix")


def expected_utility(text: str, references: list[str], utility: str) -> float:
    score = sentence_bleu if utility == "bleu" else sentence_chrf
    return sum(score(text, [r]).score for r in references) / len(references)


def small_sample_configs(configs, **keys: str):
    """`configs` with 8 samples a sentence, a tuning window within the data folder's 40 tuning lines, and the given
    [mbr] keys set to TOML values."""
    profile = configs / "profiles" / "tiny.toml"
    text = re.sub(r"^tune_sentences = 50\b", "tune_sentences = 20", profile.read_text(), flags=re.M)
    for key, value in {"samples": "8", **keys}.items():
        text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, flags=re.M)
    profile.write_text(text)
    return configs


def test_the_sample_rows_choose_the_brute_force_argmax_and_decode_with_their_evidence(tmp_path):
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=10)
    configs = small_sample_configs(untuned_configs(tmp_path))
    params = shared_params(tmp_path, data, config_dir=configs)
    systems = {name: translation_task(name)(split="newstest2016", **params) for name in SYSTEMS}
    assert [type(t) for t in systems.values()] == [DecodeSampleMBR, DecodeUnionMBR, DecodeLTNMTSamples,
                                                   DecodeLTNMTMixture]
    assert build(*systems.values()).status == LuigiStatusCode.SUCCESS
    samples = SampleNMT(split="newstest2016", **params).samples()
    assert len(samples) == 10 and all(len(line) == 8 for line in samples.text)
    utility = TuneSampleMBR(candidates="samples", **params).chosen()
    chosen = list(read_lines(systems["TNMT-MBR"].artifact_dir() / "translation.en"))
    union = list(read_lines(systems["MBR-union"].artifact_dir() / "translation.en"))
    union_utility = TuneSampleMBR(candidates="union", **params).chosen()
    for line, drawn in enumerate(samples.text):
        expected = {text: expected_utility(text, drawn, utility) for text in drawn}
        best = max(expected.values())
        assert chosen[line] == next(t for t in drawn if abs(expected[t] - best) < 1e-9)  # the first of the best
        if union_utility == utility:  # the union's candidates include every sample: never a lower expectation
            assert expected_utility(union[line], drawn, utility) >= best - 1e-9
    # LTNMT-smp decodes with its samples' posteriors alone, LTNMT-mix untuned with half of each
    assert systems["LTNMT-smp"].signature()["stats"]["evidence"]["lattice_weight"] == 0.0
    assert systems["LTNMT-mix"].signature()["stats"]["evidence"]["lattice_weight"] == 0.5
    vocab = Vocabulary.load(BuildVocab(**params).artifact_dir() / "vocab.en.json")
    evidence = sample_evidence(samples, vocab, 4)
    store = systems["LTNMT-smp"].lmatrix_store()
    for line in (0, 7):
        wrapped = [[vocab.bos_id, *ids, vocab.eos_id] for ids in samples.ids[line]]
        assert evidence[line].as_dict() == sample_posteriors(wrapped, 4).as_dict()
        assert store.get([line])[0].posteriors.as_dict() == evidence[line].as_dict()


def test_each_sample_row_is_compared_with_the_nmt_lmbr_lattice_mbr_and_sampling_mbr():
    pairs = comparisons(("PBMT", "TNMT", "LTNMT", "MBR", *SYSTEMS))
    assert set(pairs["TNMT-MBR"]) == {"LTNMT-smp", "LTNMT-mix", "MBR-union"}
    assert set(pairs["LTNMT-smp"]) == {"LTNMT-mix"}
    for baseline in ("TNMT", "LTNMT", "MBR"):
        assert set(SYSTEMS) <= set(pairs[baseline])


def test_the_mixture_grid_tries_every_weight_at_ltnmts_lambda_and_the_samples_alone_at_every_lambda():
    from tasks.sample_mbr import mixture_grid

    assert mixture_grid((0.0, 0.5, 1.0), (0.01, 0.05), 0.05) == [(0.0, 0.05), (0.5, 0.05), (1.0, 0.05), (0.0, 0.01)]


def test_tuning_chooses_the_mixture_and_the_samples_own_lambda_on_the_tuning_window(tmp_path):
    from tasks.decode import DecodeLTNMT
    from tasks.sample_mbr import TuneEvidenceMixture
    from tasks.tuning import TuneLMBR
    from tests.tasks.test_decode_tasks import deterministic_configs

    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=6)
    configs = small_sample_configs(deterministic_configs(tmp_path), grid_lattice_share="[0.5, 1.0]")
    params = shared_params(tmp_path, data, config_dir=configs)
    smp, mix = (translation_task(name)(split="newstest2016", **params) for name in ("LTNMT-smp", "LTNMT-mix"))
    assert build(smp, mix).status == LuigiStatusCode.SUCCESS
    tuning = TuneEvidenceMixture(**params)
    record = tuning.signature()["stats"]
    grid = json.loads((tuning.artifact_dir() / "mixture.json").read_text())["grid"]
    own = TuneLMBR(models="TNMT", **params).chosen()["nmt_lambda"]
    lambdas = [0.01, 0.05, 0.25]  # the tiny profile's grid_lambda
    assert [(p["lattice_weight"], p["nmt_lambda"]) for p in grid] == \
        [(0.5, own), (1.0, own)] + [(0.0, lam) for lam in lambdas]
    mixtures = [p for p in grid if p["lattice_weight"] > 0]
    best = max(mixtures, key=lambda p: p["bleu"])
    assert record["chosen"] == {"lattice_weight": best["lattice_weight"], "nmt_lambda": best["nmt_lambda"]}
    alone = max((p for p in grid if p["lattice_weight"] == 0.0), key=lambda p: p["bleu"])
    assert smp.signature()["stats"]["lmbr"]["nmt_lambda"] == alone["nmt_lambda"]
    assert mix.signature()["stats"]["evidence"]["lattice_weight"] == best["lattice_weight"]
    assert mix.signature()["stats"]["lmbr"]["nmt_lambda"] == best["nmt_lambda"]
    assert DecodeLTNMT(split="newstest2016", **params).nmt_lambda() == own
