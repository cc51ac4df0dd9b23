"""Sequence-level distillation with real Luigi: the tuned PBMT translates the training source (DistillPBMT), and a
Transformer trains on those translations beside the references."""
import re

from luigi.execution_summary import LuigiStatusCode

from pipeline.io import read_lines
from tests.conftest import write_gz
from tasks import TrainNMT
from tasks.distill import DistillPBMT
from tasks.data import ApplyBPE
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_nmt_tasks import quick_configs


def distilling_configs(tmp_path, mode):
    """quick_configs with the Transformer trained on the PBMT's translations, decoded with Table 2's accelerated
    PBMT limits."""
    folder = quick_configs(tmp_path)
    path = folder / "profiles" / "tiny.toml"
    head, transformer = path.read_text().split("[nmt.transformer.training]")
    transformer = f'\ndistillation = "{mode}"\ndistillation_variant = "accelerated"' + transformer
    path.write_text(head + "[nmt.transformer.training]" + transformer)
    return folder


def test_the_pbmt_translates_the_training_source_and_the_transformer_trains_on_both(tmp_path, data_dir):
    # the synthetic corpus is so regular that the PBMT gives back its references; 30 references moved one line
    # down are pairs it cannot reproduce, so that its translations differ from some references
    train_en = data_dir / "de-en" / "train.en.gz"
    lines = list(read_lines(train_en))
    write_gz(train_en, lines[:270] + lines[-1:] + lines[270:-1])
    params = shared_params(tmp_path, data_dir, config_dir=distilling_configs(tmp_path, "pbmt+references"))
    model = TrainNMT(architecture="transformer", seed=1, **params)
    teacher = model.requires()["teacher"]
    assert isinstance(teacher, DistillPBMT) and teacher.split == "train" and teacher.variant == "accelerated"
    assert build(model).status == LuigiStatusCode.SUCCESS

    out, target = teacher.artifact_dir(), "en"
    words = [line.split() for line in read_lines(out / f"words.{target}.gz")]
    subwords = list(read_lines(out / f"bpe.{target}.gz"))
    references = [line.split() for line in read_lines(ApplyBPE(split="train", **params).requires()["words"]
                                                      .artifact_dir() / f"words.{target}.gz")]
    assert len(words) == len(subwords) == len(references) == 300
    assert [re.sub(r"@@( |$)", "", line).split() for line in subwords] == words  # the words' BPE units
    stats = teacher.signature()["stats"]
    assert stats["sentences"] == 300 and stats["identical_to_reference"] == sum(
        w == r for w, r in zip(words, references))
    assert 0 < stats["tokenized_bleu_against_references"] <= 100
    assert teacher.signature()["params"]["decoder"]["stack_limit"] == 5  # tiny's accelerated variant's limits

    new_pairs = sum(bool(w) and w != r for w, r in zip(words, references))
    assert 10 <= new_pairs < 300
    assert model.signature()["stats"]["train_pairs"] == 300 + new_pairs


def test_a_model_without_distillation_keeps_its_artifact_and_needs_no_teacher(tmp_path, data_dir):
    plain = TrainNMT(architecture="transformer", seed=1, **shared_params(tmp_path, data_dir))
    assert "teacher" not in plain.requires()
    assert "distillation" not in plain.params()["model"]["training"]
    assert "decoder_layerdrop" not in plain.params()["model"]
    distilled = TrainNMT(architecture="transformer", seed=1,
                         **shared_params(tmp_path, data_dir, config_dir=distilling_configs(tmp_path / "d", "pbmt")))
    assert distilled.params()["model"]["training"]["distillation"] == "pbmt"
    assert distilled.artifact_dir() != plain.artifact_dir()
