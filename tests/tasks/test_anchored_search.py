"""Anchored LMBR search in the pipeline (pipeline/decode/anchored.py): TuneSearch chooses it on the tuning set,
DecodeLNMT decodes with it. Real Luigi on the small de-en corpus, models trained for seconds."""
import json
import re

import torch
from luigi.execution_summary import LuigiStatusCode

from pipeline.decode import SearchSettings, decode_sources
from pipeline.decode.constraints import acceptor_hook_factory
from pipeline.decode.hooks import chain_factories
from pipeline.decode.lmbr_hook import lmbr_hook_factory
from pipeline.decode.scores import max_output_lengths
from pipeline.io import read_lines
from pipeline.nmt.system import load_system
from tasks.decode import DecodeLNMT
from tasks.lmatrix import BuildAcceptors
from tasks.tuning import TuneLMBR, TuneSearch
from tests.conftest import write_deen_folder
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_decode_tasks import deterministic_configs

torch.set_num_threads(1)


def edit_profile(configs, **settings: str):
    """The tiny profile's [lmbr] keys set to the given TOML values (added after `patience` when absent)."""
    profile = configs / "profiles" / "tiny.toml"
    head, lmbr = profile.read_text().split("\n[lmbr]\n")
    lmbr, rest = lmbr.split("\n[variants", 1)
    for key, value in settings.items():
        line = re.compile(rf"^{key} = .*$", re.M)
        lmbr = line.sub(f"{key} = {value}", lmbr) if line.search(lmbr) else f"{lmbr}\n{key} = {value}"
    profile.write_text(f"{head}\n[lmbr]\n{lmbr}\n[variants{rest}")


def test_anchored_lnmt_writes_per_line_the_higher_scoring_of_the_free_and_the_lattice_search(tmp_path):
    data = write_deen_folder(tmp_path / "data", eval_sentences=12)
    configs = deterministic_configs(tmp_path)
    edit_profile(configs, tune="false", gains='"bounded"', search='"anchored"', nmt_lambda="0.5")
    params = shared_params(tmp_path, data, config_dir=configs)
    lnmt = DecodeLNMT(split="newstest2016", **params)
    assert build(lnmt).status == LuigiStatusCode.SUCCESS
    assert "search" not in lnmt.requires() and lnmt.search_form() == "anchored"
    signature = lnmt.signature()
    assert signature["params"]["search"] == "anchored" and signature["stats"]["lmbr"]["search"] == "anchored"
    # the oracle: the free and the lattice-constrained searches of the same models and L, each on its own
    ensemble, src_vocab, tgt_vocab = load_system(lnmt.requires()["system"].artifact_dir() / "system.json")
    sources = [src_vocab.encode(line.split()) + [src_vocab.eos_id]
               for line in read_lines(lnmt.requires()["subwords"].artifact_dir() / "bpe.de.gz")]
    decode = lnmt.profile_config.decode
    settings = SearchSettings(beam=decode.beam, max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                              weight=0.5, patience=lnmt.profile_config.lmbr.patience)
    limits = max_output_lengths(torch.tensor([len(s) for s in sources]), settings.max_length_a,
                                settings.max_length_b).tolist()
    acceptors = BuildAcceptors(split="newstest2016", **params).acceptors()
    lmbr = lmbr_hook_factory(lnmt.lmatrix_store(), tgt_vocab.bos_id, gains="bounded")
    free, inside = (decode_sources(ensemble, sources, settings, decode.batch_sentences, decode.sort,
                                   hook_factory=factory)
                    for factory in (lmbr, chain_factories([lmbr, acceptor_hook_factory(
                        [acceptors.get(i) for i in range(len(sources))], limits, tgt_vocab.eos_id)])))
    won = [i + 1 for i, (f, c) in enumerate(zip(free, inside)) if c and c[0].score > f[0].score]
    assert signature["stats"]["lattice_lines"] == won
    written = list(read_lines(lnmt.artifact_dir() / "bpe.en"))
    for i, line in enumerate(written):
        assert tuple(tgt_vocab.encode(line.split())) == (inside if i + 1 in won else free)[i][0].tokens


def test_tune_search_keeps_the_search_of_the_higher_tuning_bleu_and_its_free_bleu_is_tune_lmbr_s(tmp_path):
    data = write_deen_folder(tmp_path / "data", eval_sentences=12)
    configs = deterministic_configs(tmp_path)
    edit_profile(configs, tune_sentences="20", grid_lambda="[0.05]", grid_p="[0.0]", grid_r="[0.0]",
                 grid_gains='["bounded"]', grid_search='["free", "anchored"]')
    params = shared_params(tmp_path, data, config_dir=configs)
    tuning = TuneSearch(models="FNMT", **params)
    assert build(tuning).status == LuigiStatusCode.SUCCESS
    record = json.loads((tuning.artifact_dir() / "search.json").read_text())
    bleu = record["bleu"]
    assert set(bleu) == {"free", "anchored"} and record["sentences"] == 20
    assert record["chosen"]["search"] == ("anchored" if bleu["anchored"] > bleu["free"] else "free")
    # the free search at TuneLMBR's point is TuneLMBR's own decoding of that point (one grid point here)
    grid = json.loads((TuneLMBR(models="FNMT", **params).artifact_dir() / "lmbr.json").read_text())["grid"]
    assert len(grid) == 1 and bleu["free"] == grid[0]["bleu"]
    lnmt = DecodeLNMT(split="newstest2016", **params)
    assert lnmt.requires()["search"] == tuning and lnmt.params()["search"] == "tuned"
