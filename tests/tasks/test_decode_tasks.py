"""Real Luigi (local scheduler) on the small de-en corpus: FNMT and TNMT decode a split with the batched beam decoder
(models trained for seconds), LNMT and LTNMT the same with the L matrices of the split's PBMT lattices, and
EvaluateSystem scores them."""
import json
import re

import pytest
import torch
from luigi.execution_summary import LuigiStatusCode

from pipeline.io import read_lines
from pipeline.evaluation.bleu import corpus_bleu
from tasks import DecodeFNMT, DecodePBMT, DecodeTNMT, EvaluateSystem
from lattices.lmatrix_shards import LMatrixStore
from pipeline.decode import SearchSettings, decode_sources
from pipeline.decode.lmbr_hook import lmbr_hook_factory
from pipeline.decode.lmbr_tuning import GridPoint, ReweightedStore, lmbr_grid
from pipeline.nmt.system import load_system
from tasks import ApplyBPE, BuildLMatrix, MeasureDecodingSpeed, NMTSystem
from tasks.decode import DecodeLNMT, DecodeLTNMT
from tasks.systems import translation_task
from tests.conftest import sentence_pairs, write_deen_folder, write_pair
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_nmt_tasks import quick_configs

torch.set_num_threads(1)


def deterministic_configs(tmp_path):
    """quick_configs with the Transformer stopped after 30 updates instead of 2 seconds: the same models, however
    busy the machine (the assertions below depend on what the models say)."""
    folder = quick_configs(tmp_path)
    path = folder / "profiles" / "tiny.toml"
    head, transformer = path.read_text().split("[nmt.transformer]")
    transformer = re.sub(r"^max_updates = .*$", "max_updates = 30", transformer, flags=re.M)
    transformer = re.sub(r"^budget_seconds = .*$", "budget_seconds = 600", transformer, flags=re.M)
    path.write_text(head + "[nmt.transformer]" + transformer)
    return folder


def untuned_configs(tmp_path):
    """deterministic_configs with LMBR untuned (TuneLMBR has a test of its own)."""
    folder = deterministic_configs(tmp_path)
    profile = folder / "profiles" / "tiny.toml"
    profile.write_text(re.sub(r"^tune = .*$", "tune = false", profile.read_text(), flags=re.M))
    return folder


