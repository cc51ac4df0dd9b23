"""LMBR decoding: L added per step, against pure NMT, a one-path lattice and a slow per-hypothesis oracle."""
import dataclasses
import itertools
import random

import pytest
import torch

from lattices.lattice import Lattice
from lattices.lmatrix import build_lmatrix
from lattices.posteriors import ngram_posteriors
from lattices.theta import Theta
from pipeline.decode import SearchSettings, decode_sources
from pipeline.decode.hooks import token_mask_factory
from pipeline.decode.lmbr_hook import lmbr_hook_factory
from pipeline.errors import DataError
from tests.pipeline.decode.helpers import BOS, EOS, PrefixModel, exhaustive
from tests.pipeline.decode.test_beam_search import random_sources

torch.set_num_threads(1)
VOCAB = 6
THETA = Theta.from_precisions([60.0, 35.0, 21.0, 13.0], "plain")


class Store:
    def __init__(self, matrices):
        self.matrices = matrices

    def get(self, sentences):
        return [self.matrices[s] for s in sentences]


def chain_lattice(tokens) -> Lattice:
    labels = [BOS, *tokens, EOS]
    return Lattice.from_arcs(len(labels) + 1, 0, [(i, i + 1, x, 0.0) for i, x in enumerate(labels)],
                             {len(labels): 0.0})


def random_lattice(rng: random.Random) -> Lattice:
    """A few strings over tokens 3-5 with random costs, as a lattice with <s> ... </s>."""
    arcs, n = [], 1
    for _ in range(rng.randint(1, 4)):
        labels = [BOS, *(rng.randint(3, 5) for _ in range(rng.randint(0, 3))), EOS]
        prev = 0
        for k, x in enumerate(labels):
            nxt = 1 if k == len(labels) - 1 else n + 1
            n = max(n, nxt)
            arcs.append((prev, nxt, x, rng.uniform(0, 2) if k == 0 else 0.0))
            prev = nxt
    # state 1 is the single final state
    return Lattice.from_arcs(n + 1, 0, arcs, {1: 0.0})


def matrices_for(lattices, theta=THETA):
    return {i: build_lmatrix(ngram_posteriors(lat, 4, 1.0, "tropical"), theta, VOCAB, sentence=i)
            for i, lat in enumerate(lattices)}


def slow_bonus(posteriors: dict, theta: Theta):
    """L[history, y] summed from its n-grams: Theta_0 + sum_n Theta_n p(last n-1 tokens of [BOS] + prefix, y)."""
    def bonus(prefix, y):
        if y == BOS:  # never an output of LMBR decoding
            return float("-inf")
        history = (BOS, *prefix)
        total = theta.values[0]
        for n in range(1, 5):
            if n - 1 <= len(history):
                gram = (*history[len(history) - (n - 1):], y) if n > 1 else (y,)
                total += theta.values[n] * posteriors.get(gram, 0.0)
        return total
    return bonus


def test_with_l_zero_the_decoder_equals_pure_nmt_without_bos():
    model = PrefixModel(vocab=VOCAB, seed=2, eos_bias=-0.5)
    sources = random_sources(9, seed=4, vocab=9)
    zero = Theta((0.0, 0.0, 0.0, 0.0, 0.0), "plain", 0.5, 0.5, 1.0)
    store = Store(matrices_for([random_lattice(random.Random(i)) for i in range(9)], zero))
    settings = SearchSettings(beam=3, nbest=3, max_length_a=0.0, max_length_b=5)
    plain = decode_sources(model, sources, settings, batch_sentences=4, hook_factory=token_mask_factory([BOS]))
    lmbr = decode_sources(model, sources, settings, batch_sentences=4, hook_factory=lmbr_hook_factory(store, BOS))
    assert [[h.tokens for h in hs] for hs in lmbr] == [[h.tokens for h in hs] for hs in plain]
    assert [h.score for hs in lmbr for h in hs] == pytest.approx([h.score for hs in plain for h in hs])


def test_with_lambda_near_zero_a_one_path_lattice_is_reproduced():
    model = PrefixModel(vocab=VOCAB, seed=1)
    paths = [(4, 3, 5), (5,), (3, 3, 4, 4)]
    store = Store(matrices_for([chain_lattice(p) for p in paths]))
    settings = SearchSettings(beam=2, weight=1e-6, max_length_a=0.0, max_length_b=6)
    got = decode_sources(model, random_sources(3, seed=1, vocab=9), settings, batch_sentences=3,
                         hook_factory=lmbr_hook_factory(store, BOS))
    assert [hyps[0].tokens for hyps in got] == paths


