"""`lmbr translate`: raw text in, detokenized text (and subwords, n-best lists, timings) out, with a tiny random-weight
model saved as the NMT tasks save theirs."""
import json

import pytest
import torch

from pipeline.cli.lmbr import main
from pipeline.decode import SearchSettings, decode_sources
from pipeline.decode.translate import load_models, model_files
from pipeline.nmt.checkpoint import save_checkpoint
from pipeline.nmt.models import build_model
from pipeline.nmt.system import write_system
from pipeline.text import BpeSegmenter, MosesTokenizer, Truecaser, learn_bpe
from pipeline.vocab import Vocabulary
from tests.conftest import sentence_pairs
from tests.pipeline.nmt.conftest import gru_config, transformer_config

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """ger-eng preprocessing models (truecasers, German BPE codes) and two tiny models over their vocabularies."""
    folder = tmp_path_factory.mktemp("translate")
    pairs = sentence_pairs(200, seed=1)
    tokenized = {lang: [MosesTokenizer(lang).tokenize(p[i]) for p in pairs] for i, lang in ((0, "en"), (1, "de"))}
    truecasers = folder / "truecaser"
    truecasers.mkdir()
    for lang, lines in tokenized.items():
        Truecaser.train(lines).save(truecasers / f"truecase.{lang}.json")
    codes = folder / "codes.de"
    learn_bpe((" ".join(t) for t in tokenized["de"]), 50, codes)
    segmenter = BpeSegmenter(codes)
    src_vocab = Vocabulary.build(segmenter.segment(t) for t in tokenized["de"])
    tgt_vocab = Vocabulary.build(tokenized["en"])
    models = folder / "models"
    models.mkdir()
    src_vocab.save(models / "vocab.de.json")
    tgt_vocab.save(models / "vocab.en.json")
    paths = []
    for seed, config in ((1, gru_config), (2, transformer_config)):
        torch.manual_seed(seed)
        cfg = config(tgt_vocab, src_vocab_size=len(src_vocab))
        model = build_model(cfg)
        if seed == 1:
            with torch.no_grad():  # the GRU's random weights seldom say EOS first: its outputs are not empty
                model.output.bias[tgt_vocab.eos_id] = -5.0
        paths.append(save_checkpoint(models / f"model{seed}.pt", cfg, model.state_dict(),
                                     {"source": "vocab.de.json", "target": "vocab.en.json"}))
    return {"folder": folder, "codes": codes, "truecasers": truecasers, "models": paths, "segmenter": segmenter,
            "src_vocab": src_vocab}


def translate(setup, tmp_path, *extra, models=None, input_lines=("Der Mann sieht ein Haus.", "",
                                                                  "Mein Freund kauft das rote Auto heute.")):
    source = tmp_path / "input.de"
    source.write_text("".join(line + "\n" for line in input_lines), encoding="utf-8")
    args = ["translate", *(str(m) for m in (models or setup["models"][:1])), "--task", "ger-eng",
            "-i", str(source), "-o", str(tmp_path / "out.en"), "--threads", "1", "--max-length-b", "4",
            "--truecaser-dir", str(setup["truecasers"]), *extra]
    if "--bpe-input" not in extra:
        args += ["--bpe-codes", str(setup["codes"])]
    return main(args)


def test_translates_raw_text_to_detokenized_text_subwords_and_timings(setup, tmp_path, capsys):
    assert translate(setup, tmp_path, "--beam", "3", "--batch-sentences", "2", "--bpe-output",
                     str(tmp_path / "out.bpe"), "--timings", str(tmp_path / "timings.json")) == 0
    out = (tmp_path / "out.en").read_text(encoding="utf-8").split("\n")
    bpe = (tmp_path / "out.bpe").read_text(encoding="utf-8").split("\n")
    assert len(out) == len(bpe) == 4 and out[3] == bpe[3] == ""  # three lines, each ended by "\n"
    assert out[1] == bpe[1] == "" and out[0] and out[2]
    assert out[0][0].isupper() or not out[0][0].isalpha()  # detruecased: a sentence starts with a capital
    timings = json.loads((tmp_path / "timings.json").read_text())
    assert timings["sentences"] == 3 and timings["decoded_sentences"] == 2 and timings["source_words"] == 14
    assert timings["target_words"] == sum(len(line.split()) for line in bpe)
    assert timings["beam"] == 3 and timings["batch_sentences"] == 2 and timings["threads"] == 1
    assert timings["words_per_minute"] > 0 and timings["peak_memory_bytes"] > 0 and timings["device"] == "cpu"
    assert "words/minute" in capsys.readouterr().err

    # the same subwords as the library's decoder on the preprocessed input
    words = [Truecaser.load(setup["truecasers"] / "truecase.de.json").truecase(MosesTokenizer("de").tokenize(s))
             for s in ("Der Mann sieht ein Haus.", "Mein Freund kauft das rote Auto heute.")]
    ids = [setup["src_vocab"].encode(setup["segmenter"].segment(w)) + [setup["src_vocab"].eos_id] for w in words]
    loaded = load_models(setup["models"][:1])
    direct = decode_sources(loaded.ensemble, ids, SearchSettings(beam=3, max_length_b=4), batch_sentences=1)
    assert [" ".join(loaded.tgt_vocab.decode(h[0].tokens)) for h in direct] == [bpe[0], bpe[2]]


