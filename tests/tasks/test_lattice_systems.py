"""Lattice rescoring (FNMT-lat ... LTNMT-lat) and lattice MBR as Luigi stages on a small de-en corpus."""
from __future__ import annotations

import json
import re

from luigi.execution_summary import LuigiStatusCode

from lattices.acceptor import Acceptor
from lattices.lmatrix_shards import LMatrixStore
from lattices.mbr import lattice_mbr
from lattices.theta import Theta
from pipeline.io import read_lines
from pipeline.vocab import Vocabulary
from tasks import BuildLMatrix, BuildVocab
from tasks.decode import DecodeFNMTLattice, DecodeLNMTLattice, DecodeTNMTLattice
from tasks.lmatrix import BuildAcceptors
from tasks.mbr import DecodeLatticeMBR
from tasks.smt import DecodePBMT
from tasks.systems import comparisons, translation_task
from tests.conftest import write_deen_folder
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_decode_tasks import deterministic_configs, untuned_configs


def test_lattice_systems_stay_in_the_lattice_and_mbr_is_the_exact_argmax(tmp_path):
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    params = shared_params(tmp_path, data, config_dir=untuned_configs(tmp_path))
    systems = {name: translation_task(name)(split="newstest2016", **params)
               for name in ("FNMT-lat", "LNMT-lat", "TNMT-lat", "MBR")}
    assert [type(t) for t in systems.values()] == [DecodeFNMTLattice, DecodeLNMTLattice, DecodeTNMTLattice,
                                                   DecodeLatticeMBR]
    assert build(*systems.values()).status == LuigiStatusCode.SUCCESS
    acceptors_task = BuildAcceptors(split="newstest2016", **params)
    acceptors = acceptors_task.acceptors()
    assert sorted(acceptors) == list(range(12)) and acceptors_task.signature()["stats"]["empty"] == []
    vocab = Vocabulary.load(BuildVocab(**params).artifact_dir() / "vocab.en.json")
    for name in ("FNMT-lat", "LNMT-lat", "TNMT-lat"):
        task = systems[name]
        stats = task.signature()["stats"]
        subwords = list(read_lines(task.artifact_dir() / "bpe.en"))
        for line, pieces in enumerate(subwords):
            if line + 1 not in stats["unconstrained_lines"]:
                assert acceptors[line].accepts(vocab.encode(pieces.split())), (name, line, pieces)
        assert len(stats["unconstrained_lines"]) <= 2  # only sentences whose lattice strings exceed the length limit
        texts = list(read_lines(task.artifact_dir() / "translation.en"))
        assert [line for line, pieces in enumerate(subwords, 1) if "<unk>" in pieces.split()] == \
            stats["restored_lines"] and not any("<unk>" in texts[line - 1] for line in stats["restored_lines"])
    # MBR: each output is the exact argmax over the sentence's evidence space
    store = LMatrixStore(sorted(BuildLMatrix(split="newstest2016", **params).artifact_dir().glob("shard-*.npz")))
    mbr = list(read_lines(systems["MBR"].artifact_dir() / "bpe.en"))
    for line in range(12):
        best = lattice_mbr(acceptors[line], store.get([line])[0], vocab.bos_id, vocab.eos_id)
        assert mbr[line].split() == vocab.decode(list(best.tokens))
    assert systems["MBR"].signature()["stats"]["pbmt_fallback_lines"] == []
    assert isinstance(acceptors[0], Acceptor)


def test_every_hybrid_is_compared_with_pbmt_its_nmt_system_and_lattice_mbr_and_the_nmt_with_pbmt():
    assert comparisons(["PBMT", "FNMT", "LNMT", "TNMT", "LTNMT", "FNMT-lat", "MBR"]) == {
        "PBMT": ["FNMT", "LNMT", "TNMT", "LTNMT", "FNMT-lat", "MBR"], "FNMT": ["LNMT", "FNMT-lat"], "TNMT": ["LTNMT"],
        "MBR": ["LNMT", "LTNMT", "FNMT-lat"]}
    assert comparisons(["PBMT", "LNMT", "FNMT"]) == {"PBMT": ["FNMT", "LNMT"], "FNMT": ["LNMT"]}  # no MBR built
    assert comparisons(["FNMT", "TNMT"]) == {}


