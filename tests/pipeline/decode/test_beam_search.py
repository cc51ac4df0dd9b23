"""The batched beam search against exhaustive search, a plain-Python reference of its policy, greedy decoding, and
itself in other batches, on a fake prefix-dependent model and on tiny real GRU and Transformer models."""
import math
import random

import pytest
import torch

from pipeline.decode import SearchSettings, beam_search, decode_sources
from pipeline.decode.hooks import ScoreHook, SentenceMaskHook
from pipeline.decode.scores import max_output_lengths
from pipeline.decode.unbatched import unbatched_decode
from pipeline.nmt.token_batches import pad_sequences
from pipeline.nmt.greedy import greedy_decode
from pipeline.nmt.interface import Ensemble
from tests.pipeline.decode.helpers import EOS, PAD, PrefixModel, exhaustive, reference_search
from tests.pipeline.nmt.conftest import digit_vocab, make_model

torch.set_num_threads(1)


def search(model, sources, limit, hook=None, **settings):
    src, lengths = pad_sequences(sources, PAD)
    return beam_search(model, src, lengths, torch.full((len(sources),), limit), SearchSettings(**settings), hook)


def random_sources(n, seed, vocab=14, longest=8):
    rng = random.Random(seed)
    return [[rng.randrange(4, vocab) for _ in range(rng.randint(0, longest))] + [EOS] for _ in range(n)]


@pytest.mark.parametrize("seed", range(4))
def test_a_beam_as_wide_as_the_search_space_finds_the_exhaustive_best(seed):
    model, limit, vocab = PrefixModel(vocab=5, seed=seed), 3, 5
    sources = random_sources(3, seed, vocab=9)
    wide = vocab ** limit  # more than the candidates of any step: nothing is ever cut
    for source, hyps in zip(sources, search(model, sources, limit, beam=wide, nbest=wide)):
        truth = exhaustive(model.scorer(source), vocab, limit)
        assert hyps[0].tokens == truth[0][1] and hyps[0].score == pytest.approx(truth[0][0], abs=1e-4)
        assert [h.tokens for h in hyps] == [p for _, p in truth]  # the whole ranking of all 85 outputs


@pytest.mark.parametrize("beam, threshold", [(1, 0.0), (2, 0.0), (3, 0.0), (5, 0.0), (3, 0.1), (5, 0.02), (4, 1.0)])
def test_matches_a_plain_python_reference_of_the_policy(beam, threshold):
    model, limit = PrefixModel(vocab=7, seed=3, eos_bias=-0.5), 5
    sources = random_sources(12, seed=beam)
    nbest = min(beam, 3)
    got = search(model, sources, limit, beam=beam, threshold=threshold, nbest=nbest)
    for source, hyps in zip(sources, got):
        expected = reference_search(model.scorer(source), 7, beam, limit, threshold, nbest)
        assert [(h.tokens, h.backoff) for h in hyps] == [(p, b) for _, p, b in expected]
        assert [h.score for h in hyps] == pytest.approx([q for q, _, _ in expected], abs=1e-4)


def test_threshold_one_keeps_only_the_best_candidate_so_any_beam_equals_beam_one():
    model = PrefixModel(vocab=7, seed=5, eos_bias=-1.0)
    sources = random_sources(10, seed=1)
    one = search(model, sources, 6, beam=1)
    pruned = search(model, sources, 6, beam=6, threshold=1.0)
    assert [h[0].tokens for h in pruned] == [h[0].tokens for h in one]


def test_pruning_reduces_the_neural_work():
    model = PrefixModel(vocab=7, seed=5, eos_bias=-1.0, scale=4.0)
    sources = random_sources(10, seed=1)
    search(model, sources, 6, beam=6)
    full, model.steps = model.steps, 0
    search(model, sources, 6, beam=6, threshold=0.01)
    assert model.steps < full


@pytest.mark.parametrize("beam, nbest, threshold", [(2, 1, 0.0), (4, 1, 0.0), (4, 3, 0.0), (6, 2, 0.05)])
def test_early_exit_returns_algorithm_1s_nbest_lists_in_fewer_steps(beam, nbest, threshold):
    model = PrefixModel(vocab=7, seed=2, eos_bias=0.5, scale=3.0)  # EOS often on top: many early exits
    sources = random_sources(16, seed=beam + nbest)
    paper = search(model, sources, 7, beam=beam, nbest=nbest, threshold=threshold)
    paper_rows, model.steps = model.steps, 0
    early = search(model, sources, 7, beam=beam, nbest=nbest, threshold=threshold, early_exit=True)
    assert [[(h.tokens, h.backoff) for h in hyps] for hyps in early] == \
        [[(h.tokens, h.backoff) for h in hyps] for hyps in paper]
    assert [[h.score for h in hyps] for hyps in early] == [[h.score for h in hyps] for hyps in paper]
    assert model.steps < paper_rows


