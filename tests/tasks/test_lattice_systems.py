"""Lattice rescoring (FNMT-lat ... LTNMT-lat) and lattice MBR as Luigi stages on a small de-en corpus."""
from __future__ import annotations


from luigi.execution_summary import LuigiStatusCode

from lattices.acceptor import Acceptor
from lattices.lmatrix import LMatrixStore
from lattices.mbr import lattice_mbr
from pipeline.io import read_lines
from pipeline.vocab import Vocabulary
from tasks import BuildLMatrix, BuildVocab
from tasks.decode import DecodeFNMTLattice, DecodeLNMTLattice, DecodeTNMTLattice
from tasks.lattices import BuildAcceptors
from tasks.mbr import DecodeLatticeMBR
from tasks.systems import comparisons, translation_task
from tests.conftest import write_deen_folder
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_decode_tasks import untuned_configs


def test_lattice_systems_stay_in_the_lattice_and_mbr_is_the_exact_argmax(tmp_path):
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    params = shared_params(tmp_path, data, config_dir=untuned_configs(tmp_path))
    systems = {name: translation_task(name)(split="newstest2016", **params)
               for name in ("FNMT-lat", "LNMT-lat", "TNMT-lat", "MBR")}
    assert [type(t) for t in systems.values()] == [DecodeFNMTLattice, DecodeLNMTLattice, DecodeTNMTLattice,
                                                   DecodeLatticeMBR]
    assert build(*systems.values()).status == LuigiStatusCode.SUCCESS
    acceptors_task = BuildAcceptors(split="newstest2016", **params)
    acceptors = acceptors_task.acceptors()
    assert sorted(acceptors) == list(range(12)) and acceptors_task.signature()["stats"]["empty"] == []
    vocab = Vocabulary.load(BuildVocab(**params).artifact_dir() / "vocab.en.json")
    for name in ("FNMT-lat", "LNMT-lat", "TNMT-lat"):
        task = systems[name]
        stats = task.signature()["stats"]
        subwords = list(read_lines(task.artifact_dir() / "bpe.en"))
        for line, pieces in enumerate(subwords):
            if line + 1 not in stats["unconstrained_lines"]:
                assert acceptors[line].accepts(vocab.encode(pieces.split())), (name, line, pieces)
        assert len(stats["unconstrained_lines"]) <= 2  # only sentences whose lattice strings exceed the length limit
    # MBR: each output is the exact argmax over the sentence's evidence space
    store = LMatrixStore(sorted(BuildLMatrix(split="newstest2016", **params).artifact_dir().glob("shard-*.npz")))
    mbr = list(read_lines(systems["MBR"].artifact_dir() / "bpe.en"))
    for line in range(12):
        best = lattice_mbr(acceptors[line], store.get([line])[0], vocab.bos_id, vocab.eos_id)
        assert mbr[line].split() == vocab.decode(list(best.tokens))
    assert systems["MBR"].signature()["stats"]["pbmt_fallback_lines"] == []
    assert isinstance(acceptors[0], Acceptor)


def test_every_hybrid_is_compared_with_pbmt_and_its_nmt_system():
    assert comparisons(["PBMT", "FNMT", "LNMT", "TNMT", "LTNMT", "FNMT-lat", "MBR"]) == {
        "PBMT": ["LNMT", "LTNMT", "FNMT-lat", "MBR"], "FNMT": ["LNMT", "FNMT-lat"], "TNMT": ["LTNMT"]}
    assert comparisons(["FNMT", "TNMT"]) == {}
