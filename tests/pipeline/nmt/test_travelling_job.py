"""Travelling training jobs: a job packed from its files, trained in another process that sees only the job folder
(a kill resumed), its result travelled in parts, and adopted into the layout of a model trained in place with the
same weights; every refusal names its file."""
import dataclasses
import gzip
import os
import shutil
import subprocess
import sys

import pytest
import torch

from pipeline.io import read_json, write_json
from pipeline.nmt.checkpoint import list_checkpoints, load_checkpoint
from pipeline.nmt.distributed import Ranks
from pipeline.nmt.launch import TrainingJob, run_job
from pipeline.nmt.travelling_job import (MANIFEST, RESULT, TrainingJobError, TrainingJobPending, adopt, job_status,
                                         pack, read_packed, read_result, train)
from tests.pipeline.nmt.conftest import digit_data, digit_vocab, training_profile, transformer_config

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _write_gz(path, lines):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(" ".join(tokens) + "\n" for tokens in lines)
    return str(path)


@pytest.fixture
def job(tmp_path):
    """A TrainingJob over files of its own, as TrainNMT writes one: data, vocabularies in its state folder."""
    vocab, data = digit_vocab(), digit_data(100, seed=4, task="reverse")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    vocab.save(inputs / "vocab.src.json")
    vocab.save(inputs / "vocab.tgt.json")
    profile = training_profile(max_tokens=150, max_updates=12, checkpoint_every=4, keep_checkpoints=2,
                               snapshot_every=4)
    training = {**dataclasses.asdict(profile), "seeds": list(profile.seeds)}
    return TrainingJob(model=transformer_config(vocab, dropout=0.1).to_dict(), training=training, seed=5,
                       state_dir=str(inputs), vocabularies={"source": "vocab.src.json", "target": "vocab.tgt.json"},
                       train={"source": _write_gz(inputs / "train.src.gz", data.sources),
                              "target": _write_gz(inputs / "train.tgt.gz", data.targets)}, threads=1)


def _identity():
    return {"task": "ger-eng", "profile": "tiny", "architecture": "transformer", "seed": 5, "artifact": "x"}


def _train_elsewhere(folder, tmp_path, *args):
    """`lmbr train-jobs train` in another process, in another folder, on a copy of the job folder alone; the copy."""
    away = tmp_path / "elsewhere" / folder.name
    shutil.copytree(folder, away)
    env = {k: v for k, v in os.environ.items() if k != "MT_DATA_DIR"}
    env["PYTHONPATH"] = CHECKOUT
    done = subprocess.run([sys.executable, "-m", "pipeline.cli.lmbr", "train-jobs", "train", str(away), *args],
                          cwd=away.parent, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return away


def test_a_job_trained_elsewhere_is_adopted_with_the_weights_of_one_trained_in_place(job, tmp_path):
    shutil.copytree(job.state_dir, tmp_path / "in-place")
    in_place = run_job(dataclasses.replace(job, state_dir=str(tmp_path / "in-place")), Ranks())
    packed = pack(job, tmp_path / "inputs", tmp_path / "jobs" / "job-a", _identity())
    assert job_status(packed.folder) == "packed"
    assert pack(job, tmp_path / "inputs", packed.folder, _identity()).digest == packed.digest  # packed again: kept
    away = _train_elsewhere(packed.folder, tmp_path, "--part-mb", "0.05")
    assert any(".part-" in p.name for p in (away / RESULT / "checkpoints").iterdir())  # travelled in parts
    shutil.rmtree(packed.folder)
    shutil.copytree(away, packed.folder)  # brought back
    out = tmp_path / "artifact"
    out.mkdir()
    stats = adopt(packed.folder, packed.digest, out)
    assert stats["updates"] == 12 and stats["job_device"] == "cpu" and stats["trained_by"] == "job"
    adopted = list_checkpoints(out / "checkpoints")
    assert [p.name for p in adopted] == [p.name for p in in_place.checkpoints]  # snapshots 4, 8 and the last two
    for mine, theirs in zip(in_place.checkpoints, adopted):
        a, b = load_checkpoint(mine), load_checkpoint(theirs)
        assert b.training is None and b.vocabularies == {"source": "../vocab.src.json", "target": "../vocab.tgt.json"}
        for name, tensor in a.model.items():
            assert torch.equal(tensor, b.model[name]), (mine.name, name)
    assert (out / "metrics.csv").is_file() and read_json(out / "config.json") == job.model


def test_a_killed_job_is_pending_then_resumes(job, tmp_path):
    packed = pack(job, tmp_path / "inputs", tmp_path / "job", _identity())

    class Killed(Exception):
        pass

    def kill(update):
        if update == 6:
            raise Killed()
    with pytest.raises(Killed):
        train(packed.folder, after_update=kill)
    assert job_status(packed.folder) == "training (update 4)"
    with pytest.raises(TrainingJobPending, match=r"result\.json: missing: the job has not finished training \(its "
                                                 r"state folder holds"):
        adopt(packed.folder, packed.digest, tmp_path)
    train(packed.folder)
    assert read_result(packed.folder, packed.digest)["trained"]["resumed_from"] == 4


def test_every_refusal_names_its_file(job, tmp_path):
    packed = pack(job, tmp_path / "inputs", tmp_path / "job", _identity())
    other = dataclasses.replace(job, seed=6)
    with pytest.raises(TrainingJobError, match=r"job/manifest\.json: the folder holds another job"):
        pack(other, tmp_path / "inputs", packed.folder, _identity())
    train(packed.folder)
    result = packed.folder / RESULT

    # the result of another job: its digest is not this model's
    with pytest.raises(TrainingJobError, match=r"result\.json: trained from another job"):
        adopt(packed.folder, "0" * 64, tmp_path)
    # a tampered result file
    last = list_checkpoints(result / "checkpoints")[-1]
    original = last.read_bytes()
    last.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    with pytest.raises(TrainingJobError, match=rf"{last.name}: sha256 .* differs from the recorded"):
        adopt(packed.folder, packed.digest, tmp_path)
    last.write_bytes(original)
    # a missing part of a result that travelled in parts
    data = original
    half = len(data) // 2
    last.unlink()
    (last.parent / f"{last.name}.part-000").write_bytes(data[:half])
    (last.parent / f"{last.name}.part-002").write_bytes(data[half:])
    with pytest.raises(TrainingJobError, match=r"parts \[0, 2\] are not 0\.\.1: a part is missing"):
        adopt(packed.folder, packed.digest, tmp_path)
    # a missing result file
    for part in last.parent.glob(f"{last.name}.part-*"):
        part.unlink()
    with pytest.raises(TrainingJobError, match=rf"{last.name}: missing"):
        adopt(packed.folder, packed.digest, tmp_path)
    # a tampered input, before training
    source = packed.folder / "train.source.gz"
    source.write_bytes(source.read_bytes() + b"\n")
    with pytest.raises(TrainingJobError, match=r"train\.source\.gz: sha256 .* differs"):
        train(packed.folder)
    # job.json edited after packing
    fresh = pack(job, tmp_path / "inputs", tmp_path / "fresh", _identity())
    edited = read_json(fresh.folder / "job.json")
    edited["training"]["max_updates"] = 99
    write_json(fresh.folder / "job.json", edited)
    with pytest.raises(TrainingJobError, match=r"job\.json: does not match the digest"):
        read_packed(fresh.folder)
    # no job at all
    with pytest.raises(TrainingJobError, match=rf"{MANIFEST}: missing"):
        read_packed(tmp_path / "inputs")