def test_early_exit_needs_raw_scores():
    with pytest.raises(ValueError, match="early_exit"):
        SearchSettings(early_exit=True, length_penalty=1.0)
    with pytest.raises(ValueError, match="early_exit"):
        SearchSettings(early_exit=True, weight=-0.5)


def test_beam_one_equals_greedy_decoding_on_the_fake_model():
    model = PrefixModel(vocab=7, seed=2, eos_bias=-1.5)
    sources = random_sources(16, seed=2)
    src, lengths = pad_sequences(sources, PAD)
    limits = max_output_lengths(lengths, 1.0, 2)
    greedy = greedy_decode(model, src, lengths, limits)
    beam = beam_search(model, src, lengths, limits, SearchSettings(beam=1))
    assert [list(h[0].tokens) for h in beam] == greedy
    assert any(len(g) == int(n) for g, n in zip(greedy, limits))  # some hit their length limit


def test_nbest_lists_are_sorted_distinct_and_length_normalisation_reranks():
    model = PrefixModel(vocab=7, seed=7, eos_bias=-0.5)
    sources = random_sources(10, seed=3)
    for penalty in (0.0, 1.0):
        for hyps in search(model, sources, 6, beam=6, nbest=6, length_penalty=penalty):
            ranking = [h.ranking_score for h in hyps]
            assert ranking == sorted(ranking, reverse=True) and len({h.tokens for h in hyps}) == len(hyps) == 6
            for h in hyps:
                assert h.ranking_score == pytest.approx(h.score / (len(h.tokens) + 1) ** penalty)
    raw = search(model, sources, 6, beam=6, nbest=6)
    normalised = search(model, sources, 6, beam=6, nbest=6, length_penalty=1.0)
    assert any(a[0].tokens != b[0].tokens for a, b in zip(raw, normalised))
    assert sum(len(a[0].tokens) for a in raw) < sum(len(b[0].tokens) for b in normalised)


class ForbidEosFrom(ScoreHook):
    """A constraint: EOS is forbidden from step `start` on."""

    def __init__(self, start):
        self.start = start

    def scores(self, log_probs, t):
        if t >= self.start:
            log_probs = log_probs.clone()
            log_probs[:, EOS] = float("-inf")
        return log_probs


def test_eos_backoff_returns_a_hypothesis_when_no_eos_survives():
    model, limit = PrefixModel(vocab=6, seed=11, eos_bias=-5.0), 4
    sources = random_sources(6, seed=4)
    hyps = search(model, sources, limit, hook=ForbidEosFrom(2), beam=2, nbest=2)
    for source, nbest in zip(sources, hyps):
        scores = model.scorer(source)
        # EOS is rare, so the beams of steps 0 and 1 seldom keep one, and from step 2 on it is forbidden: F_s stays
        # empty and the output comes from the backoff stack, the EOS candidates of the hypotheses of length 0 and 1
        expected = reference_search(lambda p: [s if not (len(p) >= 2 and y == EOS) else -math.inf
                                               for y, s in enumerate(scores(p))], 6, 2, limit, nbest=2)
        assert [(h.tokens, h.backoff) for h in nbest] == [(p, b) for _, p, b in expected]
        assert all(len(h.tokens) <= 1 for h in nbest)
    assert sum(h[0].backoff for h in hyps) >= 4  # most sentences never kept an EOS in their beam
    assert search(model, sources, limit, hook=ForbidEosFrom(0), beam=2) == [[] for _ in sources]


def test_a_constraint_mask_hook_forbids_tokens_per_sentence():
    model, limit = PrefixModel(vocab=7, seed=4), 5
    sources = random_sources(6, seed=5)
    forbidden = torch.zeros(6, 7, dtype=torch.bool)
    forbidden[::2, 3] = True  # sentences 0, 2, 4 never produce token 3
    free = search(model, sources, limit, beam=4, nbest=4)
    masked = search(model, sources, limit, hook=SentenceMaskHook(forbidden), beam=4, nbest=4)
    for i, (a, b) in enumerate(zip(free, masked)):
        if i % 2:
            assert [h.tokens for h in a] == [h.tokens for h in b]
        else:
            assert all(3 not in h.tokens for h in b)
    assert any(3 in h.tokens for i in (0, 2, 4) for h in free[i])


