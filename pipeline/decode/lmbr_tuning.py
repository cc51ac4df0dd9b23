"""Tuning LMBR decoding on a development set: a small grid over lambda, p, r, the evidence space (alpha, the path
scale of the posteriors, and the full lattice or an n-best list) and the gain form (ALGORITHMS.md sections 1-3), and
for lattice rescoring the weight of the lattice's own cost (:class:`RescoringPoint`).

p and r start from the PBMT's BLEU precisions (lattices/theta.py); the grid moves them by fixed offsets (kept in
(0, 1]). Each point decodes the tuning sentences with the L of its alpha's posteriors re-weighted by its theta
(within one alpha the posteriors are kept, only theta changes: LMatrix.with_theta) and is scored by the caller's
BLEU. The best point wins; ties go to the earlier point in grid order (lambdas, then p, then r, then alpha, then
n-best sizes, then gain forms, as given). With a tie tolerance (`[lmbr] tie_bleu`), every point within it of the
best BLEU ties, and the simplest of them wins (:func:`simplicity`): a choice that a second draw of tuning sentences
would not repeat falls back to the setting that needs no evidence.

:func:`tune_lmbr_in_stages` searches coordinate-wise, as TuneLMBR does: every lambda x alpha x n-best x gain form
at the PBMT's p and r, then every p and r offset at the best of those (len(lambdas) * len(alphas) * len(nbests) *
len(gains) + len(p_offsets) * len(r_offsets) decodings instead of their product). Each stage may be a race
(:func:`race_grid`, successive halving over prefixes of the tuning sentences: Jamieson & Talwalkar 2016): the points
far behind after a few sentences stop there, so the weakest settings, often the slowest (outputs looping to the
length limit), cost a fraction of a full decoding.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

from lattices.lmatrix import LMatrix
from lattices.theta import Theta

__all__ = ["GridPoint", "PAPER_LAMBDA", "RescoringPoint", "ReweightedStore", "SpanDecoder", "best_bleu", "choose",
           "lmbr_grid", "race_grid", "rescoring_grid", "simplicity", "tune_lmbr", "tune_lmbr_in_stages"]

#: The paper's lambda (0.5 / models on the sum of the ensemble's log-probabilities; here on their average).
PAPER_LAMBDA = 0.5


@dataclass(frozen=True)
class GridPoint:
    nmt_lambda: float
    p: float
    r: float
    alpha: float = 1.0  # the path scale of the posteriors
    gains: str = "per_step"  # the gain form (pipeline/decode/lmbr_hook.py)
    nbest: int = -1  # the evidence space: 0 the full lattice, K the K best strings, -1 the profile's (or variant's)

    def theta(self, convention: str, T: float) -> Theta:
        return Theta.from_p_r(self.p, self.r, convention, T)


def lmbr_grid(p0: float, r0: float, lambdas: Sequence[float], p_offsets: Sequence[float],
              r_offsets: Sequence[float], alphas: Sequence[float] = (1.0,),
              gains: Sequence[str] = ("per_step",), nbests: Sequence[int] = (-1,)) -> list[GridPoint]:
    """Every (lambda, p0 + dp, r0 + dr, alpha, n-best, gain form), p and r clipped to [0.01, 1], duplicates
    dropped."""
    def clip(x: float) -> float:
        return round(min(1.0, max(0.01, x)), 6)

    points = [GridPoint(float(lam), clip(p0 + dp), clip(r0 + dr), float(alpha), form, int(nbest))
              for lam in lambdas for dp in p_offsets for dr in r_offsets for alpha in alphas for nbest in nbests
              for form in gains]
    return list(dict.fromkeys(points))


@dataclass(frozen=True)
class RescoringPoint(GridPoint):
    """A point of lattice rescoring: LMBR's (or, without L, lambda = 1 on the NMT) and mu, the weight of the
    lattice's own cost (pipeline/decode/constraints.py)."""

    lattice_weight: float = 0.0


def rescoring_grid(start: GridPoint, weights: Sequence[float]) -> list[RescoringPoint]:
    """`start` (LMBR's tuned point, or lambda 1 without L) with every mu of `weights`, in order, duplicates
    dropped."""
    return list(dict.fromkeys(RescoringPoint(**asdict(start), lattice_weight=float(mu)) for mu in weights))


