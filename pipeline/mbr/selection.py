"""Minimum Bayes-risk selection: the candidate of highest expected utility against a set of pseudo-references.

    choice = mbr_choose(utilities)             # utilities [H, R]: u(candidate h, pseudo-reference r)
    choice.index, choice.expected              # the chosen h; expected utilities [H]

The pseudo-references stand for samples of the model's distribution (Eikema and Aziz 2020): each weighs 1/R, or
`weights` [R] (for example an n-best list's renormalised probabilities). A candidate that is itself one of the
pseudo-references is scored against itself too, as in sampling-based MBR; `exclude` [H, R] (True where candidate h is
pseudo-reference r) leaves those pairs out and renormalises the rest of that candidate's weights. Ties go to the
lowest index, so the same utilities always give the same choice.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MbrChoice", "mbr_choose"]


@dataclass(frozen=True)
class MbrChoice:
    index: int  # the chosen candidate
    expected: np.ndarray  # [H] float64: each candidate's expected utility


def mbr_choose(utilities: np.ndarray, weights: np.ndarray | None = None,
               exclude: np.ndarray | None = None) -> MbrChoice:
    """The candidate maximising sum_r w_r u[h, r] (see the module docstring); utilities [H, R] with H, R >= 1."""
    u = np.asarray(utilities, dtype=np.float64)
    if u.ndim != 2 or 0 in u.shape:
        raise ValueError(f"utilities must be [H, R] with H, R >= 1, not {u.shape}")
    w = np.full(u.shape[1], 1.0 / u.shape[1]) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (u.shape[1],) or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights must be [R] = [{u.shape[1]}], non-negative, with a positive sum")
    w = np.broadcast_to(w / w.sum(), u.shape).copy()
    if exclude is not None:
        w[np.asarray(exclude, dtype=bool)] = 0.0
        rows = w.sum(axis=1, keepdims=True)
        w = np.divide(w, rows, out=np.zeros_like(w), where=rows > 0)
    expected = (w * u).sum(axis=1)
    return MbrChoice(int(np.argmax(expected)), expected)
