import json
import sys

import pytest

from pipeline.cli.lmbr import main
from tests.conftest import write_gz


def test_bleu_command_prints_json(tmp_path, capsys):
    hyp = write_gz(tmp_path / "hyp.gz", ["the cat sat on the mat"])
    ref = write_gz(tmp_path / "ref.gz", ["the cat sat on the mat"])
    assert main(["bleu", str(hyp), str(ref), "--lang", "en", "--json"]) == 0
    score = json.loads(capsys.readouterr().out)
    assert score["score"] == pytest.approx(100.0) and "tok:13a" in score["signature"]


def test_bleu_command_line_count_mismatch(tmp_path, capsys):
    hyp = write_gz(tmp_path / "hyp.gz", ["a", "b"])
    ref = write_gz(tmp_path / "ref.gz", ["a"])
    assert main(["bleu", str(hyp), str(ref), "--lang", "en"]) == 2
    assert f"{hyp} has 2 lines but {ref} has 1" in capsys.readouterr().err


def test_config_command_lists_and_validates(capsys):
    assert main(["config"]) == 0
    assert "ger-eng" in capsys.readouterr().out
    assert main(["config", "eng-jpn", "--profile", "tiny"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["task"]["target"] == "ja" and shown["profile"]["name"] == "tiny"
    assert main(["config", "xx-yy"]) == 2
    assert "xx-yy.toml: no such config file" in capsys.readouterr().err


def test_tokenize_then_detokenize_filters(monkeypatch, capsys):
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO("Hello, world! It's 5 o'clock.\n"))
    assert main(["tokenize", "--lang", "en"]) == 0
    tokenized = capsys.readouterr().out
    assert tokenized.split()[:3] == ["Hello", ",", "world"]
    monkeypatch.setattr(sys, "stdin", io.StringIO(tokenized))
    assert main(["detokenize", "--lang", "en"]) == 0
    assert capsys.readouterr().out == "Hello, world! It's 5 o'clock.\n"