def test_bpe_input_nbest_lists_and_ensembles(setup, tmp_path):
    first = [" ".join(setup["segmenter"].segment("Der Mann sieht ein Haus .".split()))]
    assert translate(setup, tmp_path, "--bpe-input", "--beam", "4", "--nbest", "3", "--bpe-output",
                     str(tmp_path / "nbest.bpe"), input_lines=first, models=setup["models"]) == 0
    lines = (tmp_path / "out.en").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and all(line.startswith("0 ||| ") for line in lines)
    scores = [float(line.rsplit("|||", 1)[1]) for line in lines]
    assert scores == sorted(scores, reverse=True)
    assert len({line.split(" ||| ")[1] for line in (tmp_path / "nbest.bpe").read_text().splitlines()}) == 3


def test_model_paths_resolve_to_checkpoints(setup, tmp_path):
    models = setup["models"]
    system = tmp_path / "system" / "system.json"
    system.parent.mkdir()
    write_system(system, "mixed", models)
    assert [p.resolve() for p in model_files(system.parent)] == [p.resolve() for p in models]
    assert model_files(models[0]) == [models[0]]
    with pytest.raises(Exception, match="no system.json, model.pt or checkpoint"):
        model_files(tmp_path)


@pytest.mark.parametrize("extra, message", [
    (["--nbest", "5", "--beam", "2"], "nbest must be between 1 and the beam (2)"),
    (["--bpe-input"], "give --bpe-codes for raw input, or --bpe-input"),
    (["--streaming", "--refill", "1.5"], "--refill must be in [0, 1), not 1.5"),
])
def test_bad_options_are_clear_errors(setup, tmp_path, capsys, extra, message):
    args = extra + (["--bpe-codes", str(setup["codes"])] if "--bpe-input" in extra else [])
    assert translate(setup, tmp_path, *args) == 2
    assert message in capsys.readouterr().err


def test_a_missing_model_is_a_clear_error(setup, tmp_path, capsys):
    assert translate(setup, tmp_path, models=[tmp_path / "nothing.pt"]) == 2
    assert "nothing.pt: no such model file or folder" in capsys.readouterr().err


def test_lmbr_with_a_tiny_lambda_follows_each_sentences_one_path_lattice(setup, tmp_path, capsys):
    from lattices.lattice import Lattice
    from lattices.lmatrix import build_lmatrix
    from lattices.lmatrix_shards import save_shard
    from lattices.posteriors import ngram_posteriors
    from lattices.theta import Theta

    vocab = Vocabulary.load(setup["models"][0].parent / "vocab.en.json")
    paths = {0: vocab.tokens[5:8], 2: vocab.tokens[9:11]}  # input line 1 is empty: never decoded, needs no L
    matrices = []
    for sentence, words in paths.items():
        labels = [vocab.bos_id, *vocab.encode(list(words)), vocab.eos_id]
        lattice = Lattice.from_arcs(len(labels) + 1, 0, [(i, i + 1, x, 0.0) for i, x in enumerate(labels)],
                                    {len(labels): 0.0})
        matrices.append(build_lmatrix(ngram_posteriors(lattice), Theta.from_precisions([60, 35, 21, 13]),
                                      len(vocab), sentence))
    (tmp_path / "L").mkdir()
    save_shard(tmp_path / "L" / "shard-0.npz", matrices)
    assert translate(setup, tmp_path, "--lmbr", str(tmp_path / "L"), "--lmbr-lambda", "1e-6", "--bpe-output",
                     str(tmp_path / "out.bpe"), "--max-length-b", "6") == 0
    bpe = (tmp_path / "out.bpe").read_text(encoding="utf-8").split("\n")
    # L alone decides: each output starts with its lattice's path and uses only its words (plain theta rewards
    # every n-gram of the path, so repeating the path can score higher than stopping after it: the length limit
    # ends it)
    assert bpe[1] == ""
    for line, words in ((bpe[0], paths[0]), (bpe[2], paths[2])):
        assert line.startswith(" ".join(words)) and set(line.split()) <= set(words)
    # an L over another vocabulary is refused
    save_shard(tmp_path / "L" / "shard-0.npz", [build_lmatrix(m.posteriors, Theta.from_precisions([60, 35, 21, 13]),
                                                              len(vocab) + 1, m.sentence) for m in matrices])
    assert translate(setup, tmp_path, "--lmbr", str(tmp_path / "L")) == 2
    assert "built for another vocabulary" in capsys.readouterr().err