def test_fnmt_and_tnmt_translate_a_split_line_for_line(tmp_path):
    data = tmp_path / "data"
    write_pair(data, "train", sentence_pairs(300, seed=1))
    write_pair(data, "dev", sentence_pairs(40, seed=2))
    test = sentence_pairs(20, seed=3)
    test[4] = ("An empty source line.", "")  # (en, de): ger-eng translates from the empty German line
    write_pair(data, "newstest2016", test)
    configs = deterministic_configs(tmp_path)
    profile = configs / "profiles" / "tiny.toml"
    text = re.sub(r"^batch_sentences = .*$", "batch_sentences = 3", profile.read_text(), flags=re.M)
    # L dominates the scores of models trained for seconds: LMBR output must follow the lattices
    text = re.sub(r"^tune = .*$", "tune = false", text, flags=re.M)  # (TuneLMBR: the test below)
    profile.write_text(re.sub(r"^nmt_lambda = .*$", "nmt_lambda = 0.001", text, flags=re.M))
    params = shared_params(tmp_path, data, config_dir=configs)
    fnmt = DecodeFNMT(split="newstest2016", **params)
    tnmt = DecodeTNMT(split="newstest2016", **params)
    lnmt = DecodeLNMT(split="newstest2016", **params)
    ltnmt = DecodeLTNMT(split="newstest2016", **params)
    bleu = EvaluateSystem(system="FNMT", split="newstest2016", **params)
    assert translation_task("FNMT") is DecodeFNMT and translation_task("TNMT") is DecodeTNMT
    assert translation_task("LNMT") is DecodeLNMT and translation_task("LTNMT") is DecodeLTNMT
    assert build(fnmt, tnmt, lnmt, ltnmt, bleu).status == LuigiStatusCode.SUCCESS
    for task in (fnmt, tnmt, lnmt, ltnmt):
        folder = task.artifact_dir()
        translation = list(read_lines(folder / "translation.en"))
        subwords = list(read_lines(folder / "bpe.en"))
        assert len(translation) == len(subwords) == 20
        assert translation[4] == "" and subwords[4] == ""
        # (models trained for seconds may well say nothing: the line count and the empty line are what matter)
        stats = task.signature()["stats"]
        upstream = {"pbmt_decode", "posteriors_and_l"} if task.lmbr else set()  # the hybrid pipeline's phases
        assert set(stats["timings"]) == {"nmt_load", "nmt_decode", "postprocess"} | upstream
        assert stats["words_per_minute"] > 0
        assert stats["beam"] == 4 and stats["batch_sentences"] == 3 and stats["decoded_sentences"] == 19
        assert stats["peak_memory_bytes"] > 0 and stats["source_words"] > 0
    assert fnmt.signature()["stats"]["models"] == 2 and tnmt.signature()["stats"]["models"] == 1
    record = bleu.signature()["stats"]
    assert record["lines"] == 20 and 0 <= record["bleu"]["score"] <= 100
    assert record["timings"]["nmt_decode"] == fnmt.signature()["stats"]["timings"]["nmt_decode"]

    assert lnmt.signature()["params"]["nmt_lambda"] == 0.001
    pbmt_seconds = DecodePBMT(split="newstest2016", **params).signature()["stats"]["timings"]["pbmt_decode"]
    assert lnmt.signature()["stats"]["timings"]["pbmt_decode"] == pbmt_seconds
    # LNMT's subwords are the library's LMBR decoding of the split with sentence i's L for line i
    # (here the GRU ensemble stops at once: with the tiny dev set's precisions of 100%, p = r = 1 and no token
    # gains more from L than Theta_0 costs, so the LMBR objective itself prefers the shortest output)
    system = NMTSystem(system="FNMT", **params).artifact_dir() / "system.json"
    ensemble, src_vocab, tgt_vocab = load_system(system, "cpu")
    lines = list(read_lines(ApplyBPE(split="newstest2016", **params).artifact_dir() / "bpe.de.gz"))
    decoded = [i for i, line in enumerate(lines) if line]
    store = LMatrixStore(sorted(BuildLMatrix(split="newstest2016", **params).artifact_dir().glob("shard-*.npz")))
    settings = SearchSettings(beam=4, weight=0.001, max_length_a=2.0, max_length_b=10)
    hyps = decode_sources(ensemble, [src_vocab.encode(lines[i].split()) + [src_vocab.eos_id] for i in decoded],
                          settings, batch_sentences=3, hook_factory=lmbr_hook_factory(store, tgt_vocab.bos_id,
                                                                                      sentence_ids=decoded))
    expected = [""] * len(lines)
    for i, h in zip(decoded, hyps):
        expected[i] = " ".join(tgt_vocab.decode(h[0].tokens))
    assert list(read_lines(lnmt.artifact_dir() / "bpe.en")) == expected

    # Table 2 variants: the accelerated LNMT decodes with beam 4, one model, the 200-best of tighter PBMT lattices
    accelerated = DecodeLNMT(split="newstest2016", variant="accelerated", **params)
    research = DecodeLNMT(split="newstest2016", variant="research", **params)
    bleu = EvaluateSystem(system="LNMT", split="newstest2016", variant="accelerated", **params)
    assert build(accelerated, research, bleu).status == LuigiStatusCode.SUCCESS
    stats = accelerated.signature()["stats"]
    assert stats["beam"] == 4 and stats["threshold"] == 0.01 and stats["models"] == 1
    assert research.signature()["stats"]["beam"] == 12 and research.signature()["stats"]["models"] == 2
    # the accelerated FNMT is the ensemble unfolded and shrunk to one member's size: an output layer of its own
    shrunken = accelerated.requires()["system"]
    assert type(shrunken).__name__ == "ShrinkEnsemble" and type(research.requires()["system"]).__name__ == "NMTSystem"
    sizes = shrunken.signature()["stats"]["parameters"]
    member_output = len(tgt_vocab) * ensemble.models[0].config.embed_size
    assert sizes["shrunken"] == sizes["member"] + member_output and sizes["unfolded"] > 2 * sizes["member"]
    lmatrix = accelerated.requires()["lmatrix"]
    assert lmatrix.signature()["params"]["nbest"] == 200
    pbmt = lmatrix.requires()["lattices"]
    assert pbmt.signature()["params"]["decoder"]["stack_limit"] == 5
    # the accelerated PBMT writes no n-best list (only the lattices are read); the profile's decode keeps its list
    assert pbmt.signature()["params"]["nbest"] == 0 and not list(read_lines(pbmt.artifact_dir() / "nbest.txt"))
    base_pbmt = DecodePBMT(split="newstest2016", **params)
    # research keeps the profile's PBMT limits and full lattices: it shares their artifacts
    assert research.requires()["lmatrix"].requires()["lattices"].artifact_dir() == base_pbmt.artifact_dir()
    assert research.requires()["lmatrix"].artifact_dir() == lnmt.requires()["lmatrix"].artifact_dir()
    assert list(read_lines(base_pbmt.artifact_dir() / "nbest.txt"))
    assert pbmt.artifact_dir() != base_pbmt.artifact_dir() and accelerated.artifact_dir().name.startswith(
        "LNMT-accelerated-newstest2016-")
    assert bleu.signature()["stats"]["timings"]["pbmt_decode"] == pbmt.signature()["stats"]["timings"]["pbmt_decode"]

    # Figures 2-3 of one FNMT model on the split's first sentences: every beam gives the unbatched outputs
    speed = MeasureDecodingSpeed(models="FNMT", split="newstest2016", sentences_a=4, sentences_b=7, **params)
    assert build(speed).status == LuigiStatusCode.SUCCESS
    folder = speed.artifact_dir()
    figure2 = json.loads((folder / "figure2.json").read_text())
    figure3 = json.loads((folder / "figure3.json").read_text())
    assert [r["beam"] for r in figure2] == [1, 2, 4, 8, 12] and all(r["identical_outputs"] for r in figure2)
    assert [r["batch_sentences"] for r in figure3][:3] == [1, 2, 3] and figure3[0]["sorted_speedup"] == 1.0
    assert (folder / "speed_beam.png").stat().st_size > 1000 and (folder / "speed_sentences.png").is_file()


