"""Real Luigi (local scheduler) on a small de-en corpus: the data, LM and round-trip stages."""
import shutil
import subprocess
import sys
from pathlib import Path

import kenlm
import luigi
import pytest
import torch
from luigi.execution_summary import LuigiStatusCode

from pipeline.config import CONFIG_DIR
from pipeline.data.resolver import CHECKOUT
from pipeline.io import read_json, read_lines
from pipeline.vocab import Vocabulary
from tasks import LearnBPE, TaskReport, TokenizeSplit, TrainLM
from tests.conftest import write_gz
from tests.tasks.helpers import artifacts, build, shared_params


def test_report_builds_every_stage_and_a_rerun_only_checks(tmp_path, data_dir):
    report = TaskReport(eval_set="devtest", **shared_params(tmp_path, data_dir))
    assert build(report).status == LuigiStatusCode.SUCCESS
    work = tmp_path / "work"
    built = artifacts(work)
    stages = sorted({Path(a).parts[2] for a in built})
    assert stages == ["bpe", "lm", "roundtrip", "subwords", "tokenized", "truecased", "truecaser", "vocab"]

    train = report.requires()["train"].signature()["stats"]
    assert train["file_lines"] == 300 and train["cleaning"]["input_pairs"] == 300
    assert train["cleaning"]["kept_pairs"] == train["lines"] <= 300
    assert len(list(read_lines(report.requires()["train"].artifact_dir() / "tok.de.gz"))) == train["lines"]

    lm_dir = report.requires()["lm"].artifact_dir()
    lm_stats = read_json(lm_dir / "signature.json")["stats"]
    assert list(lm_stats["ngram_counts"]) == ["1", "2", "3", "4", "5"]
    model = kenlm.Model(str(lm_dir / "lm.bin"))
    assert model.order == 5 and 1 < lm_stats["tune_perplexity"] < 100  # a 5-gram on a small grammar

    vocab = Vocabulary.load(report.requires()["vocab"].artifact_dir() / "vocab.en.json")
    assert vocab.tokens[:4] == ("<pad>", "<s>", "</s>", "<unk>") and "the" in vocab

    roundtrip = report.requires()["roundtrip"].signature()["stats"]
    assert roundtrip["bleu"]["score"] == pytest.approx(100.0) and roundtrip["differing_lines"] == 0

    assert build(report).status == LuigiStatusCode.SUCCESS
    assert artifacts(work) == built  # nothing was rebuilt


def test_a_changed_parameter_builds_a_new_artifact(tmp_path, data_dir):
    other = tmp_path / "configs"
    shutil.copytree(CONFIG_DIR, other)
    profile = other / "profiles" / "tiny.toml"
    profile.write_text(profile.read_text().replace("merges = 2000", "merges = 40"))
    default = LearnBPE(**shared_params(tmp_path, data_dir))
    changed = LearnBPE(**shared_params(tmp_path, data_dir, config_dir=other))
    assert build(default, changed).status == LuigiStatusCode.SUCCESS
    assert default.artifact_dir() != changed.artifact_dir()
    assert default.input_dir() == changed.input_dir()  # the unchanged upstream stages are shared
    codes = [len(list(read_lines(t.artifact_dir() / "codes.joint"))) for t in (default, changed)]
    assert codes[1] == 41 and codes[0] > 41  # a version header line plus one line per merge


def test_a_failing_task_leaves_nothing_that_looks_complete(tmp_path, data_dir):
    params = shared_params(tmp_path, data_dir)
    assert build(TrainLM(**params)).status == LuigiStatusCode.SUCCESS
    before = artifacts(tmp_path / "work")
    lines = [line.encode() for line in read_lines(data_dir / "de-en" / "newstest2016.de.gz")]
    lines[7] = b"kaputt \xff\xfe"
    write_gz(data_dir / "de-en" / "newstest2016.de.gz", b"\n".join(lines) + b"\n")

    result = build(TaskReport(eval_set="devtest", **params))
    assert result.status == LuigiStatusCode.FAILED
    failed = TokenizeSplit(split="newstest2016", **params)
    assert not failed.complete() and not failed.artifact_dir().exists()
    assert not list(failed.artifact_dir().parent.glob("*tmp*"))
    after = artifacts(tmp_path / "work")
    assert {k: after[k] for k in before} == before  # earlier outputs survive untouched


def test_leftovers_of_a_killed_run_are_removed(tmp_path, data_dir):
    task = TokenizeSplit(split="dev", **shared_params(tmp_path, data_dir))
    leftover = task.artifact_dir().parent / (task.artifact_dir().name + ".tmp-killed")
    leftover.mkdir(parents=True)
    (leftover / "raw.de.gz").write_bytes(b"half")
    assert build(task).status == LuigiStatusCode.SUCCESS
    assert not leftover.exists() and task.complete()


def test_luigi_command_exits_non_zero_when_a_task_fails(tmp_path, data_dir):
    luigi_bin = Path(sys.executable).parent / "luigi"
    params = shared_params(tmp_path, data_dir)
    command = [str(luigi_bin), "--module", "tasks", "TokenizeSplit", "--local-scheduler", "--split", "newstest2014"]
    for key in ("task_name", "work_dir", "data_dir", "cache_dir", "profile"):
        command += ["--" + key.replace("_", "-"), str(params[key])]
    done = subprocess.run(command, cwd=CHECKOUT, capture_output=True, text=True, env={"MT_OFFLINE": "1", "PATH": ""})
    assert done.returncode == 30, done.stderr[-2000:]  # [retcode] task_failed in luigi.cfg
    assert "de-en/newstest2014" in done.stderr and "was not found" in done.stderr


def test_tasks_declare_the_resources_they_hold(tmp_path, monkeypatch):
    from tasks import AlignWords, TrainLM
    from tasks.decode import DecodeLNMT

    params = {"task_name": "ger-eng", "work_dir": str(tmp_path), "processes": 3}
    assert AlignWords(**params).needs() == {"cpu": 3, "memory_mb": 4000}  # a parallel stage holds its processes
    assert TrainLM(**params).needs() == {"cpu": 1, "memory_mb": 2500}
    needed = DecodeLNMT(split="dev", **params).needs()
    assert needed["cpu"] == 3 and ("gpu" in needed) == torch.cuda.is_available()
    config = luigi.configuration.get_config()
    monkeypatch.setattr(config, "has_option", lambda section, name: section == "resources" and name == "cpu")
    monkeypatch.setattr(config, "getint", lambda section, name, *default: 2)
    assert AlignWords(**params).resources == {"cpu": 2}  # capped by the capacity; memory not configured
    monkeypatch.setattr(config, "has_option", lambda section, name: False)
    assert AlignWords(**params).resources == {}  # nothing configured: nothing that could block a task
