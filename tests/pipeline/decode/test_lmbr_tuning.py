"""The LMBR grid: points, re-weighted L, and the choice of the best point."""
import pytest

from lattices.lmatrix import build_lmatrix
from lattices.posteriors import ngram_posteriors
from lattices.theta import Theta
import math
import random

from pipeline.decode.lmbr_tuning import (GridPoint, ReweightedStore, best_bleu, lmbr_grid, race_grid, tune_lmbr,
                                         tune_lmbr_in_stages)
from tests.pipeline.decode.test_lmbr_hook import Store, chain_lattice


def test_grid_moves_p_and_r_within_bounds_and_drops_duplicates():
    grid = lmbr_grid(0.95, 0.5, [0.5, 1.0], [-0.1, 0.0, 0.1], [0.0])
    assert grid == [GridPoint(0.5, 0.85, 0.5), GridPoint(0.5, 0.95, 0.5), GridPoint(0.5, 1.0, 0.5),
                    GridPoint(1.0, 0.85, 0.5), GridPoint(1.0, 0.95, 0.5), GridPoint(1.0, 1.0, 0.5)]
    assert len(lmbr_grid(1.0, 1.0, [1.0], [0.0, 0.1, 0.2], [0.0])) == 1  # all clipped to p = 1


def test_reweighted_store_gives_l_under_the_new_theta():
    matrix = build_lmatrix(ngram_posteriors(chain_lattice((4, 5))), Theta.from_p_r(0.6, 0.5), 6)
    theta = Theta.from_p_r(0.8, 0.4, "scaled", 10.0)
    (again,) = ReweightedStore(Store({0: matrix}), theta).get([0])
    assert list(again.theta) == pytest.approx(list(theta.values))
    expected = build_lmatrix(matrix.posteriors, theta, 6)
    assert (again.dense_rows([0, 1]) == expected.dense_rows([0, 1])).all()


def test_tune_picks_the_best_point_and_the_first_of_ties():
    grid = lmbr_grid(0.5, 0.5, [0.25, 0.5, 1.0], [0.0], [0.0])
    scores = {0.25: 10.0, 0.5: 12.0, 1.0: 12.0}
    best, results = tune_lmbr(grid, lambda point: [str(point.nmt_lambda)], lambda hyps: scores[float(hyps[0])])
    assert best == GridPoint(0.5, 0.5, 0.5) and [r["bleu"] for r in results] == [10.0, 12.0, 12.0]
    with pytest.raises(ValueError, match="grid is empty"):
        tune_lmbr([], lambda p: [], lambda h: 0.0)


def test_grid_tries_every_alpha_innermost():
    grid = lmbr_grid(0.5, 0.5, [0.25, 1.0], [0.0], [0.0], [1.0, 0.5])
    assert grid == [GridPoint(0.25, 0.5, 0.5, 1.0), GridPoint(0.25, 0.5, 0.5, 0.5),
                    GridPoint(1.0, 0.5, 0.5, 1.0), GridPoint(1.0, 0.5, 0.5, 0.5)]
    assert {point.alpha for point in lmbr_grid(0.5, 0.5, [1.0], [0.0], [0.0])} == {1.0}  # default: one alpha


def test_tuning_in_stages_moves_p_and_r_around_the_best_lambda_only():
    """A score with its optimum at lambda 0.5, p 0.7, r 0.3: stage 1 finds lambda (p, r at the start), stage 2 p
    and r; nothing is decoded twice, and nothing off the two stages is decoded at all."""
    def score(hyps):
        lam, p, r = map(float, hyps[0].split())
        return -abs(lam - 0.5) - abs(p - 0.7) - abs(r - 0.3)

    decoded = []

    def label(point):
        return [f"{point.nmt_lambda} {point.p} {point.r}"]

    def decode(point, span):
        assert span == range(0, 1)
        decoded.append(point)
        return label(point)

    best, results = tune_lmbr_in_stages(0.5, 0.5, [0.25, 0.5, 1.0], [-0.2, 0.0, 0.2], [-0.2, 0.0], [1.0],
                                        ["per_step"], decode, score, 1)
    assert best == GridPoint(0.5, 0.7, 0.3)
    assert len(decoded) == len(set(decoded)) == 3 + 3 * 2 - 1
    assert {p.nmt_lambda for p in decoded[3:]} == {0.5}
    assert [r["bleu"] for r in results] == [score(label(p)) for p in decoded]


def test_tuning_in_stages_keeps_stage_one_when_p_and_r_do_not_help():
    best, results = tune_lmbr_in_stages(0.5, 0.5, [0.25, 1.0], [0.1], [0.0], [1.0], ["per_step"],
                                        lambda point, span: [str(point.p)], lambda hyps: 5.0, 1)
    assert best == GridPoint(0.25, 0.5, 0.5) and len(results) == 3


def _race_table(points: int, sentences: int, seed: int) -> dict[GridPoint, list[float]]:
    """A made-up BLEU contribution of each point's output of each sentence."""
    rng = random.Random(seed)
    return {GridPoint(float(k + 1), 0.5, 0.5): [rng.random() + k % 3 * 0.05 for _ in range(sentences)]
            for k in range(points)}