class TokenBonus(ScoreHook):
    """The toy LMBR: a fixed bonus on one token, plus per-hypothesis state (the prefix) kept through the protocol;
    a bonus that depends on that state fails the exhaustive comparison if any reorder or advance is wrong."""

    def __init__(self, n, token, bonus, repeat_bonus=0.0):
        self.token, self.bonus, self.repeat_bonus = token, bonus, repeat_bonus
        self.prefixes = [() for _ in range(n)]
        self.calls = []

    def scores(self, log_probs, t):
        assert log_probs.shape[0] == len(self.prefixes)
        assert all(len(p) == t for p in self.prefixes)
        extra = torch.zeros_like(log_probs)
        extra[:, self.token] += self.bonus
        for r, p in enumerate(self.prefixes):  # a bonus for repeating the last token: depends on the history
            if p:
                extra[r, p[-1]] += self.repeat_bonus
        return log_probs + extra

    def reorder(self, index):
        self.prefixes = [self.prefixes[i] for i in index.tolist()]
        self.calls.append("reorder")

    def advance(self, tokens):
        assert EOS not in tokens.tolist()
        self.prefixes = [p + (y,) for p, y in zip(self.prefixes, tokens.tolist())]
        self.calls.append("advance")

    def select_sentences(self, keep):
        self.calls.append(f"select {keep.tolist()}")

    def bonus_of(self, prefix, y):
        return (self.bonus if y == self.token else 0.0) + (self.repeat_bonus if prefix and y == prefix[-1] else 0.0)


def test_a_score_hook_changes_the_output_exactly_as_expected():
    model, limit, vocab = PrefixModel(vocab=5, seed=8), 3, 5
    sources = random_sources(4, seed=6, vocab=9)
    plain = search(model, sources, limit, beam=125)
    hook = TokenBonus(4, token=3, bonus=1.5, repeat_bonus=0.7)
    boosted = search(model, sources, limit, hook=hook, beam=125)
    for source, a, b in zip(sources, plain, boosted):
        truth = exhaustive(model.scorer(source), vocab, limit, bonus=hook.bonus_of)
        assert b[0].tokens == truth[0][1] and b[0].score == pytest.approx(truth[0][0], abs=1e-4)
    assert any(a[0].tokens != b[0].tokens for a, b in zip(plain, boosted))
    # a bonus no other score can match: the token everywhere, up to the length limit
    huge = search(model, sources, limit, hook=TokenBonus(4, token=4, bonus=100.0), beam=3)
    assert [h[0].tokens for h in huge] == [(4,) * limit] * 4


def test_the_hook_state_follows_the_beam_while_sentences_finish_and_leave_the_batch():
    model, vocab = PrefixModel(vocab=7, seed=12, eos_bias=-0.5), 7
    sources = random_sources(8, seed=13)
    hook = TokenBonus(8, token=5, bonus=0.8, repeat_bonus=1.1)
    settings = SearchSettings(beam=3, nbest=2, max_length_a=1.0, max_length_b=2)
    out = decode_sources(model, sources, settings, batch_sentences=8, sort=False,
                         hook_factory=lambda indices, device: hook)
    for source, hyps in zip(sources, out):
        scores = model.scorer(source)
        boosted = lambda p: [s + hook.bonus_of(p, y) for y, s in enumerate(scores(p))]  # noqa: E731
        expected = reference_search(boosted, vocab, 3, len(source) - 1 + 2, nbest=2)
        assert [h.tokens for h in hyps] == [p for _, p, _ in expected]
    assert hook.calls[:2] == ["reorder", "advance"]
    selects = [c for c in hook.calls if c.startswith("select")]
    assert len(selects) >= 2  # sentences left the batch at different steps


def test_weight_scales_the_model_scores():
    model = PrefixModel(vocab=6, seed=9)
    sources = random_sources(5, seed=7)
    plain = search(model, sources, 4, beam=3)
    scaled = search(model, sources, 4, beam=3, weight=0.5)
    assert [h[0].tokens for h in plain] == [h[0].tokens for h in scaled]
    assert [h[0].score * 0.5 for h in plain] == pytest.approx([h[0].score for h in scaled], abs=1e-5)


def test_max_length_from_the_source_length():
    model = PrefixModel(vocab=6, seed=1, eos_bias=-8.0)  # EOS almost never wins: hypotheses run to the limit
    sources = [[5] * n + [EOS] for n in (0, 1, 4, 7)]
    out = decode_sources(model, sources, SearchSettings(beam=2, max_length_a=1.5, max_length_b=1), batch_sentences=4)
    assert [len(h[0].tokens) for h in out] == [1, 2, 7, 11]  # floor(1.5 * n + 1)


# Real models with random weights: the batch-size bug class (padding in attention, stale reorder indices).

@pytest.fixture(scope="module", params=["gru", "transformer"])
def real_model(request):
    return make_model(request.param, digit_vocab(), seed=5).eval()