def test_outputs_do_not_depend_on_batching_or_sorting():
    model = PrefixModel(vocab=VOCAB, seed=7, eos_bias=-0.3)
    rng = random.Random(3)
    sources = random_sources(11, seed=9, vocab=9)
    store = Store(matrices_for([random_lattice(rng) for _ in range(11)]))
    factory = lmbr_hook_factory(store, BOS)
    settings = SearchSettings(beam=3, weight=0.5, max_length_a=1.0, max_length_b=3)
    outputs = [[h[0].tokens for h in decode_sources(model, sources, settings, batch_sentences=b, sort=s,
                                                    hook_factory=factory)]
               for b in (1, 3, 11) for s in (True, False)]
    assert all(o == outputs[0] for o in outputs)


@pytest.mark.parametrize("gains", ["per_step", "bounded"])
def test_bos_is_never_an_output_although_l_pays_its_unigram(gains):
    """Every lattice path starts with <s>, so L pays the unigram <s> (posterior 1) in every row; at a small lambda
    a search that may write BOS collects it (the NMT model here favours nothing)."""
    model = PrefixModel(vocab=VOCAB, seed=3)
    lattices = [chain_lattice(p) for p in [(4, 3, 5), (5, 5), (3, 4)]]
    store = Store(matrices_for(lattices))
    settings = SearchSettings(beam=4, nbest=4, weight=1e-3, max_length_a=0.0, max_length_b=6)
    got = decode_sources(model, random_sources(3, seed=2, vocab=9), settings, batch_sentences=3,
                         hook_factory=lmbr_hook_factory(store, BOS, gains=gains))
    assert all(hyps and all(BOS not in h.tokens for h in hyps) for hyps in got)


def test_a_sentence_without_l_is_a_clear_error():
    factory = lmbr_hook_factory(Store({}), BOS, sentence_ids=[41])
    with pytest.raises(DataError, match="no L matrix for sentence 41"):
        decode_sources(PrefixModel(vocab=VOCAB), [[4, EOS]], SearchSettings(beam=2), hook_factory=factory)


def bounded_bonus(posteriors: dict, theta: Theta):
    """The gain of appending y to prefix under bounded gains: the n-grams it ends that the prefix has not earned."""
    def earned(string):
        return {string[i:j + 1] for j in range(1, len(string)) for i in range(max(0, j - 3), j + 1)}

    def bonus(prefix, y):
        if y == BOS:  # never an output of LMBR decoding
            return float("-inf")
        before, after = earned((BOS, *prefix)), earned((BOS, *prefix, y))
        return theta.values[0] + sum(theta.values[len(u)] * posteriors.get(u, 0.0) for u in after - before)
    return bonus


@pytest.mark.parametrize("gains, weight, limit, seed", [*(("per_step", 0.5, 3, seed) for seed in range(4)),
                                                       *(("bounded", 0.1, 4, seed) for seed in range(3))])
def test_a_wide_beam_finds_the_exhaustive_best_of_lambda_log_p_plus_the_slow_sum_of_l(gains, weight, limit, seed):
    """Per step: the L of every step summed (slow_bonus); bounded: each n-gram's gain once (bounded_bonus)."""
    model = PrefixModel(vocab=VOCAB, seed=seed)
    rng = random.Random(seed)
    lattices = [random_lattice(rng) for _ in range(3)]
    sources = random_sources(3, seed, vocab=9)
    store = Store(matrices_for(lattices))
    wide = VOCAB ** limit
    settings = SearchSettings(beam=wide, nbest=wide, weight=weight, max_length_a=0.0, max_length_b=limit)
    got = decode_sources(model, sources, settings, batch_sentences=2,
                         hook_factory=lmbr_hook_factory(store, BOS, gains=gains))
    for i, (source, hyps) in enumerate(zip(sources, got)):
        posteriors = ngram_posteriors(lattices[i], 4, 1.0, "tropical").as_dict()
        scorer = model.scorer(source)
        bonus = (slow_bonus if gains == "per_step" else bounded_bonus)(posteriors, THETA)
        truth = exhaustive(lambda p: [weight * x for x in scorer(p)], VOCAB, limit, bonus)
        assert [h.tokens for h in hyps[:10]] == [p for _, p in truth[:10]]
        assert [h.score for h in hyps[:10]] == pytest.approx([s for s, _ in truth[:10]], abs=1e-4)


def test_bounded_gains_give_the_same_outputs_alone_in_batches_sorted_and_streaming():
    model = PrefixModel(vocab=VOCAB, seed=7, eos_bias=-2.0)  # EOS is rare: weak-model searches loop on L's n-grams
    rng = random.Random(5)
    sources = random_sources(13, seed=9, vocab=9, longest=8)
    store = Store(matrices_for([random_lattice(rng) for _ in range(13)]))
    factory = lmbr_hook_factory(store, BOS, gains="bounded")
    settings = SearchSettings(beam=3, nbest=2, weight=0.05, max_length_a=1.0, max_length_b=6)
    runs = [decode_sources(model, sources, settings, batch_sentences=b, sort=s, hook_factory=factory)
            for b in (1, 4, 13) for s in (True, False)]
    runs += [decode_sources(model, sources, settings, batch_sentences=4, sort=s, hook_factory=factory,
                            streaming=True, refill=0.5) for s in (True, False)]
    tokens = [[[h.tokens for h in hyps] for hyps in run] for run in runs]
    assert all(t == tokens[0] for t in tokens)
    scores = [[h.score for hyps in run for h in hyps] for run in runs]
    assert all(s == pytest.approx(scores[0], abs=1e-5) for s in scores)
    per_step = decode_sources(model, sources, settings, 4, hook_factory=lmbr_hook_factory(store, BOS))
    assert [[h.tokens for h in hyps] for hyps in per_step] != tokens[0]  # the gain form matters here


