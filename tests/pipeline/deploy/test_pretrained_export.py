"""A system whose NMT is a pretrained transformers model: exported over the session's tiny de-en systems (their
PBMT lattices, truecasers and settings), translated by `lmbr translate --system` and served by `lmbr serve` like any
exported system, offline.

The model is a tiny random MarianMT whose SentencePiece model is trained on the English side of that pipeline's
training text, so that every word of the PBMT's lattices has its pieces (tests/pipeline/nmt/tiny_hf.py).
"""
from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from pipeline.cli.lmbr import main as lmbr_main  # noqa: E402
from pipeline.deploy.pretrained_export import export_pretrained_system  # noqa: E402
from pipeline.deploy.system import load_system  # noqa: E402
from pipeline.deploy.translator import Translator  # noqa: E402
from pipeline.errors import DataError  # noqa: E402
from pipeline.io import read_lines  # noqa: E402
from tests.conftest import sentence_pairs  # noqa: E402
from tests.pipeline.nmt.tiny_hf import tiny_marian  # noqa: E402

LAMBDA = 1e-4  # the random model's log-probabilities barely count: L (the lattice) decides


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    english = [e for e, _ in sentence_pairs(300, seed=1)]
    return tiny_marian(tmp_path_factory.mktemp("marian"), seed=1, init_std=0.15, eos_bias=2.0, lines=english,
                       vocab_size=120)


@pytest.fixture(scope="module")
def pretrained_systems(exported_systems, marian, tmp_path_factory):
    """{system: folder} of the four pretrained systems over the session's LNMT, TNMT-lat and LNMT-lat exports, and
    the raw source lines."""
    exports, raw = exported_systems
    out = tmp_path_factory.mktemp("pretrained-systems")
    base = exports["LNMT"].folder()
    folders = {"LPNMT": export_pretrained_system(marian, base, out / "LPNMT", nmt_lambda=LAMBDA).folder,
               "PNMT": export_pretrained_system(marian, base, out / "PNMT", system="PNMT").folder,
               "PNMT-lat": export_pretrained_system(marian, exports["TNMT-lat"].folder(), out / "PNMT-lat").folder,
               "LPNMT-lat": export_pretrained_system(marian, exports["LNMT-lat"].folder(), out / "LPNMT-lat",
                                                     nmt_lambda=LAMBDA).folder}
    return folders, raw


def test_the_folder_holds_the_model_and_the_base_systems_pbmt_with_every_sha256(pretrained_systems, exported_systems,
                                                                              marian):
    folders, _ = pretrained_systems
    exports, _ = exported_systems
    system, base = load_system(folders["LPNMT"]), load_system(exports["LNMT"].folder())
    files = system.manifest["files"]
    assert {"nmt/pretrained/config.json", "nmt/pretrained/model.safetensors", "nmt/pretrained/target.spm",
            "pbmt/phrase-table.npz", "pbmt/lm.bin", "pbmt/weights.json"} <= files.keys()
    assert not any(name.startswith("text/codes") or name.endswith("system.json") for name in files)
    assert system.kind.pretrained and system.kind.lmbr and system.pretrained_folder() == folders["LPNMT"] / "nmt" / \
        "pretrained"
    assert system.settings.lmbr["nmt_lambda"] == LAMBDA
    assert {k: v for k, v in system.settings.lmbr.items() if k != "nmt_lambda"} == \
        {k: v for k, v in base.settings.lmbr.items() if k != "nmt_lambda"}
    assert system.settings.pbmt == base.settings.pbmt and system.settings.decode == base.settings.decode
    pnmt = load_system(folders["PNMT"])
    assert not pnmt.kind.needs_lattices and not any(name.startswith("pbmt/") for name in pnmt.manifest["files"])


def test_the_model_alone_translates_as_one_decoding_call(pretrained_systems, marian):
    """PNMT through the Translator (batches of 4) = translate_lines over the model folder with the same settings."""
    from pipeline.decode.translate import load_models, translate_lines

    folders, raw = pretrained_systems
    translator = Translator(load_system(folders["PNMT"]), batch_lines=4)
    decode = translator.system.settings.decode
    expected = translate_lines(raw, load_models([marian], languages=("de", "en")), translator.settings,
                               batch_sentences=decode["batch_sentences"]).text
    assert list(translator.translate(raw)) == expected
    assert translator.timings["pbmt"] == 0 and translator.timings["nmt"] > 0


