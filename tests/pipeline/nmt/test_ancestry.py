"""Self-attention through the rows' ancestry (pipeline/nmt/ancestry.py): the kernel against a brute-force attention
over gathered caches, and the Transformer's steps and beam searches against its copying caches."""
import math
import random

import pytest
import torch

from pipeline.decode import SearchSettings, decode_sources
from pipeline.nmt.ancestry import attend_ancestry, attend_sources, cache_room, empty_cache
from pipeline.nmt.interface import DecoderState, Ensemble
from pipeline.nmt.speedups import CpuSpeedups, apply_speedups
from tests.pipeline.nmt.conftest import make_model
from tests.pipeline.nmt.test_interface import incremental, sample_batch

TOLERANCE = 1e-5  # the kernel sums in another order than scaled_dot_product_attention


def brute_force(query, cache, ancestry, length):
    """Attention in float64 over each row's gathered keys and values."""
    rows, heads, size = query.shape
    out = torch.empty(rows, heads, size, dtype=torch.float64)
    for r in range(rows):
        keys = torch.stack([cache[0, u, ancestry[r, u]] for u in range(length)]).double()    # [length, heads, d]
        values = torch.stack([cache[1, u, ancestry[r, u]] for u in range(length)]).double()
        for h in range(heads):
            weights = torch.softmax(keys[:, h] @ query[r, h].double() / math.sqrt(size), dim=0)
            out[r, h] = weights @ values[:, h]
    return out


@pytest.mark.parametrize("rows, length, capacity", [(1, 1, 1), (5, 7, 6), (12, 30, 16)])
def test_the_kernel_equals_attention_over_the_gathered_caches(rows, length, capacity):
    generator = torch.Generator().manual_seed(rows * 100 + length)
    heads, size = 4, 16
    cache = torch.randn(2, length + 3, capacity, heads, size, generator=generator)
    ancestry = torch.randint(0, capacity, (rows, length + 5), generator=generator)
    query = torch.randn(rows, heads, size, generator=generator)
    got = attend_ancestry(query, cache, ancestry, length)
    assert got.dtype == torch.float32 and got.shape == (rows, heads, size)
    torch.testing.assert_close(got.double(), brute_force(query, cache, ancestry, length), atol=TOLERANCE, rtol=0)


def test_the_source_kernel_equals_masked_attention_over_each_row_s_sentence():
    generator = torch.Generator().manual_seed(7)
    sentences, longest, heads, size, rows = 3, 9, 2, 8, 7
    keys = torch.randn(sentences, longest, heads, size, generator=generator)
    values = torch.randn(sentences, longest, heads, size, generator=generator)
    lengths = torch.tensor([9, 1, 5])
    sentence = torch.tensor([2, 0, 0, 1, 2, 2, 1])
    query = torch.randn(rows, heads, size, generator=generator)
    mask = (torch.arange(longest)[None, :] < lengths[:, None])[sentence]                        # [rows, S]
    expected = torch.nn.functional.scaled_dot_product_attention(
        query.double()[:, :, None], keys[sentence].double().transpose(1, 2), values[sentence].double().transpose(1, 2),
        attn_mask=mask[:, None, None])[:, :, 0]
    got = attend_sources(query, keys, values, sentence, lengths)
    torch.testing.assert_close(got.double(), expected, atol=TOLERANCE, rtol=0)


def test_the_cache_grows_in_steps_and_rows_and_keeps_what_it_holds():
    cache, ancestry = empty_cache(rows=2, heads=1, size=3, steps=2)
    cache[:, :2, :2] = torch.arange(24, dtype=torch.float32).view(2, 2, 2, 1, 3)
    ancestry[:, :2] = torch.tensor([[0, 1], [1, 0]])
    grown, grown_ancestry = cache_room(cache, ancestry, step=2, rows=5)
    assert grown.shape == (2, 4, 5, 1, 3) and grown_ancestry.shape == (2, 4)
    assert torch.equal(grown[:, :2, :2], cache) and torch.equal(grown_ancestry[:, :2], ancestry)
    same, same_ancestry = cache_room(grown, grown_ancestry, step=3, rows=5)
    assert same is grown and same_ancestry is grown_ancestry  # room enough: no copy


def fast(model):
    return apply_speedups(model, CpuSpeedups(ancestry_cache=True))


