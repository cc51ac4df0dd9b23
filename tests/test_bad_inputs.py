"""The bad-input catalogue (docs/errors.md): each bad input and exactly what the user gets.

Every case goes through the entry point a user would meet (the `lmbr` CLI, the data preparation, the config loader,
model loading, atomic writes) and asserts the message: the file, the line or key, and the problem.
"""
import errno
import gzip
import re

import pynini
import pytest

from lattices.fst_io import read_lattice
from pipeline import config
from pipeline.cli.lmbr import main as lmbr
from pipeline.config import ConfigError
from pipeline.data.corpus import clean_pairs, read_parallel
from pipeline.data.resolver import DataResolver
from pipeline.decode import SearchSettings
from pipeline.decode.translate import load_models, translate_lines
from pipeline.errors import DataError
from pipeline.io import write_lines
from pipeline.nmt.checkpoint import CheckpointError, save_checkpoint
from pipeline.nmt.models import build_model
from pipeline.text import TextProcessor, get_tokenizer
from pipeline.vocab import Vocabulary
from tests.pipeline.nmt.conftest import transformer_config
from tests.pipeline.test_config import copy_configs


def write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_mismatched_line_counts_name_both_files_and_counts(tmp_path, capsys):
    src, tgt = write(tmp_path / "a.de", b"eins\nzwei\n"), write(tmp_path / "a.en", b"one\n")
    with pytest.raises(DataError, match=r"a.de has 2 lines but .*a.en has 1 lines: the files are not line-aligned"):
        read_parallel(src, tgt)
    assert lmbr(["bleu", str(src), str(tgt), "--lang", "en"]) == 2
    assert "a.de has 2 lines but" in capsys.readouterr().err


def test_invalid_utf8_names_file_line_and_byte(tmp_path, capsys):
    bad = write(tmp_path / "bad.en", b"fine\nbroken \xff here\n")
    good = write(tmp_path / "good.en", b"fine\nfine\n")
    assert lmbr(["bleu", str(bad), str(good), "--lang", "en"]) == 2
    assert "bad.en, line 2: invalid UTF-8 (byte 0xff at byte offset 7)" in capsys.readouterr().err


def test_empty_and_overlong_training_pairs_are_removed_and_counted():
    source = [["a"], [], ["b"] * 90, ["c", "d"]]
    target = [["x"], ["y"], ["z"], ["w"] * 9]
    keep, stats = clean_pairs(source, target, min_tokens=1, max_tokens=80, max_ratio=3.0)
    assert keep == [0]
    assert (stats.empty, stats.too_long, stats.bad_ratio) == (1, 1, 1)


def test_empty_lines_translate_to_empty_lines_and_overlong_ones_are_refused(tmp_path):
    vocab = Vocabulary.build([["ein", "Haus"]])
    cfg = transformer_config(vocab, max_positions=8)
    path = save_checkpoint(tmp_path / "m.pt", cfg, build_model(cfg).state_dict(),
                           {"source": "v.json", "target": "v.json"})
    vocab.save(tmp_path / "v.json")
    models = load_models([path])
    target = TextProcessor(tokenizer=get_tokenizer("moses", "en"), truecaser=None, bpe=None)
    result = translate_lines(["", "ein Haus"], models, SearchSettings(beam=2, max_length_b=3), target)
    assert result.text[0] == "" and result.stats["decoded_sentences"] == 1
    with pytest.raises(DataError, match=r"line 2: 10 source subwords \(with </s>\), more than the model's 8"):
        translate_lines(["ein", "ein Haus " * 4 + "Haus"], models, SearchSettings(beam=2), target)


def test_words_outside_the_nmt_vocabulary_become_unk_and_still_translate(tmp_path):
    vocab = Vocabulary.build([["ein", "Haus"]])
    assert vocab.encode(["Zwergpinscher", "Haus"]) == [vocab.unk_id, vocab.id("Haus")]
    cfg = transformer_config(vocab)
    save_checkpoint(tmp_path / "m.pt", cfg, build_model(cfg).state_dict(), {"source": "v.json", "target": "v.json"})
    vocab.save(tmp_path / "v.json")
    target = TextProcessor(tokenizer=get_tokenizer("moses", "en"), truecaser=None, bpe=None)
    result = translate_lines(["Zwergpinscher Kobold"], load_models([tmp_path / "m.pt"]),
                             SearchSettings(beam=2, max_length_b=2), target)
    assert result.stats["decoded_sentences"] == 1


def test_a_missing_split_names_the_split_its_config_key_and_every_place_looked(tmp_path):
    task = config.load_task("ger-eng")
    resolver = DataResolver(tmp_path / "data", tmp_path / "cache", offline=True)
    with pytest.raises(DataError) as e:
        resolver.resolve(task, "newstest2016")
    message = str(e.value)
    assert "newstest2016" in message and str(tmp_path / "data") in message and str(tmp_path / "cache") in message


