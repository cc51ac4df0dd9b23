"""The PBMT stages with real Luigi (local scheduler), eflomal, lmplz and pynini on a small de-en corpus."""
import pynini
import pytest
from luigi.execution_summary import LuigiStatusCode

from pipeline.io import read_json, read_lines
from pipeline.smt.lattice import parse_nbest, paths, sorted_scores
from pipeline.smt.weights import load_weights
from tasks import AlignWords, BuildPhraseTable, DecodePBMT, EvaluateSystem, TaskReport, TunePBMT
from tests.conftest import write_gz
from tests.tasks.helpers import artifacts, build, shared_params


def test_pbmt_translates_a_split_with_lattices_and_fills_the_table(tmp_path, data_dir):
    # an empty source line keeps its place and gives an empty translation
    source = list(read_lines(data_dir / "de-en" / "newstest2016.de.gz"))
    source[3] = ""
    write_gz(data_dir / "de-en" / "newstest2016.de.gz", source)
    params = shared_params(tmp_path, data_dir)
    report = TaskReport(eval_set="devtest", systems=("PBMT",), **params)
    assert build(report).status == LuigiStatusCode.SUCCESS
    stages = {a.split("/")[2] for a in artifacts(tmp_path / "work")}
    assert {"align", "phrases", "mert", "pbmt", "bleu"} <= stages

    align = AlignWords(**params).signature()["stats"]
    assert align["sentences"] == 300 and 0 < align["links"]["gdfa"]
    phrases = BuildPhraseTable(**params)
    assert (phrases.artifact_dir() / "phrase-table.gz").is_file()
    assert phrases.signature()["stats"]["phrase_pairs"] > 100

    tune = TunePBMT(**params)
    weights = load_weights(tune.artifact_dir() / "weights.json")
    assert "stage:mert" in weights.signature and "tune:dev" in weights.signature
    history = read_json(tune.artifact_dir() / "mert.json")
    assert 1 <= len(history) <= 3 and history[0]["weights"]["lm"] == 0.5  # tiny: 3 rounds from the defaults
    assert tune.signature()["stats"]["best_iteration"] in [h["iteration"] for h in history]

    decode = DecodePBMT(split="newstest2016", **params)
    out = decode.artifact_dir()
    translation = list(read_lines(out / "translation.en"))
    words = list(read_lines(out / "words.en"))
    assert len(translation) == len(words) == 30 and translation[3] == "" and words[3] == ""
    assert all(line for k, line in enumerate(translation) if k != 3)
    meta = read_json(out / "lattices.json")
    assert meta["alpha"] == 1.0 and meta["sentences"] == 30 and meta["semiring"] == "tropical"
    assert meta["weights"] == weights.weights.to_dict()
    for k in (0, 3, 29):
        fst = pynini.Fst.read(str(out / "lattices" / f"{k}.fst"))
        best, = paths(pynini.shortestpath(fst))
        assert " ".join(best[0]) == words[k]
    nbest = parse_nbest(read_lines(out / "nbest.txt"))
    assert sorted(nbest) == list(range(30)) and all(sorted_scores(h) for h in nbest.values())
    assert all(" ".join(h[0].words) == words[k] for k, h in nbest.items())
    stats = decode.signature()["stats"]
    assert stats["timings"]["pbmt_decode"] > 0 and stats["lattice"]["arcs_per_word"] > 1

    bleu = EvaluateSystem(system="PBMT", split="newstest2016", **params).signature()["stats"]
    assert bleu["bleu"]["score"] > 40  # a small grammar: the phrase table has seen almost everything
    assert "pbmt_decode" in bleu["timings"]
    (record,) = [r for r in report.records() if r.system == "PBMT"]
    assert record.bleu == bleu["bleu"]["score"]


def test_a_variant_sets_pbmt_limits_and_nbest_or_shares_the_profiles_artifact(tmp_path, data_dir):
    from tasks.smt import decoder_settings
    from tests.pipeline.test_config import copy_configs

    configs = copy_configs(tmp_path / "configs")
    path = configs / "profiles" / "tiny.toml"
    head, accelerated = path.read_text().split("[variants.accelerated]")
    accelerated = accelerated.replace("pbmt_options_per_phrase = 0 ", "pbmt_options_per_phrase = 3 ")
    path.write_text(head + "[variants.accelerated]" + accelerated)
    params = shared_params(tmp_path, data_dir, config_dir=configs)
    base = DecodePBMT(split="newstest2016", **params)
    fast = DecodePBMT(split="newstest2016", variant="accelerated", **params)
    research = DecodePBMT(split="newstest2016", variant="research", **params)
    assert (decoder_settings(base).stack_limit, decoder_settings(base).options_per_phrase, base.nbest()) == (10, 10, 20)
    settings = decoder_settings(fast)
    assert (settings.stack_limit, settings.distortion_limit, settings.options_per_phrase, fast.nbest()) == (5, 4, 3, 0)
    assert research.params() == base.params() and research.artifact_dir() == base.artifact_dir()
    assert fast.artifact_dir() != base.artifact_dir()


def test_the_lexicalised_reordering_model_is_extracted_tuned_and_decoded(tmp_path, data_dir):
    """The profile's `[pbmt] reordering` builds a table with the model, MERT tunes its six weights, and the lattices'
    best paths are the decoder's 1-best; the alignment is shared with the distance-based system."""
    from pipeline.smt.phrase_table import FastPhraseTable
    from tests.pipeline.test_config import edit_config

    configs = edit_config(tmp_path / "configs", "profiles/tiny.toml", "workers = 2 ",
                          'reordering = "msd-bidirectional-fe"\nworkers = 2 ')
    params = shared_params(tmp_path, data_dir, config_dir=configs)
    plain = shared_params(tmp_path, data_dir)
    assert "reordering" not in BuildPhraseTable(**plain).params()  # the distance-based table keeps its signature
    assert BuildPhraseTable(**params).artifact_dir() != BuildPhraseTable(**plain).artifact_dir()
    assert AlignWords(**params).artifact_dir() == AlignWords(**plain).artifact_dir()
    decode = DecodePBMT(split="newstest2016", **params)
    assert build(decode).status == LuigiStatusCode.SUCCESS

    phrases = BuildPhraseTable(**params)
    table = FastPhraseTable(phrases.artifact_dir() / "phrase-table.npz")
    assert table.reordering and len(table) == phrases.signature()["stats"]["phrase_pairs"]
    assert sum(phrases.signature()["stats"]["orientations"].values()) == \
        2 * phrases.signature()["stats"]["extracted_pairs"]
    assert (phrases.artifact_dir() / "reordering-table.wbe-msd-bidirectional-fe.gz").is_file()

    history = read_json(TunePBMT(**params).artifact_dir() / "mert.json")
    assert history[0]["weights"]["lr_bwd_m"] == 0.3  # Moses' default start
    weights = load_weights(TunePBMT(**params).artifact_dir() / "weights.json").weights
    out = decode.artifact_dir()
    words = list(read_lines(out / "words.en"))
    nbest = parse_nbest(read_lines(out / "nbest.txt"))
    for k in (0, 7, 29):
        fst = pynini.Fst.read(str(out / "lattices" / f"{k}.fst"))
        (best, cost), = paths(pynini.shortestpath(fst))
        assert " ".join(best) == words[k] == " ".join(nbest[k][0].words)
        assert -cost == pytest.approx(weights.score(nbest[k][0].features), rel=1e-4)  # float32 lattice weights
    assert any((h[0].features[9:] != 0).any() for h in nbest.values())
