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
| ``lr_bwd_m/s/d``, ``lr_fwd_m/s/d`` | ln p(orientation) of the lexicalised reordering model (pipeline.smt.reordering) | 0.3 each |

The six reordering features are 0 on every path of a system without the reordering model (a phrase table without
its columns); such a system neither tunes them nor weights them (``Weights.default(reordering=False)``), and a
weights file without them reads them as 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

REORDERING_FEATURES: tuple[str, ...] = ("lr_bwd_m", "lr_bwd_s", "lr_bwd_d", "lr_fwd_m", "lr_fwd_s", "lr_fwd_d")
FEATURES: tuple[str, ...] = ("lm", "p_fe", "lex_fe", "p_ef", "lex_ef", "phrase_penalty", "word_penalty",
                             "distortion", "unknown", *REORDERING_FEATURES)
INDEX: dict[str, int] = {name: i for i, name in enumerate(FEATURES)}
LM, P_FE, LEX_FE, P_EF, LEX_EF, PHRASE, WORD, DISTORTION, UNKNOWN = range(9)
TM = (P_FE, LEX_FE, P_EF, LEX_EF)  # the phrase-table columns, in Moses' order
REORDERING = slice(UNKNOWN + 1, len(FEATURES))  # the reordering features: backward m s d, forward m s d
DEFAULTS: dict[str, float] = {"lm": 0.5, "p_fe": 0.2, "lex_fe": 0.2, "p_ef": 0.2, "lex_ef": 0.2,
                              "phrase_penalty": 0.2, "word_penalty": -1.0, "distortion": 0.3, "unknown": 100.0,
                              **{f: 0.3 for f in REORDERING_FEATURES}}
FIXED: frozenset[str] = frozenset({"unknown"})  # MERT leaves these alone
TUNED_WITH_REORDERING: tuple[str, ...] = tuple(f for f in FEATURES if f not in FIXED)
TUNED: tuple[str, ...] = tuple(f for f in TUNED_WITH_REORDERING if f not in REORDERING_FEATURES)


def tuned_features(reordering: bool) -> tuple[str, ...]:
    """The features MERT tunes for a system with or without the lexicalised reordering model."""
    return TUNED_WITH_REORDERING if reordering else TUNED
# Moses' n-best feature groups (name= value ...), in the order the n-best list prints them.
MOSES_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("LM0", ("lm",)), ("Distortion0", ("distortion",)), ("WordPenalty0", ("word_penalty",)),
    ("PhrasePenalty0", ("phrase_penalty",)), ("TranslationModel0", ("p_fe", "lex_fe", "p_ef", "lex_ef")),
    ("UnknownWordPenalty0", ("unknown",)), ("LexicalReordering0", REORDERING_FEATURES),
)
OPTIONAL_GROUPS = frozenset({"LexicalReordering0"})  # written when not all zero; absent reads as zeros
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
    def default(cls, reordering: bool = False) -> "Weights":
        """Moses' default weights; the reordering features' are 0 for a system without the reordering model."""
        return cls.from_dict({**DEFAULTS, **({} if reordering else dict.fromkeys(REORDERING_FEATURES, 0.0))})

    @classmethod
    def from_dict(cls, values: Mapping[str, float]) -> "Weights":
        """Weights by feature name; the reordering features may be missing (then 0)."""
        values = {**dict.fromkeys(REORDERING_FEATURES, 0.0), **values}
        unknown = sorted(set(values) - set(FEATURES))
        missing = sorted(set(FEATURES) - set(values))
        if unknown or missing:
            raise ValueError(f"weights: unknown features {unknown}, missing {missing} (known: {', '.join(FEATURES)})")
        return cls(np.array([float(values[f]) for f in FEATURES]))

    def to_dict(self) -> dict[str, float]:
        """By feature name; the reordering features only where one is not 0 (as a system without the model has)."""
        values = {f: float(v) for f, v in zip(FEATURES, self.vector)}
        if not self.vector[REORDERING].any():
            for f in REORDERING_FEATURES:
                del values[f]
        return values

    def __getitem__(self, name: str) -> float:
        return float(self.vector[INDEX[name]])

    def score(self, features: Sequence[float] | np.ndarray) -> float:
        return float(np.dot(self.vector, features))


def format_moses_features(values: Sequence[float] | np.ndarray) -> str:
    """Feature values in Moses' n-best form: ``LM0= -12.3 Distortion0= 0 ... TranslationModel0= a b c d``."""
    parts = []
    for group, names in MOSES_GROUPS:
        if group in OPTIONAL_GROUPS and not any(values[INDEX[n]] for n in names):
            continue
        parts.append(group + "= " + " ".join(_number(values[INDEX[n]]) for n in names))
    return " ".join(parts)


def parse_moses_features(text: str) -> np.ndarray:
    """The inverse of format_moses_features (groups in any order; every feature but the optional groups' must be
    present)."""
    groups = dict(MOSES_GROUPS)
    values = np.full(len(FEATURES), np.nan)
    values[REORDERING] = 0.0
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