def test_lmbr_tuning_chooses_lambda_p_r_on_the_tune_set_and_lnmt_uses_them(tmp_path):
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    configs = deterministic_configs(tmp_path)
    profile = configs / "profiles" / "tiny.toml"
    text = re.sub(r"^tune_sentences = 50 .*$", "tune_sentences = 20", profile.read_text(), flags=re.M)
    text = re.sub(r"^grid_lambda = .*$", "grid_lambda = [0.001, 1.0]", text, flags=re.M)
    # the tiny dev set's PBMT precisions are 100%: p = r = 1 gives no token more from L than Theta_0 costs; p - 0.5
    # makes every n-gram of the lattice worth its cost, so that L can pull the output towards the lattice
    text = re.sub(r"^grid_alpha = .*$", "grid_alpha = [1.0, 0.5]", text, flags=re.M)  # the lattices' alpha, and half
    text = re.sub(r"^(grid_gains = .*)$", "\\1\ngrid_nbest = [0, 3]", text, flags=re.M)  # the full lattice, 3-best
    profile.write_text(re.sub(r"^grid_p = .*$", "grid_p = [-0.5, 0.0]", text, flags=re.M))
    params = shared_params(tmp_path, data, config_dir=configs)
    lnmt = DecodeLTNMT(split="newstest2016", **params)
    tnmt = DecodeTNMT(split="newstest2016", **params)
    assert build(lnmt, tnmt).status == LuigiStatusCode.SUCCESS
    tuning = lnmt.requires()["tuning"]
    record = json.loads((tuning.artifact_dir() / "lmbr.json").read_text())
    grid = record["grid"]
    # stage 1: 2 lambdas x 2 alphas x 2 evidence spaces x 2 gain forms; stage 2: p - 0.5 at stage 1's best
    start = record["start"]
    gains = ("per_step", "bounded")
    first = lmbr_grid(start["p"], start["r"], [0.001, 1.0], [0.0], [0.0], [1.0, 0.5], gains, [0, 3])
    assert [GridPoint(**{k: v for k, v in point.items() if k != "bleu"}) for point in grid[:16]] == first
    stage_one = max(grid[:16], key=lambda point: point["bleu"])
    assert len(grid) == 17 and {**grid[16], "p": 0, "bleu": 0} == {**stage_one, "p": 0, "bleu": 0}
    assert grid[16]["p"] == pytest.approx(start["p"] - 0.5)
    assert record["sentences"] == 20 and {point["alpha"] for point in grid} == {0.5, 1.0}
    assert {point["gains"] for point in grid} == set(gains) and {point["nbest"] for point in grid} == {0, 3}
    best = max(grid, key=lambda point: point["bleu"])
    assert record["chosen"] == {k: best[k] for k in ("nmt_lambda", "p", "r", "alpha", "gains", "nbest")}
    # each alpha and evidence space has its own posteriors of the tuning sentences (alpha 1 over the full lattice,
    # the profile's own, is the default artifact)
    tune_l = tuning.requires()["lmatrix"]
    assert (tune_l[1.0, 0].alpha, tune_l[1.0, 0].evidence) == (0.0, -1) and tune_l[0.5, 0].alpha == 0.5
    assert (tune_l[1.0, 3].alpha, tune_l[1.0, 3].evidence) == (0.0, 3)
    posteriors = {key: LMatrixStore(sorted(tune_l[key].artifact_dir().glob("shard-*.npz"))).get([0])[0].posteriors
                  for key in ((1.0, 0), (0.5, 0), (1.0, 3))}
    assert posteriors[1.0, 0].ngrams == posteriors[0.5, 0].ngrams
    assert (posteriors[1.0, 0].values != posteriors[0.5, 0].values).any()
    assert set(posteriors[1.0, 3].ngrams) <= set(posteriors[1.0, 0].ngrams)  # 3 strings of the lattice's
    assert tune_l[1.0, 3].signature()["params"]["nbest"] == 3
    # LTNMT decodes with the L of the chosen alpha and evidence space; the others' L of the split were built too
    assert set(lnmt.requires()["lmatrix_choices"]) == {(0.5, 0), (1.0, 3), (0.5, 3)}
    for alpha in (1.0, 0.5):  # whichever point the tuning chose, its L is the one decoded with
        for nbest in (0, 3):
            lnmt.chosen = lambda alpha=alpha, nbest=nbest: {**record["chosen"], "alpha": alpha, "nbest": nbest}
            built = lnmt.lmatrix().signature()
            assert built["stats"]["alpha"] == alpha and built["params"]["nbest"] == nbest
    del lnmt.chosen
    assert record["chosen"]["nmt_lambda"] == 0.001 and record["chosen"]["p"] == pytest.approx(start["p"] - 0.5)
    store = lnmt.lmatrix_store()  # the split's posteriors, once for all systems, under the chosen theta
    assert isinstance(store, ReweightedStore) and store.theta.p == record["chosen"]["p"]
    assert store.get([0])[0].signature["theta"]["p"] == record["chosen"]["p"]
    assert lnmt.signature()["params"]["nmt_lambda"] == "tuned" and lnmt.nmt_lambda() == record["chosen"]["nmt_lambda"]
    assert lnmt.signature()["params"]["gains"] == "tuned" and lnmt.gains() == record["chosen"]["gains"]
    assert lnmt.signature()["stats"]["lmbr"] == {"nmt_lambda": lnmt.nmt_lambda(), "gains": lnmt.gains()}
    # the tuned LMBR pulls the barely trained Transformer towards the PBMT lattices
    pbmt = list(read_lines(DecodePBMT(split="newstest2016", **params).artifact_dir() / "translation.en"))
    agree = [corpus_bleu(list(read_lines(t.artifact_dir() / "translation.en")), pbmt, "en").score
             for t in (tnmt, lnmt)]
    assert agree[1] > agree[0] + 10, agree