def test_an_unknown_config_key_names_the_file_and_the_key(tmp_path):
    folder = copy_configs(tmp_path)
    path = folder / "profiles" / "tiny.toml"
    path.write_text(path.read_text().replace("[decode]\n", "[decode]\nbeem = 4\n"))
    with pytest.raises(ConfigError, match=r"tiny.toml.*'decode.beem'"):
        config.load_profile("tiny", folder)


def test_empty_pathless_and_corrupt_lattices(tmp_path, capsys):
    pathless = pynini.Fst()
    pathless.add_states(2)
    pathless.set_start(0)
    pathless.add_arc(0, pynini.Arc(3, 3, 0.5, 1))  # no final state
    pathless.write(str(tmp_path / "pathless.fst"))
    pynini.Fst().write(str(tmp_path / "empty.fst"))
    write(tmp_path / "corrupt.fst", b"not an fst")
    for name in ("pathless", "empty"):
        assert read_lattice(tmp_path / f"{name}.fst").num_states == 0
        assert lmbr(["posteriors", str(tmp_path / f"{name}.fst")]) == 0
        captured = capsys.readouterr()
        assert captured.out == "" and "has no complete path" in captured.err and "Theta_0 everywhere" in captured.err
    assert lmbr(["posteriors", str(tmp_path / "corrupt.fst")]) == 2
    assert "corrupt.fst: not an OpenFst lattice" in capsys.readouterr().err


def test_corrupt_and_mismatched_checkpoints(tmp_path):
    write(tmp_path / "corrupt.pt", b"garbage")
    with pytest.raises(CheckpointError, match="corrupt.pt"):
        load_models([tmp_path / "corrupt.pt"])
    paths = []
    for i, words in enumerate((["ein", "Haus"], ["ein", "Baum"])):
        vocab = Vocabulary.build([words])
        vocab.save(tmp_path / f"v{i}.json")
        cfg = transformer_config(vocab)
        paths.append(save_checkpoint(tmp_path / f"m{i}.pt", cfg, build_model(cfg).state_dict(),
                                     {"source": f"v{i}.json", "target": f"v{i}.json"}))
    with pytest.raises(CheckpointError, match="m1.pt: its vocabularies differ from those of"):
        load_models(paths)


def test_a_full_disk_during_a_write_is_named_and_leaves_the_old_file_intact(tmp_path):
    out = tmp_path / "translation.en.gz"
    write_lines(out, ["old"])

    def lines():
        yield "first"
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(DataError, match=r"translation.en.gz: the disk is full \(No space left on device\)"):
        write_lines(out, lines())
    assert gzip.decompress(out.read_bytes()) == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["translation.en.gz"]  # no temporary file left


def test_a_slurm_job_cancelled_from_outside_fails_with_its_log_and_keeps_the_inputs(tmp_path, data_dir,
                                                                                    slurm_cluster):
    """scancel of a running job: the worker's task fails naming the job, its end state and its log; what the job's
    stage needed stays complete, and a rerun builds the stage."""
    import subprocess
    import threading
    import time

    import luigi.configuration

    from pipeline.cluster.slurm import SlurmError
    from tasks import TrainLM
    from tests.tasks.helpers import build, shared_params

    lm = TrainLM(**shared_params(tmp_path, data_dir))
    inputs = lm.inputs()
    assert build(*inputs).status.name == "SUCCESS"
    config = luigi.configuration.get_config()
    config.set("cluster", "scheduler", "slurm")
    config.set("cluster", "poll_seconds", "0.2")
    errors = []
    try:
        worker = threading.Thread(target=lambda: errors.append(_raised(lm.run)))
        worker.start()
        for _ in range(300):  # cancel the job once it runs
            running = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], capture_output=True,
                                     text=True).stdout.split()
            if running:
                subprocess.run(["scancel", running[0]], check=True)
                break
            time.sleep(0.05)
        worker.join(timeout=120)
    finally:
        config.set("cluster", "scheduler", "local")
    (error,) = errors
    assert isinstance(error, SlurmError)
    assert re.search(r"Slurm job \d+ for lm of ger-eng ended CANCELLED.*; log: \S+/logs/lm\.lm-\w+\.\d+\.log",
                     str(error)), error
    assert not lm.complete() and all(task.complete() for task in inputs)
    lm.run()  # local again: the rerun builds it
    assert lm.complete()


def _raised(call) -> BaseException | None:
    try:
        call()
    except BaseException as e:  # noqa: BLE001 - the test inspects it
        return e
    return None


def test_catalogue_is_documented():
    from pathlib import Path

    section = (Path(__file__).resolve().parents[1] / "docs" / "errors.md").read_text(encoding="utf-8")
    for topic in ("line counts", "UTF-8", "empty", "over-long", "missing split", "unknown config key", "lattice",
                  "vocabulary", "checkpoint", "disk is full", "Slurm job"):
        assert topic in section, topic
