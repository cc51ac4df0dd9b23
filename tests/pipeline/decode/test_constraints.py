"""Constrained search (pipeline/decode/constraints.py): hypotheses stay on their sentence's acceptor."""
from __future__ import annotations

import random

import pytest
import torch

from lattices.acceptor import Acceptor
from pipeline.decode import SearchSettings, decode_sources
from pipeline.decode.constraints import acceptor_hook_factory
from pipeline.decode.hooks import ChainHook
from pipeline.decode.lmbr_hook import lmbr_hook_factory
from pipeline.decode.scores import max_output_lengths
from tests.pipeline.decode.helpers import BOS, EOS, PrefixModel, exhaustive
from tests.pipeline.decode.test_beam_search import random_sources
from tests.pipeline.decode.test_lmbr_hook import THETA, Store, matrices_for, random_lattice, slow_bonus
from lattices.posteriors import ngram_posteriors

torch.set_num_threads(1)
VOCAB = 6


def limits_of(sources, settings):
    lengths = torch.tensor([len(s) for s in sources])
    return max_output_lengths(lengths, settings.max_length_a, settings.max_length_b).tolist()


def random_strings(rng: random.Random, count: int, longest: int = 4) -> list[tuple[int, ...]]:
    return sorted({tuple(rng.randint(3, 5) for _ in range(rng.randint(0, longest))) for _ in range(count)})


def tokens_of(results):
    return [[h.tokens for h in hyps] for hyps in results]


def test_a_one_path_acceptor_forces_exactly_that_path():
    model = PrefixModel(vocab=VOCAB, seed=1)
    paths = [(4, 3, 5), (5,), (3, 3, 4, 4), ()]
    sources = random_sources(4, seed=1, vocab=9)
    settings = SearchSettings(beam=3, nbest=3, max_length_a=0.0, max_length_b=6)
    factory = acceptor_hook_factory([Acceptor.from_strings([p]) for p in paths], limits_of(sources, settings), EOS)
    got = decode_sources(model, sources, settings, batch_sentences=2, hook_factory=factory)
    assert [[h.tokens for h in hyps] for hyps in got] == [[p] for p in paths]  # nothing else is accepted


@pytest.mark.parametrize("seed", range(3))
def test_the_constrained_best_is_the_best_accepted_string_by_exhaustive_search(seed):
    model, limit = PrefixModel(vocab=VOCAB, seed=seed), 4
    rng = random.Random(seed)
    sources = random_sources(3, seed, vocab=9)
    accepted = [random_strings(rng, 6) for _ in sources]
    wide = VOCAB ** limit
    settings = SearchSettings(beam=wide, nbest=wide, max_length_a=0.0, max_length_b=limit)
    factory = acceptor_hook_factory([Acceptor.from_strings(a) for a in accepted], limits_of(sources, settings), EOS)
    got = decode_sources(model, sources, settings, batch_sentences=2, hook_factory=factory)
    for source, strings, hyps in zip(sources, accepted, got):
        truth = [(score, p) for score, p in exhaustive(model.scorer(source), VOCAB, limit) if p in strings]
        assert [h.tokens for h in hyps] == [p for _, p in truth]
        assert [h.score for h in hyps] == pytest.approx([s for s, _ in truth], abs=1e-4)


def test_constrained_outputs_are_the_same_alone_in_batches_sorted_and_streaming():
    model = PrefixModel(vocab=VOCAB, seed=4, eos_bias=-1.0)
    rng = random.Random(2)
    sources = random_sources(14, seed=6, vocab=9, longest=7)
    settings = SearchSettings(beam=3, nbest=2, max_length_a=0.5, max_length_b=4)
    acceptors = [Acceptor.from_strings(random_strings(rng, 5, longest=5)) if k % 4 else None for k in range(14)]
    factory = acceptor_hook_factory(acceptors, limits_of(sources, settings), EOS)
    runs = [decode_sources(model, sources, settings, batch_sentences=b, sort=s, hook_factory=factory)
            for b in (1, 5, 14) for s in (True, False)]
    runs += [decode_sources(model, sources, settings, batch_sentences=4, sort=s, hook_factory=factory,
                            streaming=True, refill=0.5) for s in (True, False)]
    assert all(tokens_of(run) == tokens_of(runs[0]) for run in runs)
    for acceptor, hyps in zip(acceptors, runs[0]):
        assert acceptor is None or all(acceptor.accepts(h.tokens) for h in hyps)


def test_composed_with_lmbr_a_hypothesis_scores_the_sum_of_both_hooks():
    """ChainHook(LMBR, acceptor): the exhaustive best of lambda log P + L over the accepted strings."""
    model, limit, seed = PrefixModel(vocab=VOCAB, seed=3), 3, 3
    rng = random.Random(seed)
    lattices = [random_lattice(rng) for _ in range(3)]
    sources = random_sources(3, seed, vocab=9)
    accepted = [random_strings(rng, 7, longest=3) for _ in sources]
    wide = VOCAB ** limit
    settings = SearchSettings(beam=wide, nbest=wide, weight=0.5, max_length_a=0.0, max_length_b=limit)
    lmbr = lmbr_hook_factory(Store(matrices_for(lattices)), BOS)
    constrain = acceptor_hook_factory([Acceptor.from_strings(a) for a in accepted], limits_of(sources, settings),
                                      EOS)
    both = decode_sources(model, sources, settings, batch_sentences=2,
                          hook_factory=lambda ids, device: ChainHook([lmbr(ids, device), constrain(ids, device)]))
    for i, (source, hyps) in enumerate(zip(sources, both)):
        posteriors = ngram_posteriors(lattices[i], 4, 1.0, "tropical").as_dict()
        scorer = model.scorer(source)
        truth = [(s, p) for s, p in exhaustive(lambda p: [0.5 * x for x in scorer(p)], VOCAB, limit,
                                               slow_bonus(posteriors, THETA)) if p in accepted[i]]
        assert [h.tokens for h in hyps] == [p for _, p in truth]
        assert [h.score for h in hyps] == pytest.approx([s for s, _ in truth], abs=1e-4)