def test_lmbr_takes_the_random_model_to_the_phrase_based_translations(pretrained_systems, exported_systems):
    """With lambda near 0 the hybrid writes what the PBMT lattices say (through the model's units and tokenizer):
    nearly every n-gram of its output is in the PBMT's translations, unlike the model alone's. (Its outputs are
    shorter than the PBMT's: theta was tuned for the base system's BPE units, not the model's pieces.)"""
    from pipeline.evaluation.bleu import corpus_bleu

    folders, raw = pretrained_systems
    exports, _ = exported_systems
    pbmt = list(read_lines(exports["PBMT"].decoding().artifact_dir() / "translation.en"))
    hybrid = list(Translator(load_system(folders["LPNMT"]), batch_lines=4).translate(raw))
    alone = list(Translator(load_system(folders["PNMT"]), batch_lines=4).translate(raw))
    ours, theirs = corpus_bleu(hybrid, pbmt, "en"), corpus_bleu(alone, pbmt, "en")
    assert ours.precisions[0] > 90 and ours.precisions[3] > 50, list(zip(hybrid, pbmt))
    assert theirs.precisions[0] < 30 and ours.score > theirs.score + 40


def test_lmbr_translate_runs_the_exported_hybrid_offline(pretrained_systems, tmp_path, monkeypatch):
    folders, raw = pretrained_systems
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source, out = tmp_path / "in.de", tmp_path / "out.en"
    source.write_text("\n".join([raw[0], "", *raw[1:4]]) + "\n", encoding="utf-8")
    assert lmbr_main(["translate", "--system", str(folders["LPNMT"]), "-i", str(source), "-o", str(out),
                      "--batch-lines", "2", "--timings", str(tmp_path / "timings.json")]) == 0
    expected = list(Translator(load_system(folders["LPNMT"]), batch_lines=3).translate(raw[:4]))
    assert out.read_text(encoding="utf-8").split("\n")[:5] == [expected[0], "", *expected[1:4]]
    assert json.loads((tmp_path / "timings.json").read_text())["timings"]["posteriors"] > 0


def test_lmbr_serve_answers_a_real_http_request_with_the_offline_translations(pretrained_systems):
    import os

    import httpx

    from tests.pipeline.deploy.test_http_server import Server

    folders, raw = pretrained_systems
    offline = list(Translator(load_system(folders["LPNMT"])).translate(raw[:3]))
    os.environ["HF_HUB_OFFLINE"] = "1"  # the server's environment: no hub
    try:
        server = Server(folders["LPNMT"], "--pool-sentences", "4")
    finally:
        os.environ.pop("HF_HUB_OFFLINE")
    try:
        answer = httpx.post(f"{server.url}/translate", json={"q": raw[:3], "source": "de", "target": "en"},
                            timeout=120)
        assert answer.status_code == 200, answer.text
        assert answer.json()["translatedText"] == offline
        assert httpx.get(f"{server.url}/health", timeout=5).json()["system"] == "LPNMT"
    finally:
        assert server.stop() == 0


def test_a_linked_model_is_checked_by_its_sha256_and_an_altered_one_refused(exported_systems, pretrained_systems,
                                                                           marian, tmp_path):
    exports, raw = exported_systems
    model = tmp_path / "model"
    shutil.copytree(marian, model)
    folder = export_pretrained_system(model, exports["LNMT"].folder(), tmp_path / "PNMT", "PNMT", link=True).folder
    system = load_system(folder)
    assert system.pretrained_folder() == model.resolve()
    assert not any(name.startswith("nmt/") for name in system.manifest["files"])
    assert str((model / "config.json").resolve()) in system.manifest["external_files"]
    copied = load_system(pretrained_systems[0]["PNMT"])
    assert list(Translator(system).translate(raw[:3])) == list(Translator(copied).translate(raw[:3]))
    config = model / "config.json"
    config.write_text(config.read_text().replace('"d_model": 32', '"d_model": 32 '))
    with pytest.raises(DataError, match=r"model/config\.json: corrupt or altered"):
        load_system(folder)
    config.unlink()
    with pytest.raises(DataError, match=r"model/config\.json: missing"):
        load_system(folder)


def test_an_export_needs_a_base_with_what_the_system_takes(exported_systems, marian, tmp_path):
    exports, _ = exported_systems
    with pytest.raises(DataError, match="has no NMT"):
        export_pretrained_system(marian, exports["PBMT"].folder(), tmp_path / "a")
    with pytest.raises(DataError, match="takes its LMBR settings from an LMBR system"):
        export_pretrained_system(marian, exports["FNMT"].folder(), tmp_path / "b", "LPNMT")
    with pytest.raises(DataError, match="nmt_lambda must be positive"):
        export_pretrained_system(marian, exports["LNMT"].folder(), tmp_path / "c", nmt_lambda=0.0)
    with pytest.raises(DataError, match="takes the lattice's weight from a -lat system"):
        export_pretrained_system(marian, exports["LNMT"].folder(), tmp_path / "d", "LPNMT-lat")
    with pytest.raises(DataError, match="PNMT has no LMBR"):
        export_pretrained_system(marian, exports["LNMT"].folder(), tmp_path / "e", "PNMT", nmt_lambda=1.0)
    assert not any((tmp_path / name).exists() for name in "abcde")


