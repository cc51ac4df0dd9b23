"""Training: both architectures learn a synthetic task; a killed run resumes to the same parameters; checkpoints,
budget, validation and metrics."""
import csv
import math

import pytest
import torch

from pipeline.nmt.batching import source_ids
from pipeline.nmt.checkpoint import list_checkpoints, load_checkpoint
from pipeline.nmt.greedy import translate_ids
from pipeline.nmt.train import ParallelText, Trainer, Validation, label_smoothed_loss
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
