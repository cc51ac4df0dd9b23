"""Anchored LMBR search (pipeline/decode/anchored.py): the free and the lattice copy of each sentence in one run."""
from __future__ import annotations

import random

import pytest
import torch

from lattices.acceptor import Acceptor
from pipeline.decode import SearchSettings, decode_sources
from pipeline.decode.anchored import COPIES, anchored_hooks, best_of_copies
from pipeline.decode.constraints import acceptor_hook_factory
from pipeline.decode.finalize import Hypothesis
from pipeline.decode.hooks import chain_factories
from pipeline.decode.lmbr_hook import lmbr_hook_factory
from pipeline.decode.translate import Translation
from tests.pipeline.decode.helpers import BOS, EOS, PrefixModel
from tests.pipeline.decode.test_beam_search import random_sources
from tests.pipeline.decode.test_constraints import VOCAB, limits_of, random_strings
from tests.pipeline.decode.test_lmbr_hook import Store, chain_lattice, matrices_for, random_lattice

torch.set_num_threads(1)


def as_translation(results) -> Translation:
    """A Translation of decode_sources' n-best lists (texts: the token ids written out)."""
    texts = [" ".join(map(str, hyps[0].tokens)) if hyps else "" for hyps in results]
    return Translation(texts, texts, results, [[t] for t in texts], [[t] for t in texts])


def hyp(score: float, tokens=(3,)) -> Hypothesis:
    return Hypothesis(tuple(tokens), score, score)


@pytest.mark.parametrize("seed", range(4))
def test_each_line_takes_the_higher_scoring_of_its_free_and_its_lattice_search(seed):
    anchored_run(seed)


def test_a_greedy_free_search_loses_lines_to_the_lattice_copy():
    """Over a few random setups, some lines score higher inside their lattice than the free greedy search does."""
    assert sum(anchored_run(seed) for seed in range(4, 8)) > 0


def anchored_run(seed: int) -> int:
    """Checks that the copies decode as the free LMBR search and the lattice-constrained one would alone, and that each
    line's output is the one of the two with the higher score (never below the free search's); returns the number of
    lines the lattice copy won."""
    rng = random.Random(seed)
    n = 8
    model = PrefixModel(vocab=VOCAB, seed=seed, eos_bias=-1.0)
    sources = random_sources(n, seed, vocab=9, longest=6)
    store = Store(matrices_for([random_lattice(rng) for _ in range(n)]))
    acceptors = [Acceptor.from_strings(random_strings(rng, 6, longest=5)) for _ in range(n)]
    settings = SearchSettings(beam=1, weight=0.3, max_length_a=0.0, max_length_b=5)
    limits = limits_of(sources, settings)

    def lmbr(ids):
        return lmbr_hook_factory(store, BOS, sentence_ids=ids, gains="bounded")

    free = decode_sources(model, sources, settings, batch_sentences=3, hook_factory=lmbr(list(range(n))))
    inside = decode_sources(model, sources, settings, batch_sentences=3, hook_factory=chain_factories(
        [lmbr(list(range(n))), acceptor_hook_factory(acceptors, limits, EOS)]))
    both = decode_sources(model, sources * COPIES, settings, batch_sentences=3,
                          hook_factory=anchored_hooks(lmbr, list(range(n)), acceptors, limits, EOS))
    assert [h[0].tokens for h in both] == [h[0].tokens for h in free + inside]  # the copies: as alone
    best, from_lattice = best_of_copies(as_translation(both), n)
    for i in range(n):
        winner = inside if free[i][0].score < inside[i][0].score else free
        assert best.nbest[i][0].tokens == winner[i][0].tokens
        assert best.nbest[i][0].score >= free[i][0].score
        assert (i in from_lattice) == (winner is inside)
        if i in from_lattice:
            assert acceptors[i].accepts(best.nbest[i][0].tokens)
    assert best.stats == {"sentences": n, "decoded_sentences": 0, "source_words": 0, "words_per_minute": 0.0,
                          "target_words": sum(len(t.split()) for t in best.bpe), "backoff_sentences": 0}
    return sum(best.nbest[i][0].score > free[i][0].score for i in from_lattice)


def test_ties_keep_the_free_copy_and_a_copy_without_hypotheses_never_wins():
    free = [[hyp(-1.0, (3,))], [], [hyp(-2.0, (3,))]]
    lattice = [[hyp(-1.0, (4,))], [hyp(-5.0, (4,))], []]
    best, from_lattice = best_of_copies(as_translation(free + lattice), 3)
    assert [h[0].tokens for h in best.nbest] == [(3,), (4,), (3,)] and from_lattice == [1]


def test_a_translation_that_is_not_two_copies_is_refused():
    with pytest.raises(ValueError, match="3 translated lines are not 2 copies of 2 lines"):
        best_of_copies(as_translation([[hyp(0.0)]] * 3), 2)


def test_unequal_sentences_acceptors_and_limits_are_refused():
    with pytest.raises(ValueError, match="2 sentences but 1 acceptors and 2 limits"):
        anchored_hooks(lambda ids: None, [0, 1], [None], [3, 3], EOS)
