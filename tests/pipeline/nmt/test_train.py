"""Training: both architectures learn a synthetic task; a killed run resumes to the same parameters; checkpoints,
budget, validation and metrics; gradient accumulation and the loss sums kept on the device."""
import csv
import math

import numpy as np
import pytest
import torch

from pipeline.nmt.token_batches import source_ids
from pipeline.nmt.checkpoint import list_checkpoints, load_checkpoint
from pipeline.nmt.greedy import translate_ids
from pipeline.nmt.loss import label_smoothed_loss
from pipeline.nmt.train import ParallelText, Trainer, Validation
from tests.pipeline.nmt.conftest import digit_data, gru_config, training_profile, transformer_config


def test_both_architectures_learn_the_synthetic_task_within_a_minute(trained):
    test = digit_data(300, seed=99, task=trained.task)
    outputs = translate_ids(trained.model, [source_ids(s, trained.vocab) for s in test.sources],
                            trained.vocab.pad_id, "cpu")
    accuracy = sum(trained.vocab.decode(o) == t for o, t in zip(outputs, test.targets)) / len(test.targets)
    assert accuracy > 0.95, f"{trained.model.config.architecture}: exact match {accuracy:.3f} on {trained.task}"
    assert trained.seconds < 60


class Killed(Exception):
    pass


def kill_at(update):
    def hook(u):
        if u == update:
            raise Killed(u)
    return hook


