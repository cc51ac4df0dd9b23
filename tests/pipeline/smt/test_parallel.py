from pipeline.smt.decoder import Decoder, DecoderSettings
from pipeline.smt.features import Weights
from pipeline.smt.parallel import Job, decode_all
from tests.pipeline.smt.conftest import random_sentence, random_table


def test_two_processes_give_the_same_results_in_input_order(lm, tmp_path):
    decoder = Decoder(random_table(5), lm, Weights.default(), DecoderSettings(stack_limit=20))
    sentences = [random_sentence(k, 1 + k % 6) for k in range(9)] + [[]]
    alone = decode_all(Job(decoder, sentences, nbest=3), workers=1)
    together = decode_all(Job(decoder, sentences, nbest=3, lattice_dir=tmp_path / "lat"), workers=2)
    assert [r.index for r in together] == list(range(10))
    assert [r.best.words for r in together] == [r.best.words for r in alone]
    assert [[h.words for h in r.nbest] for r in together] == [[h.words for h in r.nbest] for r in alone]
    assert sorted(p.name for p in (tmp_path / "lat").iterdir()) == sorted(f"{k}.fst" for k in range(10))
    assert all(r.lattice_states > 2 and r.lattice_arcs >= r.lattice_states - 1 for r in together)
    assert together[-1].best.words == () and together[-1].source_words == 0
