"""The step modules alone: scores.py, topk.py, finalize.py, hooks.py, batching.py."""
import math

import pytest
import torch

from pipeline.decode.batching import make_batches, position_limit
from pipeline.decode.finalize import BackoffStack, best_hypotheses, normalized_score
from pipeline.decode.hooks import ChainHook, ScoreHook, SentenceMaskHook
from pipeline.decode.scores import NEG_INF, candidate_grid, force_eos, max_output_lengths, slot_rows
from pipeline.decode.topk import CHUNK, full_beam_candidates, prune_below_threshold, row_topk, top_candidates
from pipeline.nmt.interface import Ensemble
from tests.pipeline.nmt.conftest import digit_vocab, make_model

INF = math.inf


def test_max_output_lengths_from_the_source_without_its_eos():
    lengths = torch.tensor([1, 2, 5, 40])  # encoder lengths: subwords + EOS
    assert max_output_lengths(lengths, 1.5, 2).tolist() == [2, 3, 8, 60]
    assert max_output_lengths(lengths, 0.0, 0).tolist() == [0, 0, 0, 0]
    assert max_output_lengths(lengths, 2.0, 10, position_limit=32).tolist() == [10, 12, 18, 31]


def test_force_eos_leaves_only_eos_on_the_rows_at_their_limit():
    scores = torch.arange(12.0).view(3, 4)
    out = force_eos(scores, torch.tensor([False, True, False]), eos_id=2)
    assert out[1].tolist() == [-INF, -INF, 6.0, -INF] and out[0].tolist() == [0, 1, 2, 3]
    assert scores[1, 0] == 4.0  # the input is not modified


def test_candidate_grid_places_rows_in_their_slots():
    candidates = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    grid = candidate_grid(candidates, torch.tensor([0, 3, 4]), num_sentences=2, beam=3)
    assert grid.tolist() == [[1, 2, -INF, -INF, -INF, -INF], [3, 4, 5, 6, -INF, -INF]]
    full = candidate_grid(candidates, torch.arange(3), num_sentences=1, beam=3)
    assert full.data_ptr() == candidates.data_ptr()  # every slot live: a view, no copy
    assert slot_rows(torch.tensor([0, 3, 4]), 6).tolist() == [0, -1, -1, 1, 2, -1]


def test_threshold_prunes_exactly_the_candidates_below_it():
    grid = torch.log(torch.tensor([[0.5, 0.005, 0.0051, 0.2, 0.00499], [0.1, 0.0011, 0.00099, 0.0, 0.05]]))
    pruned = prune_below_threshold(grid.clone(), 0.01).exp()
    # sentence 0: best 0.5, cut 0.005: 0.005 itself stays (not below), 0.00499 goes; sentence 1: best 0.1, cut 0.001
    assert (pruned > 0).tolist() == [[True, True, True, True, False], [True, True, False, False, True]]
    assert torch.equal(prune_below_threshold(grid.clone(), 0.0), grid)
    only_best = prune_below_threshold(grid.clone(), 1.0)
    assert (only_best > NEG_INF).sum(1).tolist() == [1, 1]


def test_top_candidates_decomposes_into_origin_slot_and_token():
    grid = torch.tensor([[0.0, -1.0, -5.0, -0.5, -2.0, -0.1]])  # 2 slots x V 3, top 3
    top = top_candidates(grid, beam=3, vocab_size=3)
    assert top.origin.tolist() == [[0, 1, 1]] and top.tokens.tolist() == [[0, 2, 0]]
    assert top.scores[0].tolist() == pytest.approx([0.0, -0.1, -0.5])
    dead = top_candidates(torch.tensor([[0.0, -INF, -INF, -INF]]), beam=2, vocab_size=2)
    assert dead.alive.tolist() == [[True, False]]