def test_an_unknown_gain_form_is_refused():
    with pytest.raises(ValueError, match="gains must be one of per_step, bounded"):
        lmbr_hook_factory(Store({}), BOS, gains="once")


def test_bounded_headroom_is_the_positive_gain_a_row_has_not_earned_and_bounds_every_continuation():
    """headroom() after a prefix equals the sum of the positive Theta_n p(u) of the n-grams u the prefix has not
    earned; every continuation of up to 3 tokens (EOS last or not) adds at most that much."""
    rng = random.Random(11)
    lattices = [random_lattice(rng) for _ in range(2)]
    store = Store(matrices_for(lattices))
    for s, lattice in enumerate(lattices):
        posteriors = ngram_posteriors(lattice, 4, 1.0, "tropical").as_dict()
        bonus = bounded_bonus(posteriors, THETA)
        total = sum(max(0.0, THETA.values[len(u)] * p) for u, p in posteriors.items())
        for prefix in [(), (3,), (4, 5), (5, 5, 3)]:
            hook = lmbr_hook_factory(store, BOS, sentence_ids=[s], gains="bounded")([0], torch.device("cpu"))
            for token in prefix:
                hook.advance(torch.tensor([token]))
            earned = {(BOS, *prefix)[i:j + 1] for j in range(1, len(prefix) + 1) for i in range(max(0, j - 3), j + 1)}
            expected = total - sum(max(0.0, THETA.values[len(u)] * posteriors.get(u, 0.0)) for u in earned)
            assert float(hook.headroom()[0]) == pytest.approx(expected, abs=1e-5)
            for length in range(1, 4):
                for tail in itertools.product(range(VOCAB), repeat=length):
                    added = sum(bonus((*prefix, *tail[:k]), tail[k]) for k in range(length))
                    assert added <= float(hook.headroom()[0]) + 1e-5


class Algorithm1Stop:
    """A hook factory whose hooks keep their scores but offer no bound: the search stops at B finished."""

    def __init__(self, factory):
        self.factory = factory

    def __call__(self, sentences, device):
        hook = self.factory(sentences, device)
        hook.headroom = lambda: None
        return hook


def test_bounded_gains_search_on_past_b_finished_while_a_live_row_can_still_win():
    """Scores rise under L, so B finished hypotheses do not end a sentence while a live row plus its headroom
    could beat them. The search runs the same steps as Algorithm 1 and more, so its best score is never lower; here
    it is higher for some sentences, and with a beam wide enough to hold everything both equal the exhaustive best."""
    model = PrefixModel(vocab=VOCAB, seed=3, eos_bias=1.0)  # EOS is cheap: B hypotheses finish early
    rng = random.Random(8)
    sources = random_sources(12, seed=2, vocab=9)
    store = Store(matrices_for([random_lattice(rng) for _ in range(12)]))
    factory = lmbr_hook_factory(store, BOS, gains="bounded")
    settings = SearchSettings(beam=2, weight=0.05, max_length_a=0.0, max_length_b=6, patience=1000)
    bound = decode_sources(model, sources, settings, batch_sentences=5, hook_factory=factory)
    paper = decode_sources(model, sources, settings, batch_sentences=5, hook_factory=Algorithm1Stop(factory))
    gains = [b[0].score - p[0].score for b, p in zip(bound, paper)]
    assert min(gains) >= -1e-5
    assert max(gains) > 0.1
    streamed = decode_sources(model, sources, settings, batch_sentences=5, hook_factory=factory, streaming=True,
                              refill=0.5)
    assert [h[0].tokens for h in streamed] == [h[0].tokens for h in bound]
    # patience x B finished ends a sentence too: the same search, stopped earlier, so never a better best; with
    # patience 1 never worse than Algorithm 1 (the bound stops only where nothing better can come)
    patient = {p: decode_sources(model, sources, dataclasses.replace(settings, patience=p), batch_sentences=5,
                                 hook_factory=factory) for p in (1, 2)}
    ladder = [paper, patient[1], patient[2], bound]
    for lower, upper in zip(ladder, ladder[1:]):
        assert all(u[0].score >= lo[0].score - 1e-5 for lo, u in zip(lower, upper))
    assert any(b[0].score > p[0].score + 1e-3 for b, p in zip(bound, patient[1]))
    with pytest.raises(ValueError, match="patience must be at least 1"):
        SearchSettings(patience=0.5)
