"""The tie rule of LMBR tuning ([lmbr] tie_bleu): points within the tolerance of the best tuning BLEU tie, and the
simplest wins (pipeline/decode/lmbr_tuning.py: choose, simplicity), on constructed scores."""
import dataclasses

from pipeline.decode.lmbr_tuning import (GridPoint, RescoringPoint, choose, race_grid, simplicity,
                                         tune_lmbr_in_stages)
from tasks.tuning import choose_search


def _scores(*pairs):
    return dict(pairs)


def test_tie_zero_is_the_rule_of_before_the_best_then_grid_order():
    bounded = GridPoint(0.002, 0.5, 0.5, gains="bounded")
    per_step = GridPoint(0.5, 0.5, 0.5)
    assert choose(_scores((bounded, 20.0), (per_step, 19.99))) == bounded
    assert choose(_scores((bounded, 20.0), (per_step, 20.0))) == bounded  # exact tie: the first in grid order


def test_within_the_tolerance_the_simpler_point_wins_key_by_key():
    # gains: per_step before bounded, whatever the other keys
    bounded, per_step = GridPoint(0.5, 0.5, 0.5, gains="bounded"), GridPoint(0.001, 0.5, 0.5)
    assert choose(_scores((bounded, 20.0), (per_step, 19.8)), tie=0.3) == per_step
    assert choose(_scores((bounded, 20.0), (per_step, 19.6)), tie=0.3) == bounded  # outside the tolerance
    # the evidence space: the full lattice (0) before the 200-best
    full, nbest = GridPoint(0.5, 0.5, 0.5, nbest=0), GridPoint(0.5, 0.5, 0.5, nbest=200)
    assert choose(_scores((nbest, 20.0), (full, 19.9)), tie=0.3) == full
    # lambda nearer the paper's 0.5, on a log scale: 0.1 (x5) before 0.002, and 2.0 (x4) before 0.1
    small, mid, large = (GridPoint(lam, 0.5, 0.5) for lam in (0.002, 0.1, 2.0))
    assert choose(_scores((small, 20.0), (mid, 19.9)), tie=0.3) == mid
    assert choose(_scores((small, 20.0), (mid, 19.9), (large, 19.8)), tie=0.3) == large
    # p and r nearer the PBMT's
    near, far = GridPoint(0.5, 0.6, 0.5), GridPoint(0.5, 0.9, 0.7)
    assert choose(_scores((far, 20.0), (near, 19.95)), tie=0.1,
                  simpler=lambda point: simplicity(point, 0.6, 0.5)) == near
    # points equal under every key (the profile's evidence space and the full lattice): grid order
    profile_space, full_lattice = GridPoint(0.5, 0.5, 0.5, nbest=-1), GridPoint(0.5, 0.5, 0.5, nbest=0)
    assert choose(_scores((profile_space, 19.8), (full_lattice, 20.0)), tie=0.3) == profile_space
    assert choose(_scores((full_lattice, 19.8), (profile_space, 20.0)), tie=0.3) == full_lattice


def test_the_order_of_simplicity_ranks_gains_before_evidence_before_lambda():
    per_step_200 = GridPoint(0.002, 0.5, 0.5, nbest=200)
    bounded_full = GridPoint(0.5, 0.5, 0.5, nbest=0, gains="bounded")
    full_far = GridPoint(0.001, 0.5, 0.5, nbest=0)
    ranked = sorted([bounded_full, per_step_200, full_far], key=simplicity)
    assert ranked == [full_far, per_step_200, bounded_full]
    # for lattice rescoring, the smaller mu
    assert simplicity(RescoringPoint(0.5, 0.5, 0.5, lattice_weight=3.0)) < \
        simplicity(RescoringPoint(0.5, 0.5, 0.5, lattice_weight=30.0))


def test_a_race_keeps_every_point_within_the_tolerance_of_the_last_one_going_on():
    """keep = 1/4 of 4 points keeps one; with the tolerance, those within it of that one go on too, and the final
    choice among the finishers goes to the simplest."""
    grid = [GridPoint(0.002, 0.5, 0.5, gains="bounded"), GridPoint(0.5, 0.5, 0.5), GridPoint(0.02, 0.5, 0.5),
            GridPoint(0.05, 0.5, 0.5)]
    prefix = {grid[0]: 10.0, grid[1]: 9.9, grid[2]: 9.0, grid[3]: 9.85}
    full = {grid[0]: 20.0, grid[1]: 19.8, grid[2]: 25.0, grid[3]: 19.9}

    def score(outputs):
        point, n = outputs[0], len(outputs)
        return (prefix if n <= 3 else full)[point]

    def decode(point, span):
        return [point] * len(span)

    best, results = race_grid(grid, decode, score, 9, (3,), keep=0.25)
    assert best == grid[0] and [r.get("eliminated_at") for r in results] == [None, 3, 3, 3]
    best, results = race_grid(grid, decode, score, 9, (3,), keep=0.25, tie=0.2)
    assert [r.get("eliminated_at") for r in results] == [None, None, 3, None]
    assert best == grid[1]  # 19.8 ties 20.0 within 0.2 (and 19.9): lambda 0.5, per_step, is the simplest


def test_stage_two_must_beat_stage_one_by_more_than_the_tolerance():
    """p and r offsets (stage 2) replace the PBMT's p and r only when they gain more than tie_bleu."""
    bleu = {(0.5, 0.0, 0.0): 20.0, (0.5, 0.2, 0.0): 20.2}

    def decode(point, span):
        return [(point.nmt_lambda, round(point.p - 0.5, 6), round(point.r - 0.5, 6))] * len(span)

    def score(outputs):
        return bleu.get(outputs[0], 0.0)

    args = (0.5, 0.5, [0.5], [0.0, 0.2], [0.0], [1.0], ["per_step"], decode, score, 4)
    assert tune_lmbr_in_stages(*args)[0].p == 0.7
    assert tune_lmbr_in_stages(*args, tie=0.3)[0].p == 0.5
    assert tune_lmbr_in_stages(*args, tie=0.1)[0].p == 0.7


def test_the_search_ties_to_free():
    assert choose_search({"free": 17.3, "anchored": 17.5}, 0.3) == "free"
    assert choose_search({"free": 17.0, "anchored": 17.5}, 0.3) == "anchored"
    assert choose_search({"anchored": 17.5, "free": 17.5}, 0.0001) == "free"


def test_the_search_ties_to_the_preferred_order():
    preferred = ("anchored", "free")
    assert choose_search({"free": 17.5, "anchored": 17.3}, 0.3, preferred) == "anchored"
    assert choose_search({"free": 17.7, "anchored": 17.3}, 0.3, preferred) == "free"
    assert choose_search({"free": 17.5, "anchored": 17.5}, 0.0001, preferred) == "anchored"


def test_the_search_tie_rule_follows_the_profile():
    from pipeline.config import LmbrProfile

    plain = LmbrProfile(order=4, semiring="tropical", nbest=0, theta_convention="plain", theta_t=10.0,
                        grid_search=("anchored", "free"))
    assert plain.search_ties() == (0.0, ("free", "anchored"))
    assert dataclasses.replace(plain, tie_bleu=0.2).search_ties() == (0.2, ("free", "anchored"))
    own = dataclasses.replace(plain, tie_bleu=0.2, search_tie_bleu=0.4)
    assert own.search_ties() == (0.4, ("anchored", "free"))
    assert dict(own.problems()) == {}
    assert "search_tie_bleu" in dict(dataclasses.replace(plain, search_tie_bleu=-1).problems())
