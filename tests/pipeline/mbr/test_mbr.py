"""MBR over a set of translations: every pairwise utility against sacrebleu's own sentence scores, and the selection
against a brute-force expected utility."""
from __future__ import annotations

import random

import numpy as np
import pytest
from sacrebleu import sentence_bleu, sentence_chrf

from pipeline.mbr.selection import mbr_choose
from pipeline.mbr.utility import bleu_matrix, chrf_aggregate, chrf_matrix

WORDS = "the a cat dog sat on mat house small big , . ! it is was there here".split()


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(n)]
    return out + ["", "The cat sat on the mat.", "the cat sat on the mat ."]  # empty, cased, tokenized


@pytest.mark.parametrize("tokenize", ["13a", "intl"])
def test_bleu_matrix_equals_sacrebleus_sentence_bleu_for_every_pair(tokenize):
    hyps, refs = sentences(12, seed=1), sentences(9, seed=2)
    fast = bleu_matrix(hyps, refs, tokenize=tokenize)
    brute = np.array([[sentence_bleu(h, [r], tokenize=tokenize).score for r in refs] for h in hyps])
    assert fast.shape == (len(hyps), len(refs))
    np.testing.assert_allclose(fast, brute, rtol=0, atol=1e-9)


def test_chrf_matrix_equals_sacrebleus_sentence_chrf_for_every_pair():
    hyps, refs = sentences(12, seed=3), sentences(9, seed=4)
    brute = np.array([[sentence_chrf(h, [r]).score for r in refs] for h in hyps])
    np.testing.assert_allclose(chrf_matrix(hyps, refs), brute, rtol=0, atol=1e-9)


def test_reference_aggregation_is_chrf_against_the_mean_counts():
    """With one reference, the mean is that reference; with a reference repeated k times, the same."""
    hyps, refs = sentences(6, seed=5), sentences(1, seed=6)[:1]
    np.testing.assert_allclose(chrf_aggregate(hyps, refs), chrf_matrix(hyps, refs)[:, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(chrf_aggregate(hyps, refs * 3), chrf_matrix(hyps, refs)[:, 0], rtol=0, atol=1e-9)
    # two different references: the candidate equal to one of them scores below 100 (the mean is neither)
    two = ["the cat sat on the mat", "a dog was there"]
    assert chrf_aggregate(two[:1], two)[0] < 100.0


def test_the_choice_maximises_the_brute_force_expected_utility():
    rng = np.random.default_rng(7)
    u = rng.uniform(0, 100, size=(7, 5))
    w = rng.uniform(0.1, 1.0, size=5)
    choice = mbr_choose(u, w)
    brute = [sum(w[r] / w.sum() * u[h, r] for r in range(5)) for h in range(7)]
    np.testing.assert_allclose(choice.expected, brute, rtol=0, atol=1e-9)
    assert choice.index == int(np.argmax(brute))
    # leaving out a candidate's own pair renormalises its weights over the others
    exclude = np.zeros((7, 5), dtype=bool)
    exclude[0, 0] = True
    left = mbr_choose(u, None, exclude).expected
    assert left[0] == pytest.approx(u[0, 1:].mean(), abs=1e-12) and left[1] == pytest.approx(u[1].mean(), abs=1e-12)


def test_the_same_utilities_give_the_same_choice_and_ties_go_to_the_first():
    u = np.array([[50.0, 50.0], [60.0, 40.0], [40.0, 60.0]])
    assert [mbr_choose(u).index for _ in range(3)] == [0, 0, 0]


@pytest.mark.parametrize("utilities, weights", [(np.zeros((0, 3)), None), (np.zeros((2, 3)), np.ones(2)),
                                                 (np.zeros((2, 3)), -np.ones(3))])
def test_bad_shapes_and_weights_are_clear_errors(utilities, weights):
    with pytest.raises(ValueError, match="utilities must be|weights must be"):
        mbr_choose(utilities, weights)


def test_mbr_over_samples_with_sentence_bleu_picks_the_consensus():
    samples = ["the cat sat on the mat", "the cat sat on a mat", "the cat sat on the mat", "a dog ran"]
    choice = mbr_choose(bleu_matrix(samples, samples))
    assert samples[choice.index] == "the cat sat on the mat"