def test_a_heavy_lattice_weight_gives_the_pbmt_1best_and_tuning_chooses_mu_on_the_tune_set(tmp_path):
    """mu weighs the lattice's own (pushed) cost: when it outweighs the NMT, lattice rescoring is the PBMT's 1-best;
    TuneRescoring picks mu (and lambda with L) by BLEU on the tuning set and the -lat systems decode with it."""
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    configs = untuned_configs(tmp_path)
    profile = configs / "profiles" / "tiny.toml"
    profile.write_text(re.sub(r"^lattice_weight = .*$", "lattice_weight = 1e5", profile.read_text(), flags=re.M))
    params = shared_params(tmp_path, data, config_dir=configs)
    heavy, pbmt = DecodeFNMTLattice(split="newstest2016", **params), DecodePBMT(split="newstest2016", **params)
    assert build(heavy, pbmt).status == LuigiStatusCode.SUCCESS
    assert heavy.signature()["params"]["lattice_weight"] == 1e5 and heavy.signature()["stats"]["lattice_weight"] == 1e5
    words = [line.replace("@@ ", "") for line in read_lines(heavy.artifact_dir() / "bpe.en")]
    unconstrained = heavy.signature()["stats"]["unconstrained_lines"]
    expected = list(read_lines(pbmt.artifact_dir() / "words.en"))
    assert len(unconstrained) <= 2
    assert [w for k, w in enumerate(words) if k + 1 not in unconstrained] == \
        [w for k, w in enumerate(expected) if k + 1 not in unconstrained]

    tuned = tmp_path / "tuned"
    tuned.mkdir()
    configs = deterministic_configs(tuned)
    profile = configs / "profiles" / "tiny.toml"
    text = re.sub(r"^tune_sentences = 50 .*$", "tune_sentences = 20", profile.read_text(), flags=re.M)
    text = re.sub(r"^grid_lambda = .*$", "grid_lambda = [0.01, 1.0]", text, flags=re.M)
    text = re.sub(r"^grid_mbr_p = .*$", "grid_mbr_p = [0.0, -0.5]", text, flags=re.M)
    profile.write_text(re.sub(r"^grid_lattice_weight = .*$", "grid_lattice_weight = [0.0, 1e5]", text, flags=re.M))
    params = shared_params(tmp_path, data, config_dir=configs)
    systems = [DecodeFNMTLattice(split="newstest2016", **params), DecodeLNMTLattice(split="newstest2016", **params)]
    mbr = DecodeLatticeMBR(split="newstest2016", **params)
    assert build(*systems, mbr).status == LuigiStatusCode.SUCCESS
    lmbr = systems[1].requires()["tuning"].chosen()  # LNMT-lat keeps LNMT's lambda, theta, alpha and gain form
    for task, start in zip(systems, ({"nmt_lambda": 1.0}, lmbr)):
        tuning = task.requires()["rescoring"]
        record = json.loads((tuning.artifact_dir() / "rescoring.json").read_text())
        assert [p["lattice_weight"] for p in record["grid"]] == [0.0, 1e5]
        assert all(p[k] == v for p in record["grid"] for k, v in start.items())
        best = max(record["grid"], key=lambda point: point["bleu"])
        assert record["chosen"] == {k: v for k, v in best.items() if k != "bleu"} and record["sentences"] == 20
        assert task.signature()["params"]["lattice_weight"] == "tuned"
        assert task.signature()["stats"]["lattice_weight"] == best["lattice_weight"]
    assert systems[1].signature()["stats"]["lmbr"]["nmt_lambda"] == lmbr["nmt_lambda"]

    # MBR: theta's p and r chosen on the tuning set, and the split decoded under them
    record = json.loads((mbr.requires()["tuning"].artifact_dir() / "mbr.json").read_text())
    start = record["start"]
    def clip(x: float) -> float:
        return round(min(1.0, max(0.01, x)), 6)

    assert [(p["p"], p["r"]) for p in record["grid"]] == [(clip(start["p"] + dp), clip(start["r"])) for dp in (0.0, -0.5)]
    best = max(record["grid"], key=lambda point: point["bleu"])
    assert record["chosen"] == {k: v for k, v in best.items() if k != "bleu"}
    assert mbr.signature()["stats"]["theta"] == {"p": best["p"], "r": best["r"]}
    theta = Theta.from_p_r(best["p"], best["r"], "scaled", 10.0)
    store = LMatrixStore(sorted(BuildLMatrix(split="newstest2016", **params).artifact_dir().glob("shard-*.npz")))
    acceptors = BuildAcceptors(split="newstest2016", **params).acceptors()
    vocab = Vocabulary.load(BuildVocab(**params).artifact_dir() / "vocab.en.json")
    for line, pieces in enumerate(read_lines(mbr.artifact_dir() / "bpe.en")):
        exact = lattice_mbr(acceptors[line], store.get([line])[0].with_theta(theta), vocab.bos_id, vocab.eos_id)
        assert pieces.split() == vocab.decode(list(exact.tokens))


