"""Decoding modes that part over rounding are recorded, never fatal (pipeline/decode/divergence.py, speed.py)."""
from __future__ import annotations

import torch

from pipeline.decode.divergence import compare_outputs, merge_comparisons, summary_line
from pipeline.decode.finalize import Hypothesis
from pipeline.decode.speed import speed_vs_batch, speed_vs_beam, streaming_vs_batching
from tests.pipeline.decode.helpers import PrefixModel


class ShapeSensitiveModel(PrefixModel):
    """PrefixModel whose log-probabilities move by a tiny amount that depends on how many rows a query holds, as
    float32 products of other shapes round differently; `nudge` large enough turns near-ties around."""

    def __init__(self, nudge: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.nudge = nudge

    def step(self, state, prev):
        log_probs, after = super().step(state, prev)
        rows = prev.shape[0]
        shift = self.nudge * torch.sin(torch.arange(log_probs.shape[1], dtype=log_probs.dtype) * rows)
        return log_probs + shift, after


def hyp(tokens, score):
    return Hypothesis(tuple(tokens), score, score)


def test_compare_outputs_lists_each_differing_sentence_with_both_scores_and_lengths():
    reference = [[hyp([3, 4], -1.5)], [hyp([5], -0.25)], [], [hyp([3], -2.0)]]
    other = [[hyp([3, 4], -1.5)], [hyp([5, 5, 5], -0.5), hyp([5], -0.6)], [], [hyp([4], -2.25)]]
    result = compare_outputs(reference, other)
    assert result["sentences"] == 4 and result["identical"] == 2
    assert result["differing"] == [
        {"sentence": 1, "reference_score": -0.25, "other_score": -0.5, "reference_length": 1, "other_length": 3},
        {"sentence": 3, "reference_score": -2.0, "other_score": -2.25, "reference_length": 1, "other_length": 1}]
    assert result["max_score_gap"] == 0.25
    assert summary_line(result) == "2 of 4 sentences differ (largest score gap 0.25000)"
    assert summary_line(compare_outputs(reference, reference)) == "identical outputs"
    total = merge_comparisons([result, compare_outputs(reference, reference)])
    assert total == {"comparisons": 2, "sentences": 8, "identical": 6, "max_score_gap": 0.25}


def test_measurements_record_outputs_that_part_instead_of_failing():
    sources = [[3 + (i * 7 + j) % 5 for j in range(2 + i % 5)] + [2] for i in range(24)]
    words = [len(s) - 1 for s in sources]
    exact = PrefixModel(vocab=7, seed=3)
    rows = speed_vs_beam(exact, sources, words, beams=(1, 3), runs=1)
    assert all(r["identical_outputs"] and r["comparison"]["differing"] == [] for r in rows)

    model = ShapeSensitiveModel(nudge=0.3, vocab=7, seed=3)
    rows = speed_vs_beam(model, sources, words, beams=(3,), runs=1)  # batched rows 3, unbatched 1: scores differ
    comparison = rows[0]["comparison"]
    assert rows[0]["differing_sentences"] == len(comparison["differing"]) > 0
    assert comparison["max_score_gap"] > 0
    figure3 = speed_vs_batch(model, sources, words, batch_sizes=(1, 4), beam=3, runs=1)
    assert figure3[0]["sorted_comparison"]["identical"] == len(sources)  # the reference itself
    # one sentence per batch is the same decoding in either order: timed once, for both
    assert figure3[0]["unsorted_seconds"] == figure3[0]["sorted_seconds"]
    assert figure3[0]["unsorted_comparison"]["identical"] == len(sources)
    assert figure3[1]["sorted_comparison"]["identical"] < len(sources)
    streaming = streaming_vs_batching(model, sources, words, pool=4, beam=3, refill=0.25, runs=1)
    assert {"batched_comparison", "streaming_comparison"} <= set(streaming[0])
