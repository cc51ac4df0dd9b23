import math

import numpy as np
import pytest

from pipeline.smt.decoder import Decoder, DecoderSettings
from pipeline.smt.features import INDEX, LM, LN10, Weights
from pipeline.smt.lattice import one_best
from tests.pipeline.smt.conftest import brute_force, derivation_score, random_sentence, random_table, random_weights

TOL = 1e-4  # KenLM sums a sentence's log10 scores in float32
EXACT = dict(stack_limit=10 ** 6, beam_threshold=0.0, options_per_phrase=0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("distortion_limit", [0, 2, 3, -1])  # 1 is monotone too (Moses' rule)
def test_large_stacks_find_the_brute_force_best(lm, seed, distortion_limit):
    table, weights = random_table(seed), random_weights(seed)
    words = random_sentence(seed, 5)
    everything = brute_force(table, lm, weights, words, distortion_limit)
    best_score, best_target = max(everything)
    graph = Decoder(table, lm, weights, DecoderSettings(distortion_limit=distortion_limit, **EXACT)).decode(words)
    hyp = one_best(graph)
    assert graph.best_score == pytest.approx(best_score, abs=TOL)
    assert hyp.words == best_target
    assert weights.score(hyp.features) == pytest.approx(best_score, abs=TOL)


def test_search_space_grows_with_the_distortion_limit(lm):
    table, weights, words = random_table(1), random_weights(1), random_sentence(1, 5)
    sizes = [len(brute_force(table, lm, weights, words, d)) for d in (0, 1, 2, 3, -1)]
    assert sizes == sorted(sizes) and sizes[0] == sizes[1] < sizes[2] < sizes[-1]


def test_small_stacks_never_beat_the_exact_search(lm):
    for seed in range(4):
        table, weights, words = random_table(seed), random_weights(seed), random_sentence(seed, 6)
        exact = Decoder(table, lm, weights, DecoderSettings(distortion_limit=3, **EXACT)).decode(words).best_score
        small = Decoder(table, lm, weights, DecoderSettings(stack_limit=2, beam_threshold=1e-2,
                                                            distortion_limit=3)).decode(words)
        assert small.best_score <= exact + 1e-9
        target, score = derivation_score(table, lm, weights, words, [
            (*small.spans[small.arcs[a][2]], small.targets[small.arcs[a][2]]) for a in small.best_path()])
        assert score == pytest.approx(small.best_score, abs=TOL)


def test_unknown_words_pass_through_with_a_penalty(lm):
    table, weights = random_table(2), Weights.default()
    graph = Decoder(table, lm, weights).decode(["s0", "Zürich", "s1"])
    hyp = one_best(graph)
    assert "Zürich" in hyp.words
    assert hyp.features[INDEX["unknown"]] == -1
    assert weights.score(hyp.features) == pytest.approx(graph.best_score)


def test_the_empty_sentence_scores_only_the_sentence_end(lm):
    graph = Decoder(random_table(0), lm, Weights.default()).decode([])
    hyp = one_best(graph)
    assert hyp.words == ()
    assert hyp.features[LM] == pytest.approx(lm.score("", bos=True, eos=True) * LN10)
    assert graph.best_score == pytest.approx(0.5 * hyp.features[LM])


def test_the_option_cap_keeps_the_best_options(lm):
    table, weights = random_table(3), Weights.default()
    capped = Decoder(table, lm, weights, DecoderSettings(options_per_phrase=1)).decode(["s0", "s1", "s2"])
    starts = {}
    for option, span in enumerate(capped.spans):
        starts.setdefault(span, []).append(option)
    assert all(len(v) == 1 for v in starts.values())


def test_recombination_keeps_the_losing_arcs(lm):
    table, weights, words = random_table(4, multi_word=10), random_weights(4), random_sentence(4, 6)
    graph = Decoder(table, lm, weights, DecoderSettings(distortion_limit=2, **EXACT)).decode(words)
    incoming = np.bincount([a[1] for a in graph.arcs], minlength=graph.num_states)
    assert incoming[1:].min() >= 1 and incoming.max() > 1  # some state has a winner and losers
    # the best prefix score of every state is the best over its incoming arcs
    for v in range(1, graph.num_states):
        best = max(graph.state_scores[u] + graph.arc_scores[a] for a, (u, w, *_r) in enumerate(graph.arcs) if w == v)
        assert graph.state_scores[v] == pytest.approx(best)
    assert not math.isinf(graph.best_score)


@pytest.mark.parametrize("seed", range(4))
def test_a_forced_span_takes_only_its_given_translation_and_the_search_stays_exact(lm, seed):
    """Moses' XML input, exclusive: the best equals the brute-force best over a table where the span's one option
    is the forced target and no other phrase touches its words."""
    import random

    from pipeline.smt.phrase_table import PhraseTable
    from tests.pipeline.smt.conftest import SOURCE_VOCAB

    table, weights = random_table(seed), random_weights(seed)
    words = random.Random(seed).sample(SOURCE_VOCAB, 5)  # distinct words: a phrase names one span
    forced = {(1, 2): ("forced", "term")}
    entries = {}
    for i in range(5):
        for j in range(i, min(5, i + table.max_length)):
            found = table.lookup(" ".join(words[i:j + 1]))
            if found and (j < 1 or i > 2):
                entries[" ".join(words[i:j + 1])] = [(t, list(np.exp(s))) for t, s in zip(*found)]
    entries[" ".join(words[1:3])] = [("forced term", [1.0] * 4)]
    oracle = PhraseTable.from_entries(entries, max_length=table.max_length)
    best_score, best_target = max(brute_force(oracle, lm, weights, words, 3))
    graph = Decoder(table, lm, weights, DecoderSettings(distortion_limit=3, **EXACT)).decode(words, forced)
    assert graph.best_score == pytest.approx(best_score, abs=TOL)
    assert one_best(graph).words == best_target
    for arc in graph.arcs:  # every path of the lattice: the span covered by its forced option alone
        (i, j), target = graph.spans[arc[2]], graph.targets[arc[2]]
        assert (i, j) == (1, 2) and target == ("forced", "term") or j < 1 or i > 2


def test_a_bounded_option_cache_decodes_as_an_unbounded_one_and_stays_within_its_bound(lm):
    """A server's long-lived decoder keeps scored options across sentences, at most max_cached_phrases of them."""
    table, weights = random_table(4), random_weights(4)
    sentences = [random_sentence(seed, 5) for seed in range(6)]
    settings = DecoderSettings(stack_limit=5, distortion_limit=3)
    fresh = [one_best(Decoder(table, lm, weights, settings).decode(words)).words for words in sentences]
    bounded = Decoder(table, lm, weights, settings, max_cached_phrases=4)
    sizes = []
    for words, expected in zip(sentences, fresh):
        assert one_best(bounded.decode(words)).words == expected
        sizes.append(len(bounded.options.phrases))
    assert max(sizes) <= 4 and min(sizes) > 0
    unbounded = Decoder(table, lm, weights, settings)
    for words in sentences:
        unbounded.decode(words)
    assert len(unbounded.options.phrases) > 4  # the bound was reached: the cache started again
