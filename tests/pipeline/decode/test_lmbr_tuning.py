"""The LMBR grid: points, re-weighted L, and the choice of the best point."""
import pytest

from lattices.lmatrix import build_lmatrix
from lattices.posteriors import ngram_posteriors
from lattices.theta import Theta
from pipeline.decode.lmbr_tuning import GridPoint, ReweightedStore, lmbr_grid, tune_lmbr, tune_lmbr_in_stages
from tests.pipeline.decode.test_lmbr import Store, chain_lattice


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

    def decode(point):
        decoded.append(point)
        return label(point)

    best, results = tune_lmbr_in_stages(0.5, 0.5, [0.25, 0.5, 1.0], [-0.2, 0.0, 0.2], [-0.2, 0.0], [1.0],
                                        ["per_step"], decode, score)
    assert best == GridPoint(0.5, 0.7, 0.3)
    assert len(decoded) == len(set(decoded)) == 3 + 3 * 2 - 1
    assert {p.nmt_lambda for p in decoded[3:]} == {0.5}
    assert [r["bleu"] for r in results] == [score(label(p)) for p in decoded]


def test_tuning_in_stages_keeps_stage_one_when_p_and_r_do_not_help():
    best, results = tune_lmbr_in_stages(0.5, 0.5, [0.25, 1.0], [0.1], [0.0], [1.0], ["per_step"],
                                        lambda point: [str(point.p)], lambda hyps: 5.0)
    assert best == GridPoint(0.25, 0.5, 0.5) and len(results) == 3
