"""Real Luigi (local scheduler) on the small de-en corpus: train GRU and Transformer models for a few seconds,
resume a killed training run, average checkpoints, define the FNMT/TNMT systems, export to CTranslate2."""
import re
import shutil

import pytest
import torch
from luigi.execution_summary import LuigiStatusCode

import tasks.nmt
from tasks.reproduce import wall_clock_stops
from pipeline.config import CONFIG_DIR
from pipeline.nmt.checkpoint import list_checkpoints, load_checkpoint, load_vocabularies
from pipeline.nmt.system import load_system
from pipeline.vocab import Vocabulary
from tasks import AverageCheckpoints, NMTSystem, TrainNMT
from tests.tasks.helpers import artifacts, build, shared_params

torch.set_num_threads(1)


def quick_configs(tmp_path):
    """The tiny profile with training cut to seconds: GRUs stop after 20 updates (their wall-clock guard stays the
    profile's, so that a busy machine cannot stop them first), the Transformer after 2 s."""
    folder = tmp_path / "configs"
    shutil.copytree(CONFIG_DIR, folder)
    path = folder / "profiles" / "tiny.toml"
    head, nmt = path.read_text().split("[nmt.gru]")
    for key, value in (("checkpoint_every", "5"), ("valid_sentences", "20"), ("max_tokens", "400")):
        nmt = re.sub(rf"^{key} = .*$", f"{key} = {value}", nmt, flags=re.M)
    gru, transformer = nmt.split("[nmt.transformer]")
    gru = re.sub(r"^max_updates = .*$", "max_updates = 20", gru, flags=re.M)
    transformer = re.sub(r"^budget_seconds = .*$", "budget_seconds = 2", transformer, flags=re.M)
    path.write_text(head + "[nmt.gru]" + gru + "[nmt.transformer]" + transformer)
    return folder


class Killed(Exception):
    pass


def test_nmt_stages_train_resume_average_and_define_the_systems(tmp_path, data_dir, monkeypatch):
    params = shared_params(tmp_path, data_dir, config_dir=quick_configs(tmp_path))
    params["processes"] = 1
    first = TrainNMT(architecture="gru", seed=1, **params)

    def kill_at_12(*args, **options):  # the run dies after update 12; its checkpoint of update 10 survives
        def hook(update):
            if update == 12:
                raise Killed()
        return run_job(*args, **options, after_update=hook)
    run_job = tasks.nmt.run_job
    monkeypatch.setattr(tasks.nmt, "run_job", kill_at_12)
    assert build(first).status == LuigiStatusCode.FAILED
    assert not first.complete() and [p.name for p in list_checkpoints(first.state_dir())] == [
        "checkpoint-00000005.pt", "checkpoint-00000010.pt"]
    monkeypatch.undo()

    fnmt = NMTSystem(system="FNMT", **params)
    tnmt = NMTSystem(system="TNMT", **params)
    assert build(fnmt, tnmt).status == LuigiStatusCode.SUCCESS
    stats = first.signature()["stats"]
    assert stats["resumed_from"] == 10 and stats["updates"] == 20 and stats["stop_reason"] == "max_updates"
    assert not first.state_dir().exists()  # the resumable state goes once the artifact is in place
    assert 0 <= stats["validation"]["valid_bleu"] <= 100 and stats["validation"]["valid_loss"] > 0
    checkpoints = list_checkpoints(first.artifact_dir() / "checkpoints")
    assert [p.name for p in checkpoints] == ["checkpoint-00000010.pt", "checkpoint-00000015.pt",
                                             "checkpoint-00000020.pt"]  # keep_checkpoints = 3
    ckpt = load_checkpoint(checkpoints[-1])
    assert ckpt.training is None and ckpt.meta["update"] == 20
    src_vocab, tgt_vocab = load_vocabularies(ckpt)
    assert tgt_vocab == Vocabulary.load(first.artifact_dir() / "vocab.en.json") and "the" in tgt_vocab
    assert (first.artifact_dir() / "metrics.csv").read_text().count("\nvalid,") == 4

    transformer = TrainNMT(architecture="transformer", seed=1, **params)
    t_stats = transformer.signature()["stats"]
    assert t_stats["stop_reason"] == "budget" and t_stats["target_tokens_per_second"] > 0
    # reproduce-table warns of the model its wall-clock guard stopped (the GRUs stopped after max_updates)
    planned = transformer.arch_profile().training.max_updates
    assert wall_clock_stops([fnmt, tnmt]) == [
        f"ger-eng transformer seed 1: cut at update {t_stats['updates']} of {planned} by the cap of 2 s "
        f"({t_stats['updates']} updates in {t_stats['train_seconds']} s), tuning BLEU (greedy) "
        f"{t_stats['validation']['valid_bleu']:.2f} at the cut"]
    averaged = AverageCheckpoints(architecture="transformer", seed=1, **params)
    kept = [p.name for p in list_checkpoints(transformer.artifact_dir() / "checkpoints")]
    assert averaged.signature()["stats"]["averaged"] == kept[-5:]

    ensemble, _, _ = load_system(fnmt.artifact_dir() / "system.json")
    assert len(ensemble) == 2 and {m.config.architecture for m in ensemble.models} == {"gru"}
    single, _, vocab = load_system(tnmt.artifact_dir() / "system.json")
    assert len(single) == 1 and single.tgt_vocab_size == len(vocab)

    before = artifacts(tmp_path / "work")
    assert build(fnmt, tnmt).status == LuigiStatusCode.SUCCESS
    assert artifacts(tmp_path / "work") == before  # complete: nothing retrained