def test_race_keeps_the_best_third_at_each_prefix_and_decodes_each_sentence_once():
    """Brute force: at each checkpoint the points that go on are the best ceil(n / 3) by the mean over the prefix;
    a survivor's last score is its mean over all sentences; the winner is the best survivor."""
    for seed in range(20):
        table, sentences, checkpoints = _race_table(28, 100, seed), 100, (25, 50)
        decoded: dict[GridPoint, list[int]] = {point: [] for point in table}

        def decode(point, span):
            decoded[point] += list(span)
            return [f"{point.nmt_lambda} {i}" for i in span]

        def score(outputs):
            return sum(table[GridPoint(float(o.split()[0]), 0.5, 0.5)][int(o.split()[1])] for o in outputs) / len(outputs)

        best, results = race_grid(list(table), decode, score, sentences, checkpoints)
        alive = list(table)
        for stop in (25, 50):
            means = {point: sum(table[point][:stop]) / stop for point in alive}
            ranked = sorted(alive, key=lambda point: -means[point])
            alive = [point for point in alive if point in ranked[:math.ceil(len(alive) / 3)]]
        assert len(alive) == 4
        assert {GridPoint(r["nmt_lambda"], 0.5, 0.5) for r in results if "eliminated_at" not in r} == set(alive)
        full = {point: sum(table[point]) / sentences for point in alive}
        assert best == max(alive, key=lambda point: full[point])
        assert best_bleu(results) == full[best]
        for point, indices in decoded.items():
            assert indices == list(range(len(indices))) and len(indices) in (25, 50, 100)
            record = results[list(table).index(point)]
            assert record.get("eliminated_at", 100) == len(indices)
            assert record["bleu"] == sum(table[point][:len(indices)]) / len(indices)


def test_race_finalists_decode_the_whole_window():
    """Brute force: with finalists, at each checkpoint the best max(finalists, ceil(n / 3)) go on, so at least
    `finalists` points decode every sentence and the winner is the best of them on the whole window."""
    for seed in range(20):
        table, sentences, checkpoints = _race_table(7, 100, seed), 100, (25, 50)

        def decode(point, span):
            return [f"{point.nmt_lambda} {i}" for i in span]

        def score(outputs):
            return sum(table[GridPoint(float(o.split()[0]), 0.5, 0.5)][int(o.split()[1])] for o in outputs) / len(outputs)

        best, results = race_grid(list(table), decode, score, sentences, checkpoints, finalists=3)
        alive = list(table)
        for stop in checkpoints:
            means = {point: sum(table[point][:stop]) / stop for point in alive}
            ranked = sorted(alive, key=lambda point: -means[point])
            alive = [point for point in alive if point in ranked[:max(3, math.ceil(len(alive) / 3))]]
        assert len(alive) == 3
        assert {GridPoint(r["nmt_lambda"], 0.5, 0.5) for r in results if "eliminated_at" not in r} == set(alive)
        assert best == max(alive, key=lambda point: sum(table[point]))


def test_finalists_keep_a_point_that_only_the_whole_window_shows_best():
    """A point ahead after 2 sentences but behind over all 10: one finalist keeps the prefix's leader, three
    finalists let the whole window decide."""
    per_sentence = {GridPoint(0.1, 0.5, 0.5): [1.0] * 2 + [0.0] * 8,   # leads the prefix, worst overall
                    GridPoint(0.2, 0.5, 0.5): [0.5] * 10,
                    GridPoint(0.3, 0.5, 0.5): [0.0] * 2 + [0.9] * 8}   # last on the prefix, best overall

    def decode(point, span):
        return [f"{point.nmt_lambda} {i}" for i in span]

    def score(outputs):
        return sum(per_sentence[GridPoint(float(o.split()[0]), 0.5, 0.5)][int(o.split()[1])]
                   for o in outputs) / len(outputs)

    grid = list(per_sentence)
    assert race_grid(grid, decode, score, 10, (2,), keep=0.3)[0] == grid[0]
    best, results = race_grid(grid, decode, score, 10, (2,), keep=0.3, finalists=3)
    assert best == grid[2] and not any("eliminated_at" in r for r in results)


def test_race_without_checkpoints_is_the_full_grid():
    table = _race_table(6, 10, 3)
    calls = []

    def decode(point, span):
        calls.append(span)
        return [f"{point.nmt_lambda} {i}" for i in span]

    def score(outputs):
        return sum(table[GridPoint(float(o.split()[0]), 0.5, 0.5)][int(o.split()[1])] for o in outputs)

    best, results = race_grid(list(table), decode, score, 10)
    assert calls == [range(0, 10)] * 6 and not any("eliminated_at" in r for r in results)
    assert (best, results) == tune_lmbr(list(table), lambda point: decode(point, range(0, 10)), score)
    assert best == max(table, key=lambda point: sum(table[point]))


def test_race_breaks_ties_by_grid_order_and_keeps_at_least_one():
    grid = lmbr_grid(0.5, 0.5, [0.1, 0.2, 0.3], [0.0], [0.0])
    best, results = race_grid(grid, lambda point, span: ["x"] * len(span), lambda outputs: 1.0, 9, (3,), keep=0.01)
    assert best == grid[0] and [r.get("eliminated_at") for r in results] == [None, 3, 3]
