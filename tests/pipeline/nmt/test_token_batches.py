import numpy as np
import torch

from pipeline.nmt.token_batches import BatchStream, TokenBatcher, UpdateStream, collate, length_batches, source_ids
from tests.pipeline.nmt.conftest import digit_data


def lengths(n=500, seed=0):
    data = digit_data(n, seed=seed, task="copy", max_len=20)
    return [len(s) + 1 for s in data.sources], [len(t) + 2 for t in data.targets]


def test_each_epoch_holds_every_example_once_within_the_token_limit():
    src, tgt = lengths()
    batcher = TokenBatcher(src, tgt, max_tokens=100, seed=7)
    batches = batcher.epoch(0)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(src)))
    for b in batches:
        longest = max(max(src[i], tgt[i]) + 1 for i in b)
        assert len(b) * longest <= 100
    spans = [max(tgt[i] for i in b) - min(tgt[i] for i in b) for b in batches]
    assert np.mean(spans) <= 2  # length-sorted buckets: little padding


def test_batches_are_a_function_of_seed_and_epoch():
    src, tgt = lengths()
    a, b = TokenBatcher(src, tgt, 100, seed=7), TokenBatcher(src, tgt, 100, seed=7)
    same = [x.tolist() for x in a.epoch(3)] == [x.tolist() for x in b.epoch(3)]
    assert same
    assert [x.tolist() for x in a.epoch(0)] != [x.tolist() for x in a.epoch(1)]
    assert [x.tolist() for x in a.epoch(0)] != [x.tolist() for x in TokenBatcher(src, tgt, 100, seed=8).epoch(0)]


def test_a_stream_resumes_from_its_position_across_epochs():
    src, tgt = lengths(60)
    batcher = TokenBatcher(src, tgt, 80, seed=1)
    per_epoch = len(batcher.epoch(0))
    stream = BatchStream(batcher)
    first = [next(stream).tolist() for _ in range(per_epoch - 2)]
    resumed = BatchStream(batcher, **stream.position)
    rest = [next(stream).tolist() for _ in range(5)]
    assert [next(resumed).tolist() for _ in range(5)] == rest
    assert stream.position["epoch"] == 1 and first


def test_an_example_longer_than_the_limit_gets_a_batch_of_its_own():
    batches = length_batches(np.array([3, 50, 3]), np.array([3, 50, 3]), np.array([0, 2, 1]), max_tokens=10)
    assert [b.tolist() for b in batches] == [[0, 2], [1]]


def test_collate_places_the_vocabulary_specials(vocab):
    batch = collate([vocab.encode(list("12")), vocab.encode(list("3"))], [vocab.encode(list("21")), []], vocab, vocab)
    eos, bos, pad = vocab.eos_id, vocab.bos_id, vocab.pad_id
    d = {c: vocab.id(c) for c in "123"}
    assert batch.src.tolist() == [[d["1"], d["2"], eos], [d["3"], eos, pad]]
    assert batch.src_lengths.tolist() == [3, 2]
    assert batch.tgt_in.tolist() == [[bos, d["2"], d["1"]], [bos, pad, pad]]
    assert batch.tgt_out.tolist() == [[d["2"], d["1"], eos], [eos, pad, pad]]
    assert batch.target_tokens == 4 and batch.tgt_in.dtype == torch.long
    assert source_ids(list("12"), vocab) == [d["1"], d["2"], eos]


def test_a_prefetching_stream_checkpoints_the_position_of_the_updates_handed_out():
    data = digit_data(60, seed=3, task="copy")
    batcher = TokenBatcher([len(s) + 1 for s in data.sources], [len(t) + 1 for t in data.targets], 60, seed=2)
    ahead = UpdateStream(BatchStream(batcher), 2, lambda ids: ids, prefetch=True)
    consumed = [next(ahead) for _ in range(3)]
    resumed = UpdateStream(BatchStream(batcher, **ahead.position), 2, lambda ids: ids)
    following = [next(ahead) for _ in range(4)]
    ahead.close()
    assert [[b.tolist() for b in u] for u in (next(resumed) for _ in range(4))] == \
        [[b.tolist() for b in u] for u in following]
    plain = UpdateStream(BatchStream(batcher), 2, lambda ids: ids)
    assert [[b.tolist() for b in u] for u in (next(plain) for _ in range(3))] == \
        [[b.tolist() for b in u] for u in consumed]