def test_a_transformer_exports_to_ctranslate2(tmp_path, data_dir):
    pytest.importorskip("ctranslate2")
    params = shared_params(tmp_path, data_dir, config_dir=quick_configs(tmp_path))
    export = tasks.nmt.ExportCTranslate2(architecture="transformer", seed=1, **params)
    assert build(export).status == LuigiStatusCode.SUCCESS
    assert "model.bin" in export.signature()["stats"]["files"]


def test_a_task_config_replaces_the_nmt_settings_of_one_architecture(tmp_path, data_dir):
    """[nmt.<profile>.<arch>] in the task config: the model trains with the task's settings, under another id; the
    other architecture keeps the profile's settings and its id."""
    plain = shared_params(tmp_path, data_dir, config_dir=quick_configs(tmp_path / "plain"))
    folder = quick_configs(tmp_path / "replaced")
    task_file = folder / "tasks" / f"{plain['task_name']}.toml"
    task_file.write_text(task_file.read_text() + "\n[nmt.tiny.gru.training]\nmax_updates = 8\n")
    replaced = shared_params(tmp_path, data_dir, config_dir=folder)
    task = TrainNMT(architecture="gru", seed=1, **replaced)
    assert build(task).status == LuigiStatusCode.SUCCESS
    assert task.signature()["stats"]["updates"] == 8
    assert [p.name for p in list_checkpoints(task.artifact_dir() / "checkpoints")][-1] == "checkpoint-00000008.pt"
    assert task.artifact_dir() != TrainNMT(architecture="gru", seed=1, **plain).artifact_dir()
    assert (TrainNMT(architecture="transformer", seed=1, **replaced).artifact_dir()
            == TrainNMT(architecture="transformer", seed=1, **plain).artifact_dir())


def test_a_profile_with_two_ranks_trains_data_parallel_under_torchrun(tmp_path, data_dir):
    """`ranks = 2` in the profile: TrainNMT launches torchrun with two gloo ranks, which write the same artifact
    layout; the ranks stay out of the artifact's hash (they change the order of a sum, not the model)."""
    folder = quick_configs(tmp_path)
    path = folder / "profiles" / "tiny.toml"
    head, rest = path.read_text().split("[nmt.gru.training]")
    path.write_text(head + "[nmt.gru.training]\nranks = 2" + rest)
    params = shared_params(tmp_path, data_dir, config_dir=folder)
    params["processes"] = 2
    task = TrainNMT(architecture="gru", seed=1, **params)
    assert build(task).status == LuigiStatusCode.SUCCESS
    stats = task.signature()["stats"]
    assert stats["ranks"] == 2 and stats["updates"] == 20 and stats["precision"] == "fp32"
    assert stats["validation"]["valid_loss"] > 0 and stats["train_pairs"] > 0
    assert [p.name for p in list_checkpoints(task.artifact_dir() / "checkpoints")][-1] == "checkpoint-00000020.pt"
    one_rank = TrainNMT(architecture="gru", seed=1, **shared_params(tmp_path, data_dir,
                                                                     config_dir=quick_configs(tmp_path / "one")))
    assert one_rank.artifact_dir().name == task.artifact_dir().name


def test_the_report_reads_each_model_s_learning_curve(tmp_path, data_dir):
    """TaskReport.learning_curves: the tuning-set points of every model behind the chosen systems, by update."""
    from tasks.report import TaskReport

    params = shared_params(tmp_path, data_dir, config_dir=quick_configs(tmp_path))
    params["processes"] = 1
    assert build(NMTSystem(system="FNMT", **params)).status == LuigiStatusCode.SUCCESS
    curves = TaskReport(systems=("PBMT", "LNMT"), **params).learning_curves()
    assert sorted(curves) == ["ger-eng FNMT gru seed 1", "ger-eng FNMT gru seed 2"]
    for curve in curves.values():
        assert [p["update"] for p in curve] == [5, 10, 15, 20]
        assert all(0 <= p["valid_bleu"] <= 100 and p["valid_loss"] > 0 and p["minutes"] >= 0 for p in curve)
    assert TaskReport(systems=("PBMT",), **params).learning_curves() == {}