def tokens_of(results):
    return [[h.tokens for h in hyps] for hyps in results]


def test_a_sentence_decodes_the_same_alone_and_in_any_batch(real_model):
    sources = random_sources(11, seed=8, longest=9)
    settings = SearchSettings(beam=4, nbest=3, max_length_a=1.0, max_length_b=3)
    alone = decode_sources(real_model, sources, settings, batch_sentences=1)
    for batch, sort in [(2, False), (3, True), (5, False), (11, True), (11, False)]:
        other = decode_sources(real_model, sources, settings, batch_sentences=batch, sort=sort)
        assert tokens_of(other) == tokens_of(alone), (batch, sort)
        assert [h.score for r in other for h in r] == pytest.approx([h.score for r in alone for h in r], abs=1e-4)
    unbatched = unbatched_decode(real_model, sources, settings)
    assert tokens_of(unbatched) == tokens_of(alone)


def test_beam_one_equals_greedy_on_real_models(real_model):
    sources = random_sources(9, seed=9)
    src, lengths = pad_sequences(sources, PAD)
    limits = max_output_lengths(lengths, 1.0, 4)
    beam = beam_search(real_model, src, lengths, limits, SearchSettings(beam=1))
    assert [list(h[0].tokens) for h in beam] == greedy_decode(real_model, src, lengths, limits)


def test_an_ensemble_of_one_model_is_the_model(real_model):
    sources = random_sources(6, seed=10)
    settings = SearchSettings(beam=3, nbest=3, max_length_a=1.0, max_length_b=3)
    src, lengths = pad_sequences(sources, PAD)
    limits = max_output_lengths(lengths, 1.0, 3)
    alone = beam_search(real_model, src, lengths, limits, settings)
    assert beam_search(Ensemble([real_model]), src, lengths, limits, settings) == alone


def test_an_ensemble_averages_its_members():
    vocab = digit_vocab()
    a, b = make_model("gru", vocab, seed=1).eval(), make_model("transformer", vocab, seed=2).eval()
    sources = random_sources(3, seed=11)
    settings = SearchSettings(beam=2, max_length_a=1.0, max_length_b=2)
    out = decode_sources(Ensemble([a, b]), sources, settings, batch_sentences=3)
    for source, hyps in zip(sources, out):
        src, lengths = pad_sequences([source], PAD)
        tgt = torch.tensor([[vocab.bos_id, *hyps[0].tokens]])
        gold = list(hyps[0].tokens) + [EOS]
        with torch.no_grad():
            total = sum(m.score(src, lengths, tgt)[0, range(len(gold)), gold].sum() for m in (a, b)) / 2
        assert hyps[0].score == pytest.approx(float(total), abs=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_decodes_like_the_cpu(real_model):
    sources = random_sources(6, seed=12)
    settings = SearchSettings(beam=3, max_length_a=1.0, max_length_b=3)
    cpu = decode_sources(real_model, sources, settings, batch_sentences=3)
    gpu = decode_sources(real_model.to("cuda"), sources, settings, batch_sentences=3)
    real_model.to("cpu")
    assert tokens_of(gpu) == tokens_of(cpu)



class ZeroHeadroom(ScoreHook):
    """Pure NMT, with the bound that its scores never rise: the search may stop once no live row beats F_s."""

    def __init__(self, rows: int) -> None:
        self.rows = rows

    def reorder(self, index):
        self.rows = index.numel()

    def headroom(self):
        return torch.zeros(self.rows)


def test_a_bound_stop_ends_sentences_once_no_live_row_can_beat_the_finished_ones():
    """Scores only fall, so with a zero headroom a sentence may end on a step where nothing finishes; its best is
    never worse than Algorithm 1's, and with a beam holding every prefix it is the exhaustive best."""
    model = PrefixModel(vocab=6, seed=4, eos_bias=-1.0)  # (seed 4: five sentences end on such a step)
    sources = random_sources(10, seed=3, vocab=9)
    factory = lambda sentences, device: ZeroHeadroom(len(sentences))  # noqa: E731
    for beam, limit in ((2, 6), (6 ** 3, 3)):
        settings = SearchSettings(beam=beam, max_length_a=0.0, max_length_b=limit)
        bound = decode_sources(model, sources, settings, batch_sentences=4, hook_factory=factory)
        paper = decode_sources(model, sources, settings, batch_sentences=4)
        assert all(b[0].score >= p[0].score - 1e-6 for b, p in zip(bound, paper))
        if beam > 2:
            for source, hyps in zip(sources, bound):
                best = exhaustive(model.scorer(source), 6, limit)[0]
                assert hyps[0].tokens == best[1] and hyps[0].score == pytest.approx(best[0], abs=1e-5)
