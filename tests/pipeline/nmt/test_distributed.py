"""Data-parallel training on the CPU with gloo: two torchrun ranks follow the single-process run on the same global
batches, and a two-rank run killed with kill -9 resumes to the parameters of an uninterrupted one."""
from __future__ import annotations

import csv
import dataclasses
import gzip
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from pipeline.nmt.token_batches import collate
from pipeline.nmt.checkpoint import list_checkpoints, load_checkpoint
from pipeline.nmt.distributed import Ranks, shard
from pipeline.nmt.launch import (LaunchError, TrainingJob, launch, launch_command, ranks_per_node,
                                 result_from_json, result_to_json)
from pipeline.nmt.train import Trainer
from tests.pipeline.nmt.conftest import digit_data, digit_vocab, gru_config, training_profile, transformer_config

#: Two ranks sum the same gradients in another order; over 24 Adam updates the summed loss of each logged update
#: stays within this relative distance of the single process's (measured here: at most 4.1e-6, both models) ...
LOSS_TOLERANCE = 1e-4
#: ... and the final models' log-probabilities on 32 training pairs within this (measured: at most 1.4e-6).
OUTPUT_TOLERANCE = 1e-4


def test_the_shards_of_a_batch_cover_it_once_in_order():
    ids = np.arange(7)
    parts = [shard(ids, Ranks(r, 3)) for r in range(3)]
    assert np.concatenate(parts).tolist() == ids.tolist()
    assert [len(p) for p in parts] == [3, 2, 2]
    assert [len(shard(np.arange(1), Ranks(r, 2))) for r in range(2)] == [1, 0]