@pytest.mark.parametrize("config", [gru_config, transformer_config], ids=["gru", "transformer"])
def test_a_killed_run_resumes_to_the_parameters_of_an_uninterrupted_one(config, vocab, tmp_path):
    data = digit_data(120, seed=4, task="reverse")  # about 6 batches an epoch: the run crosses epochs
    profile = training_profile(max_tokens=150, max_updates=14, checkpoint_every=5, keep_checkpoints=2,
                               label_smoothing=0.1)
    cfg = config(vocab, dropout=0.2)  # dropout: the random state must be restored too

    def trainer(folder, hook=None):
        return Trainer(cfg, profile, 3, vocab, vocab, data, tmp_path / folder, device="cpu", log_every=2,
                       after_update=hook)

    straight = trainer("straight")
    straight_result = straight.run()
    with pytest.raises(Killed):
        trainer("killed", kill_at(8)).run()
    assert [p.name for p in list_checkpoints(tmp_path / "killed")] == ["checkpoint-00000005.pt"]
    resumed = trainer("killed")
    result = resumed.run()
    assert result.resumed_from == 5 and result.updates == straight_result.updates == 14
    assert result.epoch == straight_result.epoch > 0
    for (name, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name
    assert [p.name for p in result.checkpoints] == ["checkpoint-00000010.pt", "checkpoint-00000014.pt"]

    def rows(folder):
        with (tmp_path / folder / "metrics.csv").open() as f:
            return [(r["kind"], r["update"], r["train_loss"]) for r in csv.DictReader(f)]
    assert rows("killed") == rows("straight")  # the killed run's tail (updates 6-8) was dropped


def test_snapshots_stay_beside_the_last_checkpoints_weights_only_and_a_resume_ignores_them(vocab, tmp_path):
    profile = training_profile(max_tokens=150, max_updates=14, checkpoint_every=2, keep_checkpoints=2,
                               snapshot_every=4)
    data = digit_data(120, seed=4, task="reverse")

    def run(folder, hook=None):
        return Trainer(gru_config(vocab), profile, 3, vocab, vocab, data, tmp_path / folder, device="cpu",
                       after_update=hook).run()

    straight = run("straight")
    assert [p.name for p in straight.checkpoints] == [f"checkpoint-{u:08d}.pt" for u in (4, 8, 12, 14)]
    snapshots = [load_checkpoint(p) for p in straight.checkpoints[:2]]
    assert [(c.training, c.meta["update"]) for c in snapshots] == [(None, 4), (None, 8)]
    assert load_checkpoint(straight.checkpoints[-1]).training["update"] == 14
    with pytest.raises(Killed):
        run("killed", kill_at(11))  # after checkpoint 10, with snapshot 8 stripped and 4 kept
    resumed = run("killed")
    assert resumed.resumed_from == 10 and [p.name for p in resumed.checkpoints] == \
        [p.name for p in straight.checkpoints]
    for a, b in zip(straight.checkpoints, resumed.checkpoints):
        for (name, x), y in zip(load_checkpoint(a).model.items(), load_checkpoint(b).model.values()):
            assert torch.equal(x, y), (a.name, name)


def test_the_linear_schedule_anneals_to_zero_at_max_updates_across_a_resume(vocab, tmp_path):
    profile = training_profile(lr=0.01, lr_schedule="linear", warmup_updates=2, max_updates=6, checkpoint_every=3,
                               keep_checkpoints=2)
    rates = {}  # update -> the rate the optimizer holds after it (the rate of the next update)

    def run(kill: int = 0):
        def hook(update):
            rates[update] = trainer.optimizer.param_groups[0]["lr"]
            if update == kill:
                raise Killed(update)
        trainer = Trainer(gru_config(vocab), profile, 1, vocab, vocab, digit_data(200, 1, "copy"), tmp_path,
                          device="cpu", after_update=hook)
        return trainer.run()

    with pytest.raises(Killed):
        run(kill=4)
    assert run().resumed_from == 3
    # update u trains at 0.01 * u / 2 during the warm-up, then at 0.01 * (7 - u) / 5: the last one at 0.002
    assert [rates[u] for u in range(1, 7)] == pytest.approx([0.01, 0.008, 0.006, 0.004, 0.002, 0.0])


def test_the_budget_stops_training_with_a_final_checkpoint(vocab, tmp_path):
    profile = training_profile(max_updates=0, budget_seconds=0.5, checkpoint_every=3, keep_checkpoints=2)
    result = Trainer(gru_config(vocab), profile, 1, vocab, vocab, digit_data(200, 1, "copy"), tmp_path,
                     device="cpu").run()
    assert result.stop_reason == "budget" and 0.5 <= result.elapsed < 10
    assert len(result.checkpoints) <= 2
    last = load_checkpoint(result.checkpoints[-1])
    assert last.training["update"] == result.updates and last.training["elapsed"] >= 0.5
    again = Trainer(gru_config(vocab), profile, 1, vocab, vocab, digit_data(200, 1, "copy"), tmp_path,
                    device="cpu").run()
    assert again.updates == result.updates and again.resumed_from == result.updates  # nothing left to do


def test_validation_reports_loss_and_greedy_bleu(train_once, tmp_path):
    trained = train_once("transformer")
    vocab = trained.vocab
    valid = digit_data(50, seed=7, task=trained.task)
    references = [" ".join(t) for t in valid.targets]
    trainer = Trainer(trained.model.config, training_profile(), 1, vocab, vocab, valid, tmp_path, device="cpu",
                      valid=Validation(valid, references, " ".join, "en"))
    trainer.model.load_state_dict(trained.model.state_dict())
    good = trainer.validate()
    assert good["valid_bleu"] > 90 and good["valid_loss"] < 0.2
    assert good["valid_ppl"] == pytest.approx(math.exp(good["valid_loss"]))
    wrong = Validation(valid, [r[::-1] + " 0 0" for r in references], " ".join, "en")
    trainer.valid = wrong
    assert trainer.validate()["valid_bleu"] < good["valid_bleu"]


def test_label_smoothed_loss_ignores_padding():
    logits = torch.randn(2, 3, 5)
    target = torch.tensor([[1, 2, 0], [3, 0, 0]])  # pad id 0
    loss, nll = label_smoothed_loss(logits, target, pad_id=0, smoothing=0.0)
    log_probs = logits.log_softmax(-1)
    expected = -(log_probs[0, 0, 1] + log_probs[0, 1, 2] + log_probs[1, 0, 3])
    assert float(nll) == pytest.approx(float(expected), rel=1e-6) and float(loss) == pytest.approx(float(nll))
    smoothed, _ = label_smoothed_loss(logits, target, pad_id=0, smoothing=0.1)
    assert float(smoothed) != pytest.approx(float(nll))


def test_training_data_must_be_parallel():
    with pytest.raises(ValueError, match="2 sources but 1 targets"):
        ParallelText([["a"], ["b"]], [["c"]])


def _trainer(config, vocab, data, folder, **overrides):
    profile = training_profile(**{"max_tokens": 120, "max_updates": 12, "checkpoint_every": 1000, "clip_norm": 0.0,
                                  "label_smoothing": 0.1, **overrides})
    return Trainer(config, profile, 5, vocab, vocab, data, folder, device="cpu", log_every=4)


@pytest.mark.parametrize("config", [gru_config, transformer_config], ids=["gru", "transformer"])
def test_accumulating_batches_equals_one_update_over_their_union(config, vocab, tmp_path):
    """update_freq k: the gradient of k batches (each normalised by the update's target tokens) is the gradient of
    one batch holding them all, up to summation order (no dropout: the same function on both sides)."""
    data = digit_data(80, seed=6, task="reverse")
    accumulated = _trainer(config(vocab), vocab, data, tmp_path / "k", update_freq=3)
    union = _trainer(config(vocab), vocab, data, tmp_path / "one")
    ids = [np.arange(0, 5), np.arange(5, 12), np.arange(12, 15)]
    loss_k, nll_k, tokens_k = accumulated.train_step(accumulated.prepare(ids))
    loss_1, nll_1, tokens_1 = union.train_step(union.prepare([np.concatenate(ids)]))
    assert tokens_k == tokens_1 == sum(len(data.targets[i]) + 1 for i in range(15))
    assert float(loss_k) == pytest.approx(float(loss_1), rel=1e-5)
    assert float(nll_k) == pytest.approx(float(nll_1), rel=1e-5)
    for (name, a), b in zip(accumulated.model.named_parameters(), union.model.parameters()):
        assert a.grad is not None and torch.allclose(a.grad, b.grad, rtol=1e-4, atol=1e-7), name
    # and the next update of an accumulating run holds update_freq batches of the stream
    assert len(next(accumulated.updates).ids) == 3


@pytest.mark.parametrize("config", [gru_config, transformer_config], ids=["gru", "transformer"])
def test_the_logged_loss_kept_on_the_device_equals_the_per_update_losses(config, vocab, tmp_path):
    """run() sums the losses on the device and reads them every log_every updates; the rows equal the averages of
    the losses read after every update by a twin trainer (same seed, same dropout stream)."""
    data = digit_data(100, seed=7, task="copy")
    cfg = config(vocab, dropout=0.1)
    _trainer(cfg, vocab, data, tmp_path / "run").run()
    twin = _trainer(cfg, vocab, data, tmp_path / "twin")
    twin.model.train()
    steps = [twin.train_step(next(twin.updates)) for _ in range(12)]
    expected = [(sum(float(s[0]) for s in steps[i:i + 4]) / sum(s[2] for s in steps[i:i + 4]),
                 sum(float(s[1]) for s in steps[i:i + 4]) / sum(s[2] for s in steps[i:i + 4]))
                for i in range(0, 12, 4)]
    with (tmp_path / "run" / "metrics.csv").open() as f:
        logged = [(float(r["train_loss"]), float(r["train_nll"])) for r in csv.DictReader(f) if r["kind"] == "train"]
    assert len(logged) == 3
    for (loss, nll), (want_loss, want_nll) in zip(logged, expected):
        assert loss == pytest.approx(want_loss, rel=1e-5) and nll == pytest.approx(want_nll, rel=1e-5)  # csv: 6 digits