def test_lmbr_export_pretrained_takes_the_model_from_the_task_config(exported_systems, marian, tmp_path, capsys):
    """`lmbr export-pretrained` without --model: the base task's [pretrained] model; an unset key is an error that
    names it."""
    from pipeline import config
    from tests.pipeline.test_config import edit_config

    exports, raw = exported_systems
    base = str(exports["LNMT"].folder())
    assert lmbr_main(["export-pretrained", "--base", base, "-o", str(tmp_path / "unset")]) == 2
    assert "ger-eng.toml: key 'pretrained.model' is not set: give --model" in capsys.readouterr().err
    configs = edit_config(tmp_path / "configs", "tasks/ger-eng.toml", "[lm]",
                          f'[pretrained]\nmodel = "{marian}"\n\n[lm]')
    assert config.load_task("ger-eng", configs).pretrained.location(tmp_path) == marian
    out = tmp_path / "LPNMT"
    assert lmbr_main(["export-pretrained", "--base", base, "-o", str(out), "--nmt-lambda", "0.5",
                      "--config-dir", str(configs)]) == 0
    system = load_system(out)
    assert system.name == "LPNMT" and system.manifest["pretrained"]["model"] == str(marian)
    assert system.settings.lmbr["nmt_lambda"] == 0.5 and f"LPNMT: {out}" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["PNMT-lat", "LPNMT-lat"])
def test_inside_the_lattice_the_model_writes_whole_lattice_strings(pretrained_systems, exported_systems, name):
    """The -lat systems search inside the PBMT lattice's strings (acceptors in the model's units): the random
    model's outputs are complete phrase-based translations, unlike its own."""
    from pipeline.evaluation.bleu import corpus_bleu

    folders, raw = pretrained_systems
    exports, _ = exported_systems
    pbmt = list(read_lines(exports["PBMT"].decoding().artifact_dir() / "translation.en"))
    translator = Translator(load_system(folders[name]), batch_lines=4)
    inside = list(translator.translate(raw))
    bleu = corpus_bleu(inside, pbmt, "en")
    assert bleu.precisions[0] > 90 and bleu.sys_len >= 0.9 * bleu.ref_len, list(zip(inside, pbmt))
    assert translator.system.settings.lmbr["lattice_weight"] == \
        load_system(exports[{"PNMT-lat": "TNMT-lat", "LPNMT-lat": "LNMT-lat"}[name]].folder()).settings.lmbr[
            "lattice_weight"]


def test_terms_reach_the_lpnmt_through_the_phrase_based_lattice(pretrained_systems, exported_systems):
    """A line with a term: the PBMT forces it, and the LMBR system decodes the line on its lattice's acceptor in the
    model's units, with the term's pieces required of its search, so the term is in the translation."""
    from pipeline.deploy.terms import Terminology
    from tests.pipeline.deploy.test_terms import TOKENIZE_DE, has_term, seeded_terms

    folders, raw = pretrained_systems
    exports, _ = exported_systems
    pairs = seeded_terms(exports, raw, count=6)
    terms = Terminology.parse("\n".join(f"{s}\t{t}" for s, t in pairs), TOKENIZE_DE)
    lines = [line for line in raw[:6] if any(s in TOKENIZE_DE(line) for s, _ in pairs)]
    assert len(lines) >= 3
    outputs = list(Translator(load_system(folders["LPNMT"]), terms=terms).translate(lines))
    for line, text in zip(lines, outputs):
        assert all(has_term(text, t) for s, t in pairs if s in TOKENIZE_DE(line)), (line, text)
    plain = list(Translator(load_system(folders["LPNMT"])).translate(lines))
    assert not all(has_term(text, t) for line, text in zip(lines, plain) for s, t in pairs if s in TOKENIZE_DE(line))


