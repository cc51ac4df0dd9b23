"""Mixed precision: what a profile's precision becomes on each device, the autocast path (run on the CPU, whose
autocast has both half types), the fp16 gradient scaler through a kill and resume, and fp16 decoding on CUDA."""
from __future__ import annotations

import csv

import pytest
import torch

from pipeline.errors import ConfigError
from pipeline.nmt.checkpoint import CheckpointError
from pipeline.nmt.checkpoint import list_checkpoints, load_checkpoint
from pipeline.nmt import precision as precision_module
from pipeline.nmt.precision import decoding_half, training_precision
from pipeline.nmt.train import Trainer
from tests.pipeline.nmt.conftest import digit_data, gru_config, training_profile, transformer_config

CPU = torch.device("cpu")


class Killed(Exception):
    pass


def test_a_cpu_trains_in_bf16_only_where_it_computes_bf16_natively(monkeypatch):
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: False)
    assert [training_precision(p, CPU) for p in ("fp32", "bf16", "fp16", "auto")] == ["fp32"] * 4
    monkeypatch.setattr(precision_module, "cpu_has_native_bf16", lambda: True)
    assert [training_precision(p, CPU) for p in ("fp32", "bf16", "fp16", "auto")] == ["fp32", "bf16", "fp32", "bf16"]
    assert not decoding_half(True, CPU) and not decoding_half(False, torch.device("cuda"))
    assert decoding_half(True, torch.device("cuda"))
    with pytest.raises(ConfigError, match="fp64"):
        training_precision("fp64", CPU)


def _losses(folder) -> list[float]:
    with (folder / "metrics.csv").open() as f:
        return [float(r["train_loss"]) for r in csv.DictReader(f) if r["kind"] == "train"]


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_half_precision_training_follows_fp32(precision, vocab, tmp_path):
    """Autocast in a half type changes the rounding, not what is learnt: the same run's loss curve within 1%
    (measured on the CPU: at most 0.1% for bf16, which keeps 8 bits of mantissa, and 0.013% for fp16), and
    falling."""
    data = digit_data(200, seed=2, task="copy")
    profile = training_profile(max_tokens=200, max_updates=40, checkpoint_every=20, keep_checkpoints=2)
    runs = {}
    for p in ("fp32", precision):
        Trainer(transformer_config(vocab), profile, 1, vocab, vocab, data, tmp_path / p, device="cpu", log_every=5,
                precision=p).run()
        runs[p] = _losses(tmp_path / p)
    assert len(runs["fp32"]) == len(runs[precision]) == 8
    for full, half in zip(runs["fp32"], runs[precision]):
        assert abs(full - half) <= 0.01 * full
    assert runs[precision][-1] < 0.8 * runs[precision][0]
    assert runs["fp32"] != runs[precision]  # the half type really ran


def test_the_fp16_gradient_scaler_is_checkpointed_and_resumed(vocab, tmp_path):
    data = digit_data(120, seed=4, task="reverse")
    profile = training_profile(max_tokens=150, max_updates=14, checkpoint_every=5, keep_checkpoints=2)

    def trainer(folder, hook=None):
        return Trainer(gru_config(vocab, dropout=0.2), profile, 3, vocab, vocab, data, tmp_path / folder,
                       device="cpu", after_update=hook, precision="fp16")

    straight = trainer("straight")
    straight.run()

    def kill_at_8(update):
        if update == 8:
            raise Killed()
    with pytest.raises(Killed):
        trainer("killed", kill_at_8).run()
    saved = load_checkpoint(list_checkpoints(tmp_path / "killed")[-1]).training["scaler"]
    assert saved["scale"] > 0
    resumed = trainer("killed")
    assert resumed.run().resumed_from == 5
    assert resumed.scaler.state_dict() == straight.scaler.state_dict()
    for (name, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name


def test_fp16_decoding_needs_cuda(tmp_path):
    from pipeline.decode.translate import load_models

    with pytest.raises(CheckpointError, match="fp16"):
        load_models([tmp_path / "model.pt"], "cpu", half=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_fp16_decoding_gives_the_fp32_outputs_on_cuda(trained):
    from pipeline.nmt.token_batches import source_ids
    from pipeline.nmt.checkpoint import model_from_checkpoint
    from pipeline.nmt.greedy import translate_ids
    from pipeline.nmt.interface import Ensemble

    test = digit_data(100, seed=7, task=trained.task)
    sources = [source_ids(s, trained.vocab) for s in test.sources]
    checkpoint = load_checkpoint(list_checkpoints(trained.folder)[-1])
    outputs = {}
    for half in (False, True):
        model = model_from_checkpoint(checkpoint, "cuda")
        outputs[half] = translate_ids(Ensemble([model.half() if half else model]), sources, trained.vocab.pad_id,
                                      "cuda")
    same = sum(a == b for a, b in zip(outputs[False], outputs[True]))
    assert same >= 95, f"{same} of 100 outputs equal in fp16 and fp32"
