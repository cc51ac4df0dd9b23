"""The linear BLEU weights Theta_0..Theta_4 of LMBR (Tromble et al. 2008; docs/algorithms.md section 3).

p is the unigram precision and r the average ratio of successive n-gram precisions (p2/p1, p3/p2, p4/p3), both
from a baseline's BLEU on the dev set (``pipeline.evaluation.BleuScore.precisions``, in percent). Two
conventions:

- ``plain``:  Theta_0 = -1,   Theta_n = 1 / (4 p r^(n-1));
- ``scaled``: Theta_0 = -1/T, Theta_n = 1 / (4 T p r^(n-1))  (T = 10 in the Cambridge tools).

Pure LMBR picks the same output either way; against lambda * log P_NMT in the hybrid rule the scale matters,
which is why the convention, p, r, T and the values go into every signature (:meth:`Theta.signature`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = ["Theta", "CONVENTIONS"]

CONVENTIONS = ("plain", "scaled")
#: T of the ``scaled`` convention when none is given (the Cambridge tools' value).
DEFAULT_T = 10.0


@dataclass(frozen=True)
class Theta:
    """Theta_0..Theta_4 (``values[n]`` is Theta_n) and how they were obtained."""

    values: tuple[float, ...]
    convention: str
    p: float
    r: float
    T: float

    @classmethod
    def from_precisions(cls, precisions: Sequence[float], convention: str = "plain",
                        T: float = DEFAULT_T) -> "Theta":
        """From the four BLEU n-gram precisions in percent (sacrebleu's ``precisions``)."""
        if len(precisions) != 4:
            raise ValueError(f"four n-gram precisions are needed, not {len(precisions)}")
        prec = [float(x) / 100.0 for x in precisions]
        if any(not 0.0 < x <= 1.0 for x in prec):
            raise ValueError(f"every precision must be in (0, 100] percent to define theta, not {list(precisions)}")
        p = prec[0]
        r = (prec[1] / prec[0] + prec[2] / prec[1] + prec[3] / prec[2]) / 3.0
        return cls.from_p_r(p, r, convention, T)

    @classmethod
    def from_bleu(cls, score: Any, convention: str = "plain", T: float = DEFAULT_T) -> "Theta":
        """From a ``pipeline.evaluation.BleuScore`` (or anything with ``precisions`` in percent)."""
        return cls.from_precisions(score.precisions, convention, T)

    @classmethod
    def from_p_r(cls, p: float, r: float, convention: str = "plain", T: float = DEFAULT_T) -> "Theta":
        if convention not in CONVENTIONS:
            raise ValueError(f"unknown theta convention {convention!r}: choose one of {CONVENTIONS}")
        if not (p > 0 and r > 0):
            raise ValueError(f"p and r must be positive, not p={p}, r={r}")
        scale = 1.0
        if convention == "scaled":
            if not T > 0:
                raise ValueError(f"T must be positive, not {T}")
            scale = float(T)
        values = (-1.0 / scale,) + tuple(1.0 / (4.0 * scale * p * r ** (n - 1)) for n in range(1, 5))
        return cls(values, convention, float(p), float(r), scale if convention == "scaled" else 1.0)

    @classmethod
    def from_signature(cls, signature: Mapping[str, Any]) -> "Theta":
        """Back from :meth:`signature` (values recomputed and checked)."""
        theta = cls.from_p_r(signature["p"], signature["r"], signature["convention"], signature.get("T", DEFAULT_T))
        given = tuple(float(x) for x in signature.get("theta", theta.values))
        if any(abs(a - b) > 1e-12 * max(1.0, abs(b)) for a, b in zip(given, theta.values)):
            raise ValueError(f"theta values {given} do not follow from p, r, T and the convention")
        return theta

    def signature(self) -> dict[str, Any]:
        return {"convention": self.convention, "p": self.p, "r": self.r, "T": self.T, "theta": list(self.values)}

    @property
    def order(self) -> int:
        return len(self.values) - 1
