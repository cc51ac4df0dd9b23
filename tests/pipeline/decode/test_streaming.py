"""Streaming refill: the same outputs as plain sentence batching, whatever the pool size, refill point and order."""
import random

import pytest
import torch

from lattices.lmatrix import build_lmatrix
from lattices.posteriors import ngram_posteriors
from pipeline.decode import SearchSettings, decode_sources
from lattices.acceptor import Acceptor
from pipeline.decode.beam_search import BeamBatch
from pipeline.decode.constraints import acceptor_hook_factory
from pipeline.decode.hooks import SentenceMaskHook
from pipeline.decode.lmbr_hook import lmbr_hook_factory
from pipeline.decode.scores import max_output_lengths
from pipeline.decode.speed import QueryCounter
from pipeline.nmt.token_batches import pad_sequences
from pipeline.nmt.interface import Ensemble
from tests.pipeline.decode.helpers import BOS, EOS, PrefixModel
from tests.pipeline.decode.test_beam_search import random_sources, tokens_of
from tests.pipeline.decode.test_constraints import limits_of, random_strings
from tests.pipeline.decode.test_lmbr_hook import THETA, Store, random_lattice
from tests.pipeline.nmt.conftest import digit_vocab, make_model

torch.set_num_threads(1)


def scores_of(results):
    return [h.score for hyps in results for h in hyps]


@pytest.mark.parametrize("joins", [False, True])
@pytest.mark.parametrize("pool, refill, sort", [(1, 0.0, True), (3, 0.34, False), (4, 0.5, True), (5, 0.9, False),
                                                (40, 1 / 6, True)])
def test_streaming_equals_batching_on_a_prefix_model(pool, refill, sort, joins):
    model = PrefixModel(vocab=7, seed=4, eos_bias=-0.4, joins_at_any_step=joins)
    rng = random.Random(pool)
    sources = random_sources(23, seed=pool, longest=12)
    settings = SearchSettings(beam=3, nbest=2, threshold=rng.choice([0.0, 0.05]), max_length_a=1.0,
                              max_length_b=2)
    plain = decode_sources(model, sources, settings, batch_sentences=1)
    streamed = decode_sources(model, sources, settings, batch_sentences=pool, sort=sort, streaming=True,
                              refill=refill)
    assert tokens_of(streamed) == tokens_of(plain)
    assert scores_of(streamed) == pytest.approx(scores_of(plain), abs=1e-5)


@pytest.mark.parametrize("architecture", ["gru", "transformer"])
def test_streaming_equals_batching_on_real_models_and_ensembles(architecture, monkeypatch):
    merges = []  # (rows joining, steps they are behind)
    original = BeamBatch.merge
    monkeypatch.setattr(BeamBatch, "merge", lambda self, other: (merges.append((other.active, self.t - other.t)),
                                                                 original(self, other)))
    vocab = digit_vocab()
    model = make_model(architecture, vocab, seed=3).eval()
    sources = random_sources(17, seed=12, longest=11)  # varied source lengths: padding is merged on refills
    settings = SearchSettings(beam=4, nbest=2, max_length_a=1.0, max_length_b=3)
    for candidate in (model, Ensemble([model, make_model(architecture, vocab, seed=4).eval()])):
        plain = decode_sources(candidate, sources, settings, batch_sentences=5)
        streamed = decode_sources(candidate, sources, settings, batch_sentences=5, streaming=True, refill=0.4,
                                  sort=False)
        assert tokens_of(streamed) == tokens_of(plain)
        assert scores_of(streamed) == pytest.approx(scores_of(plain), abs=1e-4)
    assert len(merges) >= 4  # refilled batches joined the pool's query
    behind = [shift for _, shift in merges if shift > 0]
    assert bool(behind) == (architecture == "gru")  # a GRU's join at once, a Transformer's catch up first


@pytest.mark.parametrize("joins", [False, True])
def test_streaming_with_lmbr_and_mask_hooks_equals_batching(joins):
    model = PrefixModel(vocab=6, seed=5, eos_bias=-0.3, joins_at_any_step=joins)
    rng = random.Random(8)
    sources = random_sources(15, seed=3, vocab=9, longest=10)
    store = Store({i: build_lmatrix(ngram_posteriors(random_lattice(rng), 4, 1.0), THETA, 6, sentence=i)
                   for i in range(15)})
    lmbr = lmbr_hook_factory(store, BOS)
    forbidden = torch.zeros(15, 6, dtype=torch.bool)
    forbidden[::3, 4] = True  # every third sentence may not say token 4

    def masked(indices, device):
        return SentenceMaskHook(forbidden[torch.tensor(indices)])

    settings = SearchSettings(beam=3, nbest=3, weight=0.5, max_length_a=0.5, max_length_b=3)
    for factory in (lmbr, masked):
        plain = decode_sources(model, sources, settings, batch_sentences=4, hook_factory=factory)
        streamed = decode_sources(model, sources, settings, batch_sentences=4, hook_factory=factory,
                                  streaming=True, refill=0.5)
        assert tokens_of(streamed) == tokens_of(plain)
        assert scores_of(streamed) == pytest.approx(scores_of(plain), abs=1e-5)
    assert all(4 not in h.tokens for hyps in decode_sources(model, sources, settings, 4, hook_factory=masked,
                                                            streaming=True)[::3] for h in hyps)


def test_streaming_reports_progress_and_refuses_a_bad_refill():
    model = PrefixModel(vocab=6, seed=1)
    sources = random_sources(9, seed=2)
    seen = []
    decode_sources(model, sources, SearchSettings(beam=2), batch_sentences=3, streaming=True,
                   on_batch=seen.extend)
    assert sorted(seen) == list(range(9))
    with pytest.raises(ValueError, match="refill must be in"):
        decode_sources(model, sources, SearchSettings(beam=2), batch_sentences=3, streaming=True, refill=1.0)
    assert decode_sources(model, [], SearchSettings(beam=2), streaming=True) == []