class ReweightedStore:
    """A store of L matrices (anything with ``get(sentences)``) seen under another theta."""

    def __init__(self, store, theta: Theta) -> None:
        self.store, self.theta = store, theta

    def get(self, sentences: Sequence[int]) -> list[LMatrix]:
        return [m.with_theta(self.theta) for m in self.store.get(sentences)]

    def __contains__(self, sentence: int) -> bool:
        return sentence in self.store


def simplicity(point: GridPoint, p0: float | None = None, r0: float | None = None,
               alpha0: float = 1.0) -> tuple[float, ...]:
    """The order of simplicity among tied points (smaller is simpler), key by key: per_step gains before bounded
    (the paper's rule); the full lattice (or the profile's evidence space) before an n-best list; lambda nearer the
    paper's 0.5 (on a log scale); p and r nearer the PBMT's (p0, r0; not compared when None); alpha nearer the
    lattices' own; for lattice rescoring, a smaller mu (the lattice's cost weighs less). Points equal under all of
    these keep grid order."""
    return (0.0 if point.gains == "per_step" else 1.0,
            0.0 if point.nbest <= 0 else 1.0,
            round(abs(math.log(point.nmt_lambda / PAPER_LAMBDA)), 9),
            0.0 if p0 is None or r0 is None else round(abs(point.p - p0) + abs(point.r - r0), 9),
            round(abs(math.log(point.alpha / alpha0)), 9) if point.alpha > 0 and alpha0 > 0 else 0.0,
            float(getattr(point, "lattice_weight", 0.0)))


def choose(scores: dict[GridPoint, float], tie: float = 0.0,
           simpler: Callable[[GridPoint], tuple] = simplicity) -> GridPoint:
    """The chosen point of `scores` (point -> tuning BLEU, in grid order). tie 0: the best, the first in grid order
    of exact ties (the rule of before); tie > 0: of the points within `tie` BLEU of the best, the simplest by
    simpler(point), then grid order."""
    if not scores:
        raise ValueError("no points to choose from")
    top = max(scores.values())
    if tie <= 0:
        return next(point for point, bleu in scores.items() if bleu == top)
    order = {point: k for k, point in enumerate(scores)}
    tied = [point for point, bleu in scores.items() if bleu >= top - tie - 1e-9]
    return min(tied, key=lambda point: (simpler(point), order[point]))


#: decode(point, sentences): the outputs of the tuning sentences in the range, in order.
SpanDecoder = Callable[[GridPoint, range], list[str]]


def race_grid(grid: Sequence[GridPoint], decode: SpanDecoder, score: Callable[[list[str]], float], sentences: int,
              checkpoints: Sequence[int] = (), keep: float = 1 / 3,
              log: Callable[[str], None] = lambda line: None, tie: float = 0.0,
              simpler: Callable[[GridPoint], tuple] = simplicity,
              finalists: int = 1) -> tuple[GridPoint, list[dict]]:
    """The best grid point on the first `sentences` tuning sentences, by successive halving over their prefixes.

    Every point still in the race decodes up to the next checkpoint (and finally to `sentences`); at a checkpoint
    only the best max(finalists, ceil(keep x n)) of its n points go on (so that the choice among the last ones is
    made on the whole window, not on a prefix's noise), ties to the earlier in grid order (with a tie tolerance, also
    every point within `tie` BLEU of the last one going on, so that a tie is not decided by a prefix's noise; the
    final choice: :func:`choose`). score(outputs) is the
    BLEU of the first len(outputs) sentences. A point decodes each sentence once, so its outputs equal one decoding
    of the whole prefix (decoding is batch invariant, up to the float rounding of batched products that can turn a
    near-tie: beam_search.py). Without checkpoints this is the full grid.

    Returns the best point and every point's result in grid order; a point that left the race early has
    "eliminated_at" (the prefix its BLEU is on).
    """
    if not grid:
        raise ValueError("the LMBR grid is empty")
    stops = [n for n in sorted(set(checkpoints)) if 0 < n < sentences] + [sentences]
    outputs: dict[GridPoint, list[str]] = {point: [] for point in grid}
    results: dict[GridPoint, dict] = {}
    alive = list(dict.fromkeys(grid))
    for stop in stops:
        scores = {}
        for point in alive:
            outputs[point] += decode(point, range(len(outputs[point]), stop))
            scores[point] = score(outputs[point])
            log(", ".join(f"{key} {value:g}" if isinstance(value, float) else f"{key} {value}"
                          for key, value in asdict(point).items()) + f": BLEU {scores[point]:.2f} ({stop} sentences)")
        ranked = sorted(alive, key=lambda point: -scores[point])
        going_on = set(ranked[:max(finalists, 1, math.ceil(keep * len(alive)))])
        if tie > 0:
            last = min(scores[point] for point in going_on)
            going_on |= {point for point in alive if scores[point] >= last - tie - 1e-9}
        for point in alive:
            results[point] = {**asdict(point), "bleu": scores[point]}
            if stop < sentences and point not in going_on:
                results[point]["eliminated_at"] = stop
        if stop < sentences:
            alive = [point for point in alive if point in going_on]
    best = choose({point: results[point]["bleu"] for point in alive}, tie, simpler)  # alive keeps grid order
    return best, [results[point] for point in dict.fromkeys(grid)]