def test_the_launch_commands_name_the_ranks_and_the_rendezvous(tmp_path):
    job = tmp_path / "job.json"
    local = launch_command(job, per_node=2)
    assert local[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nnodes=1"]
    assert "--nproc-per-node=2" in local and local[-3:] == ["-m", "pipeline.nmt.launch", str(job)]
    cluster = launch_command(job, per_node=4, nodes=3, head="gpu017", job_id="4242")
    assert cluster[:4] == ["srun", "--nodes=3", "--ntasks-per-node=1", "--kill-on-bad-exit=1"]
    for option in ("--nnodes=3", "--nproc-per-node=4", "--rdzv-backend=c10d", "--rdzv-endpoint=gpu017:29500",
                   "--rdzv-id=4242"):
        assert option in cluster
    with pytest.raises(LaunchError, match="first node"):
        launch_command(job, per_node=4, nodes=3)
    assert ranks_per_node(3) == 3 and ranks_per_node(0) == max(1, torch.cuda.device_count())


def _write(path: Path, lines: list[list[str]]) -> str:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(" ".join(line) + "\n" for line in lines)
    return str(path)


def _job(tmp_path: Path, name: str, config, **overrides) -> TrainingJob:
    """A job on synthetic data: 200 reverse pairs, no dropout (two ranks draw other dropout masks)."""
    vocab = digit_vocab()
    state = tmp_path / name
    state.mkdir()
    vocab.save(state / "vocab.src.json")
    vocab.save(state / "vocab.tgt.json")
    data = digit_data(200, seed=5, task="reverse")
    profile = training_profile(**{"max_tokens": 160, "max_updates": 24, "checkpoint_every": 6, "keep_checkpoints": 3,
                                  "warmup_updates": 4, "label_smoothing": 0.1, **overrides})
    training = dataclasses.asdict(profile)
    return TrainingJob(model=config(vocab, dropout=0.0).to_dict(), training=training, seed=3, state_dir=str(state),
                       vocabularies={"source": "vocab.src.json", "target": "vocab.tgt.json"},
                       train={"source": _write(tmp_path / f"{name}.src.gz", data.sources),
                              "target": _write(tmp_path / f"{name}.tgt.gz", data.targets)}, log_every=1)


def _single_process(job: TrainingJob):
    vocab = digit_vocab()
    data = digit_data(200, seed=5, task="reverse")
    from pipeline.nmt.models import config_from_dict
    from pipeline.config import NmtTrainingProfile

    training = NmtTrainingProfile(**{**job.training, "seeds": tuple(job.training["seeds"])})
    trainer = Trainer(config_from_dict(job.model), training, job.seed, vocab, vocab, data, Path(job.state_dir),
                      device="cpu", log_every=1)
    return trainer.run(), trainer.model


def _losses(state_dir: str) -> dict[int, float]:
    with open(Path(state_dir) / "metrics.csv", newline="") as f:
        return {int(r["update"]): float(r["train_loss"]) for r in csv.DictReader(f) if r["kind"] == "train"}


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, children first (from /proc)."""
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    return [d for c in children for d in (c, *_descendants(c))]


def _final_weights(state_dir: str) -> dict[str, torch.Tensor]:
    return load_checkpoint(list_checkpoints(Path(state_dir))[-1]).model


@pytest.mark.parametrize("config,update_freq", [(gru_config, 1), (transformer_config, 1), (gru_config, 2)],
                         ids=["gru", "transformer", "gru-accumulating"])
def test_two_gloo_ranks_follow_the_single_process_run(config, update_freq, tmp_path):
    """Also with gradient accumulation: the ranks all-reduce once an update, after its last batch (no_sync)."""
    one = _job(tmp_path, "one", config, update_freq=update_freq)
    single, model = _single_process(one)
    vocab, data = digit_vocab(), digit_data(200, seed=5, task="reverse")
    data = type(data)([vocab.encode(s) for s in data.sources], [vocab.encode(t) for t in data.targets])
    two = _job(tmp_path, "two", config, update_freq=update_freq)
    two_result = launch(two, per_node=2)
    assert two_result.updates == single.updates == 24 and two_result.target_tokens == single.target_tokens
    a, b = _losses(one.state_dir), _losses(two.state_dir)
    assert a.keys() == b.keys() and len(a) > 0
    for update in sorted(b):
        assert abs(a[update] - b[update]) <= LOSS_TOLERANCE * abs(a[update]), update
    # the models, not their weights: an attention key bias has no gradient but float noise, which Adam scales up
    other = type(model)(model.config)
    other.load_state_dict(_final_weights(two.state_dir))
    batch = collate(data.sources[:32], data.targets[:32], vocab, vocab)
    with torch.no_grad():
        gap = (model.eval()(batch.src, batch.src_lengths, batch.tgt_in).log_softmax(-1)
               - other.eval()(batch.src, batch.src_lengths, batch.tgt_in).log_softmax(-1)).abs().max()
    assert gap <= OUTPUT_TOLERANCE, gap


def test_a_killed_two_rank_run_resumes_to_the_parameters_of_an_uninterrupted_one(tmp_path):
    reference = _job(tmp_path, "reference", gru_config, max_updates=120)  # long enough to be killed midway
    launch(reference, per_node=2)
    killed = _job(tmp_path, "killed", gru_config, max_updates=120)
    job_file = killed.save(Path(killed.state_dir) / "job.json")
    process = subprocess.Popen(launch_command(job_file, per_node=2), start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not any("00000012" in p.name for p in list_checkpoints(Path(killed.state_dir))):
        assert process.poll() is None and time.monotonic() < deadline, "the run ended before its second checkpoint"
        time.sleep(0.05)
    for pid in [*_descendants(process.pid), process.pid]:  # torchrun starts each rank in a session of its own
        os.kill(pid, signal.SIGKILL)
    process.wait()
    assert not (Path(killed.state_dir) / "result.json").exists()
    result = launch(killed, per_node=2)
    assert result.resumed_from is not None and 12 <= result.resumed_from < 120
    expected, resumed = _final_weights(reference.state_dir), _final_weights(killed.state_dir)
    for name, value in expected.items():
        assert torch.equal(value, resumed[name]), name
    assert result_from_json(result_to_json(result, 2)) == result