def test_table2s_research_variant_decodes_with_its_systems_tuned_choices_and_the_accelerated_its_own(tmp_path):
    """The medium profile's research LNMT takes TuneSearch's search form and TuneLMBR's evidence space (the grid's full
    lattice or 200-best), as Table 1's LNMT does; the accelerated one keeps its 200-best but searches as TuneSearch
    chose (tuned_search)."""
    params = {**shared_params(tmp_path, tmp_path / "data"), "profile": "medium", "task_name": "eng-ger"}
    table1 = DecodeLNMT(split="newstest2016", **params)
    research = DecodeLNMT(split="newstest2016", variant="research", **params)
    accelerated = DecodeLNMT(split="newstest2016", variant="accelerated", **params)
    assert research.variant_config().tuned_choices and not accelerated.variant_config().tuned_choices
    for task in (table1, research):
        required = task.requires()
        assert task.anchoring() and not task.keeps_own_evidence()
        assert type(required["search"]).__name__ == "TuneSearch" and type(required["tuning"]).__name__ == "TuneLMBR"
        evidence = {lmatrix.params()["nbest"] for lmatrix in [required["lmatrix"], *required["lmatrix_choices"].values()]}
        assert evidence == {0, 200}  # the grid's two evidence spaces, to be picked by the tuned choice
    assert research.requires()["search"].artifact_dir() == table1.requires()["search"].artifact_dir()
    assert research.params()["search"] == "tuned" and research.params()["beam"] == 12
    assert accelerated.anchoring() and accelerated.keeps_own_evidence() and accelerated.params()["search"] == "tuned"
    assert accelerated.requires()["search"].artifact_dir() == table1.requires()["search"].artifact_dir()
    acceptors = accelerated.requires()["acceptors"]  # inside its own lattices, over its 200-best
    assert acceptors.variant == "accelerated" and acceptors.params()["nbest"] == 200
    assert "lmatrix_choices" not in accelerated.requires() and accelerated.requires()["lmatrix"].params()["nbest"] == 200
    assert type(accelerated.requires()["system"]).__name__ == "ShrinkEnsemble" and accelerated.params()["shrunken"]
    accelerated_tnmt = DecodeLTNMT(split="newstest2016", variant="accelerated", **params)
    assert type(accelerated_tnmt.requires()["system"]).__name__ == "NMTSystem" and "shrunken" not in \
        accelerated_tnmt.params()
