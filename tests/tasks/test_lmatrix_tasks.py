"""BuildLMatrix with real Luigi on a small de-en corpus: PBMT lattices -> posteriors -> L per sentence."""
import numpy as np
import pytest
from luigi.execution_summary import LuigiStatusCode

from lattices.lmatrix_shards import LMatrixStore
from lattices.theta import Theta
from pipeline.io import read_lines
from pipeline.text import BpeSegmenter
from pipeline.vocab import Vocabulary
from tasks import BuildLMatrix, BuildVocab, DecodePBMT, EvaluateSystem, LearnBPE
from tests.tasks.helpers import build, shared_params


def test_lmatrix_of_a_split_from_the_pbmt_lattices(tmp_path, data_dir):
    params = shared_params(tmp_path, data_dir)
    task = BuildLMatrix(split="newstest2016", **params)
    tune_pbmt = EvaluateSystem(system="PBMT", split="dev", **params)
    assert build(task, tune_pbmt).status == LuigiStatusCode.SUCCESS
    stats = task.signature()["stats"]
    assert stats["sentences"] == 30 and stats["rows"] >= 30
    assert stats["max_evidence_states"] == 100_000 and stats["pruned"] == {}  # no news lattice comes near it

    tune_bleu = tune_pbmt.signature()["stats"]["bleu"]  # theta: the PBMT's precisions on the tuning set
    expected = Theta.from_precisions(tune_bleu["precisions"], "scaled", 10.0)  # the tiny profile's convention
    assert stats["theta"]["theta"] == pytest.approx(list(expected.values))

    store = LMatrixStore(sorted(task.artifact_dir().glob("shard-*.npz")))
    assert store.sentences() == list(range(30))
    vocab = Vocabulary.load(BuildVocab(**params).artifact_dir() / "vocab.en.json")
    segmenter = BpeSegmenter(LearnBPE(**params).artifact_dir() / "codes.en")
    best = list(read_lines(DecodePBMT(split="newstest2016", **params).artifact_dir() / "words.en"))
    for k in (0, 7, 29):
        (matrix,) = store.get([k])
        empty_history = matrix.dense_rows([matrix.automaton.row_of(())])[0]
        theta0, theta1 = matrix.theta[0], matrix.theta[1]
        assert empty_history[vocab.bos_id] == pytest.approx(theta0 + theta1, abs=1e-6)  # every path starts with <s>
        for token in vocab.encode(segmenter.segment(best[k].split())):  # the 1-best is in the evidence space
            assert empty_history[token] > theta0
        unseen = np.setdiff1d(np.arange(len(vocab)), matrix.uni_tokens)
        assert np.all(empty_history[unseen] == np.float32(theta0))  # absent n-grams: Theta_0 only


def test_the_state_bound_enters_the_hash_only_when_changed(tmp_path, data_dir):
    from tests.pipeline.test_config import copy_configs

    default = BuildLMatrix(split="newstest2016", **shared_params(tmp_path, data_dir))
    same = copy_configs(tmp_path / "same")
    bounded = copy_configs(tmp_path / "bounded")
    profile = bounded / "profiles" / "tiny.toml"
    profile.write_text(profile.read_text().replace("max_evidence_states = 100000", "max_evidence_states = 500"))
    unchanged = BuildLMatrix(split="newstest2016", **shared_params(tmp_path, data_dir, same))
    changed = BuildLMatrix(split="newstest2016", **shared_params(tmp_path, data_dir, bounded))
    assert "max_evidence_states" not in default.params() and changed.params()["max_evidence_states"] == 500
    assert unchanged.artifact_dir() == default.artifact_dir() != changed.artifact_dir()