def best_bleu(results: Sequence[dict]) -> float:
    """The best BLEU among the points that finished the race (all of them without checkpoints)."""
    return max(r["bleu"] for r in results if "eliminated_at" not in r)


def tune_lmbr(grid: Sequence[GridPoint], decode: Callable[[GridPoint], list[str]],
              score: Callable[[list[str]], float],
              log: Callable[[str], None] = lambda line: None, tie: float = 0.0,
              simpler: Callable[[GridPoint], tuple] = simplicity) -> tuple[GridPoint, list[dict]]:
    """The best grid point by score(decode(point)), and every point's result (in grid order): the full grid."""
    return race_grid(grid, lambda point, sentences: decode(point), score, 1, (), 1.0, log, tie, simpler)


def tune_lmbr_in_stages(p0: float, r0: float, lambdas: Sequence[float], p_offsets: Sequence[float],
                        r_offsets: Sequence[float], alphas: Sequence[float], gains: Sequence[str],
                        decode: SpanDecoder, score: Callable[[list[str]], float], sentences: int,
                        log: Callable[[str], None] = lambda line: None, nbests: Sequence[int] = (-1,),
                        checkpoints: Sequence[int] = (), keep: float = 1 / 3, tie: float = 0.0,
                        alpha0: float | None = None, finalists: int = 1) -> tuple[GridPoint, list[dict]]:
    """Stage 1: lambda x alpha x n-best x gain form at (p0, r0); stage 2: the p and r offsets around stage 1's best
    (its point is not decoded again); each stage a race (:func:`race_grid`). Returns the best point of both stages
    and every decoded point's result, in order. With a tie tolerance, ties go to the simpler point
    (:func:`simplicity`, p and r measured from p0 and r0, alpha from alpha0, the lattices' own, or else the first
    of `alphas`), and stage 2 replaces stage 1's point only when it beats stage 1's best BLEU by more than `tie`."""
    def simpler(point: GridPoint) -> tuple:
        return simplicity(point, p0, r0, alpha0 if alpha0 is not None else (alphas[0] if alphas else 1.0))

    def race(grid: Sequence[GridPoint]) -> tuple[GridPoint, list[dict]]:
        return race_grid(grid, decode, score, sentences, checkpoints, keep, log, tie, simpler, finalists)

    first, results = race(lmbr_grid(p0, r0, lambdas, [0.0], [0.0], alphas, gains, nbests))
    second = [point for point in lmbr_grid(p0, r0, [first.nmt_lambda], p_offsets, r_offsets, [first.alpha],
                                           [first.gains], [first.nbest]) if point != first]
    if not second:
        return first, results
    best, more = race(second)
    return (best if best_bleu(more) > best_bleu(results) + tie else first), results + more
