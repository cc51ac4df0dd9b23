"""The log-linear model of the phrase-based decoder: feature names, Moses groups and the weights vector.

Every feature is in natural-log units (KenLM's log10 scores are multiplied by ln 10, as Moses does), so a
hypothesis' score H = sum_k w_k h_k and the lattice cost of a path is -H.

| feature | value per phrase application | default weight (Moses) |
|---|---|---|
| ``lm`` | ln P_LM of the target words given the history (plus ``</s>`` when the sentence is complete) | 0.5 |
| ``p_fe``, ``lex_fe`` | ln phi(f|e), ln lex(f|e) (inverse phrase probability and lexical weight) | 0.2 each |
| ``p_ef``, ``lex_ef`` | ln phi(e|f), ln lex(e|f) (direct) | 0.2 each |
| ``phrase_penalty`` | +1 | 0.2 |
| ``word_penalty`` | -(number of target words), Moses' sign: the default weight -1 makes it a bonus | -1 |
| ``distortion`` | -abs(start - previous end - 1) | 0.3 |
| ``unknown`` | -(number of passed-through unknown words); fixed, not tuned (Moses: UnknownWordPenalty) | 100 |
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

FEATURES: tuple[str, ...] = ("lm", "p_fe", "lex_fe", "p_ef", "lex_ef", "phrase_penalty", "word_penalty",
                             "distortion", "unknown")
INDEX: dict[str, int] = {name: i for i, name in enumerate(FEATURES)}
LM, P_FE, LEX_FE, P_EF, LEX_EF, PHRASE, WORD, DISTORTION, UNKNOWN = range(len(FEATURES))
TM = (P_FE, LEX_FE, P_EF, LEX_EF)  # the phrase-table columns, in Moses' order
DEFAULTS: dict[str, float] = {"lm": 0.5, "p_fe": 0.2, "lex_fe": 0.2, "p_ef": 0.2, "lex_ef": 0.2,
                              "phrase_penalty": 0.2, "word_penalty": -1.0, "distortion": 0.3, "unknown": 100.0}
FIXED: frozenset[str] = frozenset({"unknown"})  # MERT leaves these alone
TUNED: tuple[str, ...] = tuple(f for f in FEATURES if f not in FIXED)
# Moses' n-best feature groups (name= value ...), in the order the n-best list prints them.
MOSES_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("LM0", ("lm",)), ("Distortion0", ("distortion",)), ("WordPenalty0", ("word_penalty",)),
    ("PhrasePenalty0", ("phrase_penalty",)), ("TranslationModel0", ("p_fe", "lex_fe", "p_ef", "lex_ef")),
    ("UnknownWordPenalty0", ("unknown",)),
)
LN10 = math.log(10.0)


@dataclass(frozen=True)
class Weights:
    """One weight per feature of FEATURES (a float64 vector); immutable."""

    vector: np.ndarray

    def __post_init__(self) -> None:
        v = np.asarray(self.vector, dtype=np.float64).copy()
        if v.shape != (len(FEATURES),):
            raise ValueError(f"weights need {len(FEATURES)} values ({', '.join(FEATURES)}), got shape {v.shape}")
        v.setflags(write=False)
        object.__setattr__(self, "vector", v)

    @classmethod
    def default(cls) -> "Weights":
        return cls.from_dict(DEFAULTS)

    @classmethod
    def from_dict(cls, values: Mapping[str, float]) -> "Weights":
        unknown = sorted(set(values) - set(FEATURES))
        missing = sorted(set(FEATURES) - set(values))
        if unknown or missing:
            raise ValueError(f"weights: unknown features {unknown}, missing {missing} (known: {', '.join(FEATURES)})")
        return cls(np.array([float(values[f]) for f in FEATURES]))

    def to_dict(self) -> dict[str, float]:
        return {f: float(v) for f, v in zip(FEATURES, self.vector)}

    def __getitem__(self, name: str) -> float:
        return float(self.vector[INDEX[name]])

    def score(self, features: Sequence[float] | np.ndarray) -> float:
        return float(np.dot(self.vector, features))


def format_moses_features(values: Sequence[float] | np.ndarray) -> str:
    """Feature values in Moses' n-best form: ``LM0= -12.3 Distortion0= 0 ... TranslationModel0= a b c d``."""
    parts = []
    for group, names in MOSES_GROUPS:
        parts.append(group + "= " + " ".join(_number(values[INDEX[n]]) for n in names))
    return " ".join(parts)


def parse_moses_features(text: str) -> np.ndarray:
    """The inverse of format_moses_features (groups in any order; every feature must be present)."""
    groups = dict(MOSES_GROUPS)
    values = np.full(len(FEATURES), np.nan)
    name = None
    filled = 0
    for token in text.split():
        if token.endswith("="):
            name, filled = token[:-1], 0
            if name not in groups:
                raise ValueError(f"unknown feature group {name!r} in {text!r}")
            continue
        if name is None or filled >= len(groups[name]):
            raise ValueError(f"value {token!r} without a feature group in {text!r}")
        values[INDEX[groups[name][filled]]] = float(token)
        filled += 1
    if np.isnan(values).any():
        raise ValueError(f"features missing in {text!r}")
    return values


def _number(x: float) -> str:
    return f"{x:.6g}" if x != int(x) or abs(x) >= 1e15 else str(int(x))