def test_streaming_gives_the_batched_output(setup, tmp_path):
    lines = ("Der Mann sieht ein Haus.", "Mein Freund kauft das rote Auto heute.", "Ein Haus.", "",
             "Der Lehrer sieht den alten Baum heute und morgen.")
    outputs = []
    for extra in ([], ["--streaming", "--refill", "0.5", "--no-sort"]):
        assert translate(setup, tmp_path, "--batch-sentences", "2", "--timings", str(tmp_path / "t.json"), *extra,
                         input_lines=lines, models=setup["models"]) == 0
        outputs.append((tmp_path / "out.en").read_text(encoding="utf-8"))
    assert outputs[0] == outputs[1] and json.loads((tmp_path / "t.json").read_text())["streaming"] is True


def test_a_model_of_an_artifact_decodes_with_its_profiles_settings(setup, tmp_path, capsys):
    """A model inside a TrainNMT-style artifact folder brings its profile (signature.json): here paper's [decode],
    beam 12 and 16 sentences a batch; a loose checkpoint gets tiny's (beam 4, 8 sentences), said on stderr."""
    import shutil

    artifact = tmp_path / "work" / "paper" / "ger-eng" / "nmt" / "gru-seed1-abc"
    (artifact / "checkpoints").mkdir(parents=True)
    for name in ("vocab.de.json", "vocab.en.json"):
        shutil.copy(setup["models"][0].parent / name, artifact / "checkpoints" / name)
    model = shutil.copy(setup["models"][0], artifact / "checkpoints" / "checkpoint-00000010.pt")
    (artifact / "signature.json").write_text(json.dumps({"params": {"profile": "paper", "stage": "nmt"}}))
    timings = tmp_path / "timings.json"
    assert translate(setup, tmp_path, "--timings", str(timings), models=[model]) == 0
    assert (json.loads(timings.read_text())["beam"], json.loads(timings.read_text())["batch_sentences"]) == (12, 16)
    assert "the paper profile's [decode] settings" in capsys.readouterr().err
    assert translate(setup, tmp_path, "--timings", str(timings), "--profile", "medium", models=[model]) == 0
    assert json.loads(timings.read_text())["batch_sentences"] == 16 and json.loads(timings.read_text())["beam"] == 4
    assert translate(setup, tmp_path, "--timings", str(timings)) == 0
    assert (json.loads(timings.read_text())["beam"], json.loads(timings.read_text())["batch_sentences"]) == (4, 8)
    assert "no artifact signature naming its profile" in capsys.readouterr().err


def test_the_options_said_to_apply_with_system_are_those_run_system_reads():
    """--system's help names SYSTEM_OPTIONS as the options that apply; run_system reads exactly those (and the
    system and models), so an option added to the system path cannot be left out of the help (and docs/cli.md)."""
    import argparse
    import ast
    import inspect

    from pipeline.cli import translate_command

    parser = argparse.ArgumentParser()
    translate_command.register(parser.add_subparsers())
    translate = parser._subparsers._group_actions[0].choices["translate"]
    option_of = {a.dest: a.option_strings[0] for a in translate._actions if a.option_strings}
    tree = ast.parse(inspect.getsource(translate_command.run_system))
    read = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "args"}
    assert {option_of[dest] for dest in read - {"system", "models"}} == set(translate_command.SYSTEM_OPTIONS)
    system_help = next(a.help for a in translate._actions if a.dest == "system")
    assert all(option in system_help for option in translate_command.SYSTEM_OPTIONS)


def test_a_pretrained_model_folder_translates_raw_text_through_its_tokenizer(tmp_path, capsys):
    """`lmbr translate FOLDER --task ger-eng` with a transformers model folder: the texts of translate_lines over
    the raw lines (no BPE options; they are refused)."""
    pytest.importorskip("transformers")
    pytest.importorskip("sentencepiece")
    from pipeline.decode.translate import translate_lines
    from tests.pipeline.nmt.tiny_hf import synthetic_lines, tiny_marian

    folder = tiny_marian(tmp_path / "marian", seed=1, init_std=0.15, eos_bias=2.0)
    lines = synthetic_lines(5, seed=5)
    source, out, timings = tmp_path / "in.de", tmp_path / "out.en", tmp_path / "timings.json"
    source.write_text("\n".join(lines[:2] + [""] + lines[2:]) + "\n", encoding="utf-8")
    assert main(["translate", str(folder), "--task", "ger-eng", "--profile", "tiny", "-i", str(source), "-o",
                 str(out), "--beam", "3", "--timings", str(timings)]) == 0
    models = load_models([folder], languages=("de", "en"))
    settings = SearchSettings(beam=3, early_exit=True)
    expected = translate_lines(lines, models, settings, batch_sentences=16).text
    assert out.read_text(encoding="utf-8").split("\n")[:6] == expected[:2] + [""] + expected[2:]
    assert json.loads(timings.read_text())["speedups"] == []
    assert main(["translate", str(folder), "--task", "ger-eng", "--bpe-input", "-i", str(source)]) == 2
    assert "a pretrained model reads raw text through its own tokenizer" in capsys.readouterr().err