def test_query_counter_counts_every_step_and_its_rows_without_changing_outputs():
    model = PrefixModel(vocab=7, seed=2, eos_bias=-0.4)
    sources = random_sources(9, seed=3, longest=8)
    settings = SearchSettings(beam=3, max_length_a=1.0, max_length_b=2)
    counter = QueryCounter(model)
    assert tokens_of(decode_sources(counter, sources, settings, batch_sentences=4, sort=False)) == \
        tokens_of(decode_sources(model, sources, settings, batch_sentences=4, sort=False))
    steps = rows = 0  # the same batches stepped by hand: one query per step, of the live hypotheses
    for start in range(0, len(sources), 4):
        src, lengths = pad_sequences(sources[start:start + 4], model.pad_id)
        batch = BeamBatch(model, src, lengths, max_output_lengths(lengths, 1.0, 2, None), settings)
        while not batch.done:
            steps, rows = steps + 1, rows + int(batch.scores.numel())
            batch.step()
    assert (counter.queries, counter.rows) == (steps, rows) and rows > steps > 0


@pytest.mark.parametrize("constrained", [False, True])
def test_a_batch_joined_steps_later_decodes_as_alone(constrained):
    """A fresh batch merged into one that has run 3 steps: its sentences' outputs are those of decoding them alone
    (their limits, token histories and, constrained by acceptors whose EOS is often out of reach, the constraint
    hook's limits and the backoff stack follow their own steps); a model that depends on the time refuses such a
    join."""
    model = PrefixModel(vocab=6, seed=7, eos_bias=-0.3, joins_at_any_step=True)
    sources = random_sources(7, seed=5, longest=9)
    settings = SearchSettings(beam=3, nbest=2, max_length_a=0.5, max_length_b=2)
    factory = None
    if constrained:
        rng = random.Random(4)
        acceptors = [Acceptor.from_strings(random_strings(rng, 4, longest=6)) for _ in sources]
        factory = acceptor_hook_factory(acceptors, limits_of(sources, settings), EOS)

    def batch_of(indices):
        src, lengths = pad_sequences([sources[i] for i in indices], model.pad_id)
        hook = factory(indices, torch.device("cpu")) if factory else None
        return BeamBatch(model, src, lengths, max_output_lengths(lengths, 0.5, 2), settings, hook)

    first, results = batch_of([0, 1, 2]), {}
    for _ in range(3):
        results.update(first.step())
    late = batch_of([3, 4, 5, 6])
    first.merge(late)
    assert first.start[-4:] == [3, 3, 3, 3]
    while not first.done:
        results.update(first.step())
    alone = decode_sources(model, sources, settings, batch_sentences=1, hook_factory=factory)
    assert [tokens_of([results[k]]) for k in range(7)] == [tokens_of([hyps]) for hyps in alone]
    assert scores_of([results[k] for k in range(7)]) == pytest.approx(scores_of(alone), abs=1e-5)
    timed = PrefixModel(vocab=6, seed=7)
    src, lengths = pad_sequences(sources[:2], timed.pad_id)
    running = BeamBatch(timed, src[:1], lengths[:1], max_output_lengths(lengths[:1], 0.5, 2), settings)
    running.step()
    with pytest.raises(ValueError, match="cannot join"):
        running.merge(BeamBatch(timed, src[1:], lengths[1:], max_output_lengths(lengths[1:], 0.5, 2), settings))


def test_a_merged_batch_cuts_its_source_padding_when_its_longest_sources_end():
    vocab = digit_vocab()
    model = make_model("gru", vocab, seed=5).eval()
    sources = [[5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 5, vocab.eos_id], [7, 8, vocab.eos_id], [9, 6, 5, vocab.eos_id]]
    limits = torch.tensor([1, 6, 6])                   # the long sentence ends first
    settings = SearchSettings(beam=2)

    def batch_of(indices):
        src, lengths = pad_sequences([sources[i] for i in indices], vocab.pad_id)
        return BeamBatch(model, src, lengths, limits[indices], settings)

    with torch.inference_mode():
        alone = [beam_search_one(model, source, int(limit), settings) for source, limit in zip(sources, limits)]
        running, results = batch_of([1]), {}
        results.update(running.step())
        running.merge(batch_of([0, 2]))                # joins one step behind; the state is padded to 12
        assert running.state.tensors["memory"].shape[1] == 12
        lengths, widths = {0: 3, 1: 12, 2: 4}, []           # by batch position
        while not running.done:
            results.update(running.step())
            if not running.done:                        # always padded to the longest source still decoding
                widths.append(running.state.tensors["memory"].shape[1])
                assert widths[-1] == max(lengths[p] for p in running.sentence)
        assert 12 in widths and 4 in widths
    got = [results[1], results[0], results[2]]         # positions: the running sentence, then the joined ones
    assert tokens_of(got) == tokens_of(alone)
    assert scores_of(got) == pytest.approx(scores_of(alone), abs=1e-4)
    unmerged = batch_of([0, 1, 2])
    while not unmerged.done:
        unmerged.step()
        assert unmerged.state.tensors["memory"].shape[1] == 12  # never merged: computes as before


def beam_search_one(model, source, limit, settings):
    from pipeline.decode.beam_search import beam_search
    src = torch.tensor([source])
    return beam_search(model, src, torch.tensor([len(source)]), torch.tensor([limit]), settings)[0]