def test_steps_through_reorders_equal_the_copying_caches(vocab):
    """20 steps with a reorder after each (rows repeat, rows drop, sentences end), beyond the first capacities."""
    model = make_model("transformer", vocab, seed=5).eval()
    shared = fast(model)
    batch = sample_batch(vocab, n=3)
    rng = random.Random(1)
    with torch.inference_mode():
        plain, through = model.encode(batch.src, batch.src_lengths), shared.encode(batch.src, batch.src_lengths)
        assert through.shared and "ancestry" in through.tensors and not through.per_time
        prev = torch.full((3,), vocab.bos_id)
        for t in range(20):
            expected, plain = model.step(plain, prev)
            got, through = shared.step(through, prev)
            torch.testing.assert_close(got, expected, atol=TOLERANCE, rtol=0)
            rows = plain.batch_size
            index = torch.tensor(sorted(rng.randrange(rows) for _ in range(rng.randint(1, 7))))
            plain, through = model.reorder(plain, index), shared.reorder(through, index)
            prev = torch.randint(4, len(vocab), (index.shape[0],))
        assert through.shared["self_cache0"].shape[1] >= 20  # grown past the first 16 steps


@pytest.mark.parametrize("beam, streaming", [(1, False), (4, False), (5, True)])
def test_beam_search_outputs_equal_the_copying_caches(vocab, beam, streaming):
    model = make_model("transformer", vocab, seed=6).eval()
    rng = random.Random(beam)
    sources = [[rng.randrange(4, len(vocab)) for _ in range(rng.randint(1, 9))] + [vocab.eos_id] for _ in range(11)]
    settings = SearchSettings(beam=beam, nbest=beam, max_length_a=1.5, max_length_b=4)
    batching = {"batch_sentences": 4, "streaming": streaming}
    copying = decode_sources(model, sources, settings, **batching)
    shared = decode_sources(fast(model), sources, settings, **batching)
    ensemble = decode_sources(Ensemble([fast(model), fast(model)]), sources, settings, **batching)
    for expected, got, averaged in zip(copying, shared, ensemble):
        assert [h.tokens for h in got] == [h.tokens for h in expected] == [h.tokens for h in averaged]
        assert [h.score for h in got] == pytest.approx([h.score for h in expected], abs=1e-4)


def test_states_with_a_shared_cache_are_not_joined(vocab):
    model = fast(make_model("transformer", vocab, seed=7).eval())
    batch = sample_batch(vocab, n=2)
    with torch.inference_mode():
        _, state = incremental(model, batch.src, batch.src_lengths, batch.tgt_in[:, :2])
        with pytest.raises(ValueError, match="shared tensors cannot be joined"):
            DecoderState.concat([state, state])
        with pytest.raises(ValueError, match="one position at a time"):
            model._decode(state, batch.tgt_in[:, :2], causal=True)


def test_a_pool_of_batches_with_shared_caches_steps_each_on_its_own(vocab):
    """Two batches at the same step cannot join (the streaming refill's and the server's pool): each steps alone
    and ends with the outputs of plain batched decoding."""
    from pipeline.decode.batching import step_pool
    from pipeline.decode.beam_search import BeamBatch
    from pipeline.decode.hooks import ScoreHook
    from pipeline.decode.scores import max_output_lengths
    from pipeline.nmt.token_batches import pad_sequences

    model = fast(make_model("transformer", vocab, seed=8).eval())
    rng = random.Random(3)
    sources = [[rng.randrange(4, len(vocab)) for _ in range(rng.randint(1, 6))] + [vocab.eos_id] for _ in range(6)]
    settings = SearchSettings(beam=3, max_length_a=1.0, max_length_b=3)
    pool = []
    for part in (sources[:3], sources[3:]):
        src, lengths = pad_sequences(part, vocab.pad_id)
        limits = max_output_lengths(lengths, settings.max_length_a, settings.max_length_b)
        pool.append((BeamBatch(model, src, lengths, limits, settings, ScoreHook()), list(part)))
    assert not pool[0][0].can_merge(pool[1][0])
    ended = {}
    while pool:
        ended.update({tuple(source): hyps for source, hyps in step_pool(pool)})
    alone = decode_sources(model, sources, settings, batch_sentences=3)
    assert [[h.tokens for h in ended[tuple(s)]] for s in sources] == [[h.tokens for h in hyps] for hyps in alone]