def test_the_pretrained_models_own_search_writes_each_term_in_its_pieces(pretrained_systems, exported_systems):
    """PNMT (the model alone, no lattice): a line with a term gets the term's pieces in the model's units
    (ModelUnitMapper.text_ids) from the search itself; without the terms the random model writes none of them."""
    from pipeline.decode.terms import contains
    from pipeline.deploy.terms import Terminology
    from tests.pipeline.deploy.test_terms import TOKENIZE_DE, seeded_terms

    folders, raw = pretrained_systems
    exports, _ = exported_systems
    pairs = seeded_terms(exports, raw, count=6)
    terms = Terminology.parse("\n".join(f"{s}\t{t}" for s, t in pairs), TOKENIZE_DE)
    lines = [line for line in raw[:6] if any(s in TOKENIZE_DE(line) for s, _ in pairs)]
    assert len(lines) >= 3
    translator = Translator(load_system(folders["PNMT"]), terms=terms)
    prepared = translator.prepare(lines)
    assert all(item.terms for item in prepared)
    vocab = translator.models.tgt_vocab
    for item in prepared:
        for term, ids in item.terms:  # the term's text inside a sentence, as the model's tokenizer writes it
            assert vocab.tokens[ids[0]].startswith("\u2581")
            assert translator.models.tgt_vocab.decode_line(ids) == term.target
    outputs = list(translator.translate(lines))
    for line, text in zip(lines, outputs):
        assert all(t in text for s, t in pairs if s in TOKENIZE_DE(line)), (line, text)
    plain = list(Translator(load_system(folders["PNMT"])).translate(lines))
    assert not any(t in text for line, text in zip(lines, plain) for s, t in pairs if s in TOKENIZE_DE(line))
    assert contains((5, *ids, 7), ids, lambda token: bool(translator.word_final()[token]))


def test_over_an_anchored_lnmt_the_lpnmt_keeps_per_line_the_better_of_its_free_and_lattice_search(marian,
                                                                                               tmp_path):
    """An anchored base (its own small pipeline): LPNMT searches each line free and inside its lattice (acceptors in
    the model's units) and keeps the higher-scoring one, offline as the two searches run apart say, and the same
    served in pools of 3 and in decoding processes."""
    from luigi.execution_summary import LuigiStatusCode

    from pipeline.decode.anchored import better_copy
    from pipeline.decode.batching import decode_sources
    from pipeline.deploy.decoding_service import DecodingService
    from tasks.data import TokenizeSplit
    from tasks.export import ExportSystem
    from tests.conftest import write_deen_folder
    from tests.tasks.helpers import build, shared_params
    from tests.tasks.test_anchored_search import edit_profile
    from tests.tasks.test_decode_tasks import deterministic_configs

    data = write_deen_folder(tmp_path / "data", eval_sentences=9)
    configs = deterministic_configs(tmp_path)
    edit_profile(configs, tune="false", gains='"bounded"', search='"anchored"', nmt_lambda="0.5")
    params = shared_params(tmp_path, data, config_dir=configs)
    export = ExportSystem(system="LNMT", split="newstest2016", **params)
    assert build(export).status == LuigiStatusCode.SUCCESS
    raw = list(read_lines(TokenizeSplit(split="newstest2016", **params).artifact_dir() / "raw.de.gz"))
    system = export_pretrained_system(marian, export.folder(), tmp_path / "LPNMT", nmt_lambda=LAMBDA)
    assert system.settings.lmbr["search"] == "anchored"
    translator = Translator(system, batch_lines=4)
    assert translator.anchored()
    offline = list(translator.translate(raw))
    items = [item for item in translator.prepare(raw) if item.source_ids]
    assert all(item.anchor is not None and item.anchor.num_states > 0 for item in items)
    model, settings, device = translator.models.ensemble, translator.settings, translator.models.device
    free = decode_sources(model, [i.source_ids for i in items], settings, 8, True, device, translator.hooks(items))
    inside = [type(i)(**{**i.__dict__, "acceptor": i.anchor}) for i in items]
    lattice = decode_sources(model, [i.source_ids for i in inside], settings, 8, True, device,
                             translator.hooks(inside))
    chosen = [better_copy([free[k], lattice[k]]) for k in range(len(items))]
    # (inside the lattice: whole phrase-based translations; here the free search's empty one scores higher, as
    # this untuned theta pays no n-gram its cost)
    assert all(translator.finish(item, lattice[k]) for k, item in enumerate(items))
    expected = [translator.finish(item, (free[k], lattice[k])[chosen[k]]) for k, item in enumerate(items)]
    assert offline == expected
    for decoders in (0, 2):
        service = DecodingService(Translator(system), pool_sentences=3, max_queue=1000, decode_processes=decoders)
        futures = [service.submit(raw[k:k + 2]) for k in range(0, len(raw), 2)]
        served = [text for future in futures for text in future.result(timeout=300)]
        service.close()
        assert served == offline, decoders