def test_mbr_tunes_the_path_scale_alpha_and_decodes_with_the_chosen_alphas_posteriors(tmp_path):
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    configs = deterministic_configs(tmp_path)
    profile = configs / "profiles" / "tiny.toml"
    text = re.sub(r"^tune_sentences = 50 .*$", "tune_sentences = 20", profile.read_text(), flags=re.M)
    text = re.sub(r"^grid_mbr_p = .*$", "grid_mbr_p = [0.0, -0.5]", text, flags=re.M)
    profile.write_text(re.sub(r"^(grid_mbr_r = .*)$", "\\1\ngrid_mbr_alpha = [1.0, 0.3]", text, flags=re.M))
    params = shared_params(tmp_path, data, config_dir=configs)
    mbr = DecodeLatticeMBR(split="newstest2016", **params)
    assert build(mbr).status == LuigiStatusCode.SUCCESS
    tuning = mbr.requires()["tuning"]
    record = json.loads((tuning.artifact_dir() / "mbr.json").read_text())
    assert sorted({(p["alpha"], p["p"]) for p in record["grid"]}) == sorted(
        {(alpha, p) for alpha in (1.0, 0.3) for p in {point["p"] for point in record["grid"]}})
    assert len(record["grid"]) == 4 and tuning.signature()["params"]["grid_mbr_alpha"] == [1.0, 0.3]
    best = max(record["grid"], key=lambda point: point["bleu"])
    assert record["chosen"] == {k: v for k, v in best.items() if k != "bleu"}
    # the tuning sentences' posteriors under each alpha, the lattices' own being the default artifact
    tune_l = {1.0: tuning.requires()["lmatrix"], **tuning.requires()["lmatrix_alphas"]}
    assert tune_l[1.0].alpha == 0.0 and tune_l[0.3].alpha == 0.3
    stores = {alpha: LMatrixStore(sorted(task.artifact_dir().glob("shard-*.npz"))) for alpha, task in tune_l.items()}
    assert (stores[1.0].get([0])[0].posteriors.values != stores[0.3].get([0])[0].posteriors.values).any()
    # the split is decoded with the L of the chosen alpha (both built), under the chosen theta
    split_l = {1.0: mbr.requires()["lmatrix"], 0.3: mbr.requires()["lmatrix_alphas"][0.3]}
    acceptors = BuildAcceptors(split="newstest2016", **params).acceptors()
    vocab = Vocabulary.load(BuildVocab(**params).artifact_dir() / "vocab.en.json")
    theta = Theta.from_p_r(best["p"], best["r"], "scaled", 10.0)
    store = LMatrixStore(sorted(split_l[best["alpha"]].artifact_dir().glob("shard-*.npz")))
    for line, pieces in enumerate(read_lines(mbr.artifact_dir() / "bpe.en")):
        exact = lattice_mbr(acceptors[line], store.get([line])[0].with_theta(theta), vocab.bos_id, vocab.eos_id)
        assert pieces.split() == vocab.decode(list(exact.tokens))
    assert mbr.signature()["stats"]["alpha"] == best["alpha"]
    for alpha in (1.0, 0.3):  # whichever alpha the tuning chose, its L is the one decoded with
        tuning.chosen = lambda alpha=alpha: {**record["chosen"], "alpha": alpha}
        mbr.requires = lambda required=mbr.requires(): {**required, "tuning": tuning}
        assert mbr.store().store.get([0])[0].signature["alpha"] == alpha
