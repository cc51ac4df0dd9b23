import numpy as np
import pytest
from sacrebleu.metrics import BLEU

from pipeline.smt.features import FEATURES, TUNED, Weights
from pipeline.smt.lattice import Hypothesis
from pipeline.smt.mert import MertSettings, NbestPool, bleu_stats, corpus_bleu, line_search, optimize, run_mert

TUNED_MASK = np.array([f in TUNED for f in FEATURES])


def test_bleu_statistics_match_sacrebleu():
    hyps = ["the cat sat on the mat", "a b c d e f g", "x y z"]
    refs = ["the cat sat on a mat today", "a b c d e f g", "x y w z"]
    stats = sum(bleu_stats(h.split(), r.split()) for h, r in zip(hyps, refs))
    expected = BLEU(tokenize="none", smooth_method="none").corpus_score(hyps, [refs])
    assert 100 * corpus_bleu(stats) == pytest.approx(expected.score, abs=1e-9)
    assert bleu_stats(["the", "the", "the"], ["the", "cat"])[0] == 1  # clipped
    assert corpus_bleu(bleu_stats(["x"], ["y"])) == 0.0
    np.testing.assert_allclose(corpus_bleu(np.stack([stats, stats])), [corpus_bleu(stats)] * 2)


def synthetic(seed: int, sentences: int = 60, candidates: int = 15):
    """n-best lists built from true weights: the better a candidate under them, the closer to the reference."""
    rng = np.random.default_rng(seed)
    true = np.where(TUNED_MASK, rng.normal(size=len(FEATURES)), 0.0)
    true /= np.abs(true).sum()
    refs, nbests = [], []
    for s in range(sentences):
        ref = [f"w{s}_{k}" for k in range(10)]
        feats = rng.normal(size=(candidates, len(FEATURES))) * TUNED_MASK
        rank = np.argsort(-(feats @ true))
        hyps = [None] * candidates
        for quality, c in enumerate(rank):  # quality 0 = the reference itself, then more and more words wrong
            words = [w if k >= quality else f"bad{c}_{k}" for k, w in enumerate(ref)]
            hyps[c] = Hypothesis(tuple(words), feats[c], float(feats[c] @ true))
        refs.append(ref)
        nbests.append(hyps)
    return true, refs, nbests


def pool_of(refs, nbests) -> NbestPool:
    pool = NbestPool(refs)
    for k, hyps in enumerate(nbests):
        pool.add(k, hyps)
    return pool


def test_line_search_is_exact_on_a_grid():
    _, refs, nbests = synthetic(0, sentences=20, candidates=8)
    feats, stats, valid = pool_of(refs, nbests).arrays()
    rng = np.random.default_rng(1)
    w, d = rng.normal(size=len(FEATURES)), rng.normal(size=len(FEATURES))

    def bleu_at(g):
        scores = np.where(valid, feats @ (w + g * d), -np.inf)
        return corpus_bleu(stats[np.arange(len(feats)), scores.argmax(axis=1)].sum(axis=0))

    gamma, best = line_search(feats, stats, valid, w, d)
    grid = max(bleu_at(g) for g in np.linspace(-20, 20, 4001))
    assert best >= grid - 1e-12
    assert bleu_at(gamma) == pytest.approx(best)


def test_optimize_recovers_the_weights_the_nbest_lists_were_built_from():
    true, refs, nbests = synthetic(1)
    feats, stats, valid = pool_of(refs, nbests).arrays()
    start = Weights.default().vector
    w, bleu = optimize(feats, stats, valid, start, np.random.default_rng(0), random_directions=4, restarts=4)
    assert bleu == pytest.approx(1.0)  # every sentence's reference-identical candidate on top
    assert all(max(h, key=lambda x: x.features @ w).words == tuple(r) for h, r in zip(nbests, refs))
    cosine = w[TUNED_MASK] @ true[TUNED_MASK] / np.linalg.norm(w[TUNED_MASK]) / np.linalg.norm(true[TUNED_MASK])
    assert cosine > 0.99
    assert np.abs(w[TUNED_MASK]).sum() == pytest.approx(1.0) and w[FEATURES.index("unknown")] == start[FEATURES.index("unknown")]


def test_run_mert_merges_nbest_lists_and_stops_when_they_stop_growing():
    true, refs, nbests = synthetic(3, sentences=40, candidates=30)
    calls = []

    def decode(weights: Weights):  # a "decoder" that returns the 5 best of a fixed candidate set
        calls.append(weights)
        return [sorted(h, key=lambda x: -weights.score(x.features))[:5] for h in nbests]

    weights, history = run_mert(decode, refs, Weights.default(), MertSettings(iterations=10, nbest=5,
                                                                             random_directions=3, restarts=3))
    assert history[-1]["new_hypotheses"] == 0 or len(history) == 10
    assert [h["pool"] for h in history] == sorted(h["pool"] for h in history)
    assert history[0]["pool"] == 5 * 40
    assert history[-1]["decoded_bleu"] > history[0]["decoded_bleu"]
    picked = [max(h, key=lambda x: weights.score(x.features)) for h in nbests]
    assert corpus_bleu(sum(bleu_stats(p.words, r) for p, r in zip(picked, refs))) > 0.9


def test_pool_drops_duplicates():
    pool = NbestPool([["a", "b"]])
    h = Hypothesis(("a", "b"), np.ones(len(FEATURES)), 1.0)
    assert pool.add(0, [h, h]) == 1 and pool.add(0, [h]) == 0 and pool.size() == 1


def test_run_mert_returns_the_weights_that_decoded_best():
    true, refs, nbests = synthetic(4, sentences=20, candidates=10)
    initial = Weights.default()

    def decode(weights: Weights):  # any weights but the initial ones decode to garbage (outside the pool)
        if np.array_equal(weights.vector, initial.vector):
            return [sorted(h, key=lambda x: -weights.score(x.features))[:5] for h in nbests]
        return [[Hypothesis(("garbage",), np.full(len(FEATURES), k + 0.5), 0.0)] for k in range(len(nbests))]

    weights, history = run_mert(decode, refs, initial, MertSettings(iterations=3, nbest=5, restarts=1))
    assert len(history) >= 2 and history[1]["decoded_bleu"] == 0.0
    assert np.array_equal(weights.vector, initial.vector)


def test_bleu_statistics_equal_their_definition_with_and_without_kept_reference_counts():
    """Clipped matches counted n-gram by n-gram from slices, on random sentences over a small vocabulary."""
    import random

    from pipeline.smt.mert import ngram_counts

    rng = random.Random(3)
    for _ in range(200):
        hyp = [rng.choice("abcd") for _ in range(rng.randint(0, 12))]
        ref = [rng.choice("abcde") for _ in range(rng.randint(1, 12))]
        expected = []
        for n in range(1, 5):
            grams = [tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1)]
            ref_grams = [tuple(ref[i:i + n]) for i in range(len(ref) - n + 1)]
            expected.append(sum(min(grams.count(g), ref_grams.count(g)) for g in set(grams)))
        expected += [max(len(hyp) - n + 1, 0) for n in range(1, 5)] + [len(ref)]
        assert bleu_stats(hyp, ref).tolist() == expected
        assert bleu_stats(tuple(hyp), ref, ngram_counts(ref)).tolist() == expected