@pytest.mark.parametrize("width", [8 * 4 * CHUNK, 4 * 8000, 4 * 8003 + 1, 2 * 32011])
@pytest.mark.parametrize("k", [1, 4, 8])
def test_row_topk_equals_torch_topk_on_wide_rows(width, k):
    g = torch.Generator().manual_seed(width + k)
    grid = torch.randn(6, width, generator=g)
    grid[0, : width // 2] = -INF                                  # empty slots
    grid[1, 5 * CHUNK: 5 * CHUNK + 2 * k] += 10                   # the best all in one block
    grid[2, torch.arange(k) * (width // k)] += 10                 # the best in k blocks far apart
    grid[3, width - 1] += 10                                      # the best in the tail
    grid[4, :] = -INF
    grid[4, 7] = 0.0                                              # fewer finite entries than k
    grid[5, :] = torch.randn(width, generator=g).round()          # ties everywhere
    want, got = grid.topk(k, dim=1), row_topk(grid, k)
    assert torch.equal(got[0], want.values)
    assert torch.equal(grid.gather(1, got[1]), got[0])            # every index holds its score
    assert got[1][:4].tolist() == want.indices[:4].tolist()       # no ties: the same indices
    assert all(len(set(row)) == k for row in got[1].tolist())


def test_row_topk_of_narrow_rows_is_torch_topk():
    grid = torch.tensor([[0.0, 3.0, 3.0, -1.0, 2.0]])
    scores, index = row_topk(grid, 3)
    want = grid.topk(3, dim=1)
    assert torch.equal(scores, want.values) and torch.equal(index, want.indices)


def test_full_beam_keeps_b_live_candidates_and_ends_the_eos_among_the_top_b():
    # one sentence, beam 2, vocabulary 3 (EOS = 2): slot 0 [-1, -5, -0.5], slot 1 [-2, -3, -0.7]
    grid = torch.tensor([[-1.0, -5.0, -0.5, -2.0, -3.0, -0.7]])
    live, ending = full_beam_candidates(grid, beam=2, vocab_size=3, eos_id=2)
    assert live.scores.tolist() == [[-1.0, -2.0]] and live.tokens.tolist() == [[0, 0]]
    assert live.origin.tolist() == [[0, 1]]  # the two best non-EOS of the top 4 (-0.5, -0.7, -1, -2)
    assert ending.alive.tolist() == [[True, True]] and ending.tokens.tolist() == [[2, 2]]
    assert ending.scores[0].tolist() == pytest.approx([-0.5, -0.7]) and ending.origin.tolist() == [[0, 1]]
    # an EOS at rank 3 of 4 does not end: only the top B ranks finish
    grid = torch.tensor([[-1.0, -2.0, -3.0, -1.5, -9.0, -9.0]])
    live, ending = full_beam_candidates(grid, beam=2, vocab_size=3, eos_id=2)
    assert not ending.alive.any() and live.scores.tolist() == [[-1.0, -1.5]]


def test_best_hypotheses_rank_by_normalised_score():
    entries = [(-3.0, (5, 6, 7)), (-2.0, (5,)), (-INF, (9,)), (-2.5, (5, 6))]
    assert [h.tokens for h in best_hypotheses(entries, 5, 0.0)] == [(5,), (5, 6), (5, 6, 7)]
    assert [h.tokens for h in best_hypotheses(entries, 2, 1.0)] == [(5, 6, 7), (5, 6)]  # -0.75, -0.83, -1.0
    assert normalized_score(-6.0, 3, 1.0) == -2.0 and normalized_score(-6.0, 3, 0.0) == -6.0


def test_backoff_stack_keeps_the_best_k_per_sentence():
    stack = BackoffStack(num_sentences=2, k=2, capacity=3, device=torch.device("cpu"))
    history = torch.tensor([[4], [5], [6]])  # rows of step 1
    stack.offer(torch.tensor([[-1.0, -3.0], [-2.0, -INF]]), torch.tensor([[0, 1], [2, -1]]), history)
    assert stack.entries(0) == [(-1.0, (4,)), (-3.0, (5,))] and stack.entries(1) == [(-2.0, (6,))]
    history = torch.tensor([[4, 7], [6, 8]])
    stack.offer(torch.tensor([[-2.0, -9.0], [-0.5, -INF]]), torch.tensor([[0, -1], [1, -1]]), history)
    assert stack.entries(0) == [(-1.0, (4,)), (-2.0, (4, 7))]
    assert stack.entries(1) == [(-0.5, (6, 8)), (-2.0, (6,))]
    stack.select(torch.tensor([1]))
    assert stack.entries(0) == [(-0.5, (6, 8)), (-2.0, (6,))]


def test_a_backoff_stack_joined_steps_later_keeps_its_prefixes_behind_placeholders():
    running = BackoffStack(num_sentences=1, k=2, capacity=4, device=torch.device("cpu"))
    late = BackoffStack(num_sentences=1, k=2, capacity=3, device=torch.device("cpu"))
    late.offer(torch.tensor([[-1.0, -INF]]), torch.tensor([[0, -1]]), torch.tensor([[9]]))  # its own step 1
    running.merge(late, shift=2)                       # joined a batch 2 steps on: its histories are [_, _, 9, ...]
    assert running.capacity == 5 and running.entries(1) == [(-1.0, (0, 0, 9))]
    history = torch.tensor([[1, 2, 3], [0, 0, 9]])     # the joined batch at its step 3
    running.offer(torch.tensor([[-INF, -INF], [-0.5, -INF]]), torch.tensor([[0, -1], [1, -1]]), history)
    assert running.entries(1, start=2) == [(-0.5, (9,)), (-1.0, (9,))] and running.entries(0) == []


def test_sentence_mask_hook_follows_rows_and_sentences():
    forbidden = torch.tensor([[False, True, False], [False, False, True], [True, False, False]])
    hook = SentenceMaskHook(forbidden)
    hook.reorder(torch.tensor([0, 0, 1, 2, 2]))          # rows of sentences 0, 0, 1, 2, 2
    hook.select_sentences(torch.tensor([0, 2]))          # sentence 1 finished (its row was not in the index)
    hook.reorder(torch.tensor([0, 3, 4]))               # rows: sentence 0, then sentence 2 twice
    out = ChainHook([ScoreHook(), hook]).scores(torch.zeros(3, 3), t=1)
    assert torch.isinf(out).tolist() == [[False, True, False], [True, False, False], [True, False, False]]


def test_batches_sorted_longest_first_or_in_input_order():
    lengths = [3, 9, 1, 9, 5]
    assert make_batches(lengths, 2, sort=True) == [[1, 3], [4, 0], [2]]
    assert make_batches(lengths, 2, sort=False) == [[0, 1], [2, 3], [4]]
    assert make_batches([], 3) == []
    with pytest.raises(ValueError):
        make_batches(lengths, 0)


def test_position_limit_of_models_and_ensembles():
    vocab = digit_vocab()
    transformer = make_model("transformer", vocab, max_positions=64)
    assert position_limit(transformer) == 64 and position_limit(make_model("gru", vocab)) is None
    assert position_limit(Ensemble([make_model("gru", vocab), transformer])) == 64
