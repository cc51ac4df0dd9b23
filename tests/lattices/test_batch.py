import random

import numpy as np
import pytest
import torch

from lattices.batch import LMatrixBatch
from lattices.lattice import Lattice
from lattices.lmatrix import build_lmatrix
from lattices.posteriors import ngram_posteriors
from lattices.theta import Theta
from tests.lattices.helpers import random_fst

THETA = Theta.from_precisions([55.0, 30.0, 18.0, 11.0], "scaled")
VOCAB = 20
BOS = 1  # the random lattices use labels 1..alphabet: label 1 plays the bos role here


def matrices(seed: int, count: int, order: int = 4):
    rng = random.Random(seed)
    result = []
    for s in range(count):
        lattice = Lattice.from_fst(random_fst(rng, states=rng.randint(3, 10), alphabet=rng.randint(2, 8)))
        result.append(build_lmatrix(ngram_posteriors(lattice, order, 1.0, "log"), THETA, VOCAB, sentence=s))
    return result


def test_dense_rows_and_next_rows_equal_the_per_sentence_numpy_forms():
    ms = matrices(1, 5)
    batch = LMatrixBatch(ms)
    offsets = batch.row_offsets.tolist()
    rng = np.random.default_rng(0)
    # random hypotheses: (sentence, local row, token)
    sentence = rng.integers(0, len(ms), 200)
    local = np.array([rng.integers(0, ms[s].num_rows) for s in sentence])
    tokens = rng.integers(1, VOCAB, 200)
    rows = torch.tensor([offsets[s] + r for s, r in zip(sentence, local)])
    dense = batch.rows(rows)
    assert dense.shape == (200, VOCAB) and dense.dtype == torch.float32
    for b in range(200):
        np.testing.assert_allclose(dense[b].numpy(), ms[sentence[b]].dense_rows([local[b]])[0], rtol=1e-6, atol=1e-7)
    buffer = torch.full((200, VOCAB), float("nan"))
    assert batch.rows(rows, out=buffer) is buffer and torch.equal(buffer, dense)
    nxt = batch.next_rows(rows, torch.tensor(tokens))
    for b in range(200):
        expected = ms[sentence[b]].automaton.next_row(int(local[b]), int(tokens[b]))
        assert nxt[b].item() == offsets[sentence[b]] + expected
    assert (batch.sentence_of(nxt) == torch.tensor(sentence)).all()


def test_decoding_steps_follow_histories_like_the_direct_lookup():
    ms = matrices(2, 3)
    batch = LMatrixBatch(ms)
    beam = 4
    rows = batch.initial_rows(BOS).repeat_interleave(beam)  # [S * beam]
    histories = [[BOS] for _ in range(len(ms) * beam)]
    gen = torch.Generator().manual_seed(0)
    for step in range(6):
        tokens = torch.randint(1, 9, (rows.numel(),), generator=gen)
        # reorder like a beam step (origin indices within each sentence), then advance
        origin = torch.arange(rows.numel()).view(len(ms), beam)[:, torch.randperm(beam, generator=gen)].reshape(-1)
        rows = batch.next_rows(rows.index_select(0, origin), tokens)
        histories = [histories[o] + [int(t)] for o, t in zip(origin.tolist(), tokens.tolist())]
        for b, h in enumerate(histories):
            s = b // beam
            assert rows[b].item() - batch.row_offsets[s].item() == ms[s].automaton.row_of(h)
    dense = batch.rows(rows)
    for b in range(rows.numel()):
        s = b // beam
        local = rows[b].item() - batch.row_offsets[s].item()
        np.testing.assert_allclose(dense[b].numpy(), ms[s].dense_rows([local])[0], rtol=1e-6, atol=1e-7)


def test_theta0_everywhere_outside_the_evidence_and_empty_lattices():
    empty = build_lmatrix(ngram_posteriors(Lattice.empty()), THETA, VOCAB)
    batch = LMatrixBatch(matrices(3, 1) + [empty])
    rows = torch.cat([batch.empty_rows(), batch.initial_rows(BOS)])
    dense = batch.rows(rows)
    assert torch.all(dense[1] == THETA.values[0]) and torch.all(dense[3] == THETA.values[0])
    assert batch.next_rows(rows[1:2], torch.tensor([5])).item() == batch.row_offsets[1].item()
    outside = torch.tensor([VOCAB - 1, VOCAB - 1])  # never in a lattice of alphabet <= 8
    assert torch.all(dense[[0, 2], VOCAB - 1] == THETA.values[0])
    assert batch.next_rows(rows[[0, 2]], outside).tolist() == [0, 0]


def test_vocabulary_sizes_must_match():
    a = build_lmatrix(ngram_posteriors(Lattice.empty()), THETA, 10)
    b = build_lmatrix(ngram_posteriors(Lattice.empty()), THETA, 11)
    with pytest.raises(ValueError, match="one vocabulary"):
        LMatrixBatch([a, b])