def test_sentences_without_a_usable_acceptor_are_decoded_unconstrained_with_a_warning():
    model = PrefixModel(vocab=VOCAB, seed=5)
    sources = random_sources(4, seed=2, vocab=9)
    settings = SearchSettings(beam=2, max_length_a=0.0, max_length_b=3)
    acceptors = [Acceptor.from_strings([(4, 4, 4, 4, 4)]),  # 5 tokens: past the limit of 3
                 Acceptor.empty(),                           # a lattice with no complete path
                 None,                                       # no lattice at all
                 Acceptor.from_strings([(3, 4)])]
    warnings = []
    factory = acceptor_hook_factory(acceptors, limits_of(sources, settings), EOS,
                                    warn=lambda index, reason: warnings.append((index, reason)))
    got = decode_sources(model, sources, settings, batch_sentences=4, hook_factory=factory)
    free = decode_sources(model, sources, settings, batch_sentences=4)
    assert tokens_of(got)[:3] == tokens_of(free)[:3] and got[3][0].tokens == (3, 4)
    assert [index for index, _ in warnings] == [0, 1]
    assert "5 tokens, more than the limit of 3" in warnings[0][1] and "accepts nothing" in warnings[1][1]


def test_paths_that_could_not_end_within_the_limit_are_never_started():
    """A long accepted string whose end is past the limit: the search takes the short one, never a dead end."""
    model = PrefixModel(vocab=VOCAB, seed=0, eos_bias=-5.0)  # the model hates EOS: it would run long
    sources = [[4, 4, EOS]]
    first = model.scorer(sources[0])(())
    favourite, other = sorted((3, 4), key=lambda y: -first[y])  # a greedy search would start the long string
    settings = SearchSettings(beam=1, max_length_a=0.0, max_length_b=3)
    acceptor = Acceptor.from_strings([(favourite,) * 6, (other, 5)])
    got = decode_sources(model, sources, settings, hook_factory=acceptor_hook_factory([acceptor], [3], EOS))
    assert [h.tokens for h in got[0]] == [(other, 5)] and not got[0][0].backoff


def weighted_acceptor(rng: random.Random, strings: list[tuple[int, ...]]) -> tuple[Acceptor, dict]:
    """A lattice acceptor of these strings with random costs, and each string's cost over the best one."""
    from lattices.acceptor import acceptor_of_lattice
    from lattices.lattice import Lattice

    arcs, costs, n = [], {}, 1
    for string in strings:
        prev, total = 0, 0.0
        for x in (*string, EOS):
            cost = round(rng.uniform(0.0, 2.0), 3)
            arcs.append((prev, n, x, cost))
            prev, n, total = n, n + 1, total + cost
        costs[string] = min(costs.get(string, float("inf")), total)
    finals = {q: 0.0 for _, q, x, _ in arcs if x == EOS}
    best = min(costs.values())
    acceptor = acceptor_of_lattice(Lattice.from_arcs(n, 0, arcs, finals), BOS, EOS, engine="exact")
    return acceptor, {s: c - best for s, c in costs.items()}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weight", [0.5, 3.0])
def test_with_a_weight_the_best_is_the_exhaustive_best_of_nmt_minus_weight_times_the_lattice_cost(seed, weight):
    model, limit = PrefixModel(vocab=VOCAB, seed=seed), 4
    rng = random.Random(10 + seed)
    sources = random_sources(3, seed, vocab=9)
    pairs = [weighted_acceptor(rng, [s for s in random_strings(rng, 6) if s] or [(3,)]) for _ in sources]
    wide = VOCAB ** limit
    settings = SearchSettings(beam=wide, nbest=wide, max_length_a=0.0, max_length_b=limit)
    factory = acceptor_hook_factory([a for a, _ in pairs], limits_of(sources, settings), EOS, weight=weight)
    got = decode_sources(model, sources, settings, batch_sentences=2, hook_factory=factory)
    for source, (acceptor, costs), hyps in zip(sources, pairs, got):
        truth = sorted(((score - weight * costs[p], p) for score, p in exhaustive(model.scorer(source), VOCAB, limit)
                        if p in costs), key=lambda e: -e[0])
        assert [h.tokens for h in hyps] == [p for _, p in truth]
        assert [h.score for h in hyps] == pytest.approx([s for s, _ in truth], abs=1e-4)


def test_a_heavy_weight_makes_a_greedy_search_follow_the_lattices_best_string():
    """Pushed costs: a prefix pays what its best completion loses, so beam 1 finds the lattice's best string."""
    model = PrefixModel(vocab=VOCAB, seed=7)
    rng = random.Random(4)
    sources = random_sources(6, seed=3, vocab=9)
    pairs = [weighted_acceptor(rng, [s for s in random_strings(rng, 6, longest=5) if s] or [(4,)]) for _ in sources]
    settings = SearchSettings(beam=1, max_length_a=0.0, max_length_b=6)
    factory = acceptor_hook_factory([a for a, _ in pairs], limits_of(sources, settings), EOS, weight=1e3)
    got = decode_sources(model, sources, settings, batch_sentences=3, hook_factory=factory)
    for (_, costs), hyps in zip(pairs, got):
        assert costs[hyps[0].tokens] == 0.0
