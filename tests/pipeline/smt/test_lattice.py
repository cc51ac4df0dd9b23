import re

import numpy as np
import pynini
import pytest

from pipeline.smt.decoder import Decoder, DecoderSettings, SearchGraph
from pipeline.smt.features import FEATURES, Weights
from pipeline.smt.lattice import format_nbest, nbest, one_best, parse_nbest, paths, sorted_scores, to_fst
from tests.pipeline.smt.conftest import derivation_score, random_sentence, random_table, random_weights

FLOAT32 = 1e-3  # lattice weights are float32


def derivations(graph: SearchGraph) -> list[list[int]]:
    """Every start-to-end path of the search graph (arc ids)."""
    out = {0: [[]]}
    for a, (u, v, *_rest) in enumerate(graph.arcs):  # topological order
        out.setdefault(v, []).extend(p + [a] for p in out.get(u, []))
    return out.get(graph.end, [])


@pytest.fixture(params=[0, 1, 2])
def decoded(request, lm):
    seed = request.param
    table, weights, words = random_table(seed, multi_word=8), random_weights(seed), random_sentence(seed, 6)
    settings = DecoderSettings(stack_limit=4, beam_threshold=1e-3, distortion_limit=3)
    graph = Decoder(table, lm, weights, settings).decode(words)
    return table, weights, words, graph


def test_every_lattice_path_scores_what_the_features_say(lm, decoded):
    table, weights, words, graph = decoded
    recomputed = []
    for path in derivations(graph):
        steps = [(*graph.spans[graph.arcs[a][2]], graph.targets[graph.arcs[a][2]]) for a in path]
        target, score = derivation_score(table, lm, weights, words, steps)  # from the table and KenLM alone
        assert score == pytest.approx(sum(graph.arc_scores[a] for a in path), abs=1e-4)
        recomputed.append((target, -score))
    lattice = paths(to_fst(graph))
    assert len(lattice) == len(recomputed) > 1
    assert len(graph.arcs) > graph.num_states - 1  # recombination kept the losing arcs (not a tree)
    for (t1, c1), (t2, c2) in zip(sorted(lattice), sorted(recomputed)):
        assert t1 == t2 and c1 == pytest.approx(c2, abs=FLOAT32)


def test_path_features_are_the_arc_features_summed_in_order(decoded):
    graph = decoded[3]
    for path in derivations(graph):
        expected = np.zeros_like(graph.arc_features(path[0]))
        for a in path:
            expected += graph.arc_features(a)
        assert np.array_equal(graph.features(path), expected)  # bit for bit: the n-best lists MERT reads
    assert np.array_equal(graph.features([]), np.zeros_like(expected))


def test_one_best_is_the_shortest_path(decoded):
    _, weights, _, graph = decoded
    fst = to_fst(graph)
    shortest = pynini.shortestpath(fst)
    (words, cost), = paths(shortest)
    best = one_best(graph)
    assert words == best.words
    assert cost == pytest.approx(-graph.best_score, abs=FLOAT32)
    assert weights.score(best.features) == pytest.approx(graph.best_score)


def test_lattice_shape_and_symbols(decoded):
    fst = to_fst(decoded[3])
    symbols = fst.input_symbols()
    assert [symbols.find(k) for k in range(3)] == ["<eps>", "<s>", "</s>"]
    assert fst.output_symbols().num_symbols() == symbols.num_symbols()
    assert fst.arc_type() == "standard" and fst.properties(pynini.ACCEPTOR, True) == pynini.ACCEPTOR
    finals = [s for s in fst.states() if fst.final(s) != pynini.Weight.zero("tropical")]
    assert len(finals) == 1 and float(fst.final(finals[0])) == 0.0
    it = fst.paths(output_token_type=symbols)
    for string in it.ostrings():
        tokens = string.split()
        assert tokens[0] == "<s>" and tokens[-1] == "</s>" and len(tokens) > 2
        assert "<s>" not in tokens[1:] and "</s>" not in tokens[:-1]


def test_nbest_lists_are_sorted_moses_lines(decoded):
    _, weights, _, graph = decoded
    everything = derivations(graph)
    hyps = nbest(graph, 10 ** 6)
    assert len(hyps) == len(everything) and sorted_scores(hyps)
    assert hyps[0].words == one_best(graph).words
    assert all(weights.score(h.features) == pytest.approx(h.score) for h in hyps)
    every_score = sorted(sum(graph.arc_scores[a] for a in p) for p in everything)
    assert sorted(h.score for h in hyps) == pytest.approx(every_score)
    top = nbest(graph, 5)
    assert [h.words for h in top] == [h.words for h in hyps[:5]]
    lines = format_nbest(7, top)
    pattern = re.compile(r"^7 \|\|\| [^|]+ \|\|\| LM0= \S+ Distortion0= \S+ WordPenalty0= \S+ PhrasePenalty0= \S+ "
                         r"TranslationModel0= \S+ \S+ \S+ \S+ UnknownWordPenalty0= \S+ \|\|\| -?[\d.e+-]+$")
    assert all(pattern.match(line) for line in lines), lines
    back = parse_nbest(lines)[7]
    assert [h.words for h in back] == [h.words for h in top]
    np.testing.assert_allclose([h.features for h in back], [h.features for h in top], rtol=1e-5, atol=1e-5)


def test_distinct_nbest_has_no_duplicate_strings(decoded):
    graph = decoded[3]
    hyps = nbest(graph, 20, distinct=True)
    assert len({h.words for h in hyps}) == len(hyps) and sorted_scores(hyps)


def test_the_empty_sentence_and_the_pass_through_have_a_path(lm):
    decoder = Decoder(random_table(0), lm, Weights.default())
    (words, cost), = paths(to_fst(decoder.decode([])))
    assert words == () and cost == pytest.approx(-decoder.decode([]).best_score, abs=FLOAT32)
    graph = decoder._single_path(["a", "b"], ["a", "b"], np.zeros(len(FEATURES)), {})
    (words, _), = paths(to_fst(graph))
    assert words == ("a", "b")
