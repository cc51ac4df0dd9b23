"""The lexicalised reordering model, msd-bidirectional-fe (Tillmann 2004; Koehn et al. 2005; Moses' default).

For each phrase pair it gives the probabilities of three orientations, monotone (m), swap (s) and discontinuous
(d), of the pair against the phrase before it (backward) and of the phrase after it against the pair (forward):
six ln probabilities, six features of the log-linear model.

- **Extraction** (word-based, as Moses' ``wbe``): for a pair with source span i1..i2 and target span j1..j2,
  backward: m if source word i1-1 is aligned to target word j1-1, s if i2+1 is, else d; forward: m if i2+1 is
  aligned to j2+1, s if i1-1 is, else d. The sentence's borders count as aligned corners: (-1, -1) and
  (source length, target length).
- **Estimation**: p(o | f, e) = (c(o, f, e) + sigma p(o)) / (sum_o c(o, f, e) + sigma), where sigma = 0.5 (Moses'
  smoothing by priors) and p(o) is the orientation's share over every extracted pair of its direction, counted
  with one more of each orientation so that no probability is 0 (a corpus without a single swap, say).
- **Decoding** (phrase-based, as Moses): a phrase i..j after a phrase a..b is m when i = b + 1, s when j = a - 1,
  else d. The start of the sentence is a phrase at -1..-1; the last phrase's forward orientation is taken against
  the end of the sentence (m when it ends the source, else d). An option the table has no entry for (a
  passed-through unknown word, a forced span) has probability 1/3 for each orientation.
  ``WeightedReordering`` is one sentence's options under the weights, what both searches add per arc;
  ``reordering_features`` gives the arcs' six feature values back from their orientations.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pipeline.smt.features import REORDERING, REORDERING_FEATURES, Weights

MONO, SWAP, DISC = range(3)
NAMES = "msd"  # one letter per orientation, as extraction writes them
COLUMNS = len(REORDERING_FEATURES)  # backward m s d, forward m s d
SMOOTHING = 0.5
KINDS = ("distance", "msd-bidirectional-fe")  # the profile's `reordering` setting
UNIFORM = np.full(COLUMNS, math.log(1.0 / 3.0))


def extraction_orientations(aligned: set[tuple[int, int]], src_len: int, tgt_len: int,
                            span: tuple[int, int, int, int]) -> str:
    """The backward and forward orientation letters of one extracted pair, e.g. ``"md"``."""
    i1, i2, j1, j2 = span

    def linked(i: int, j: int) -> bool:
        return (i, j) in aligned or (i, j) in ((-1, -1), (src_len, tgt_len))

    backward = MONO if linked(i1 - 1, j1 - 1) else SWAP if linked(i2 + 1, j1 - 1) else DISC
    forward = MONO if linked(i2 + 1, j2 + 1) else SWAP if linked(i1 - 1, j2 + 1) else DISC
    return NAMES[backward] + NAMES[forward]


def decoding_orientation(previous_start: int, previous_end: int, start: int, end: int) -> int:
    """The orientation of phrase start..end applied after phrase previous_start..previous_end."""
    if start == previous_end + 1:
        return MONO
    return SWAP if end == previous_start - 1 else DISC


def count_orientations(letters: Sequence[str]) -> np.ndarray:
    """[6] counts (backward m s d, forward m s d) of a pair's extracted orientation letters."""
    counts = np.zeros(COLUMNS, dtype=np.int64)
    for pair in letters:
        counts[NAMES.index(pair[0])] += 1
        counts[3 + NAMES.index(pair[1])] += 1
    return counts


def priors(totals: np.ndarray) -> np.ndarray:
    """[6] each orientation's share of its direction, from the counts over every extracted pair plus one each."""
    counts = np.asarray(totals, dtype=np.float64) + 1.0
    out = np.empty(COLUMNS)
    for half in (slice(0, 3), slice(3, 6)):
        out[half] = counts[half] / counts[half].sum()
    return out


def orientation_probabilities(counts: np.ndarray, prior: np.ndarray, smoothing: float = SMOOTHING) -> list[float]:
    """The six smoothed probabilities of one pair's counts (backward m s d, forward m s d)."""
    out = []
    for half in (slice(0, 3), slice(3, 6)):
        total = float(counts[half].sum()) + smoothing
        out.extend((float(c) + smoothing * float(p)) / total for c, p in zip(counts[half], prior[half]))
    return out


def reordering_features(orientations: np.ndarray, option: np.ndarray, reordering: np.ndarray) -> np.ndarray:
    """[arcs, 6] the reordering features of arcs: the backward probability of the arc's option and the forward one
    of the option before it, at the arc's orientation, plus on an arc that completes the sentence the forward
    probability of its option at its orientation against the end."""
    orientation, previous, end = (orientations[:, k] for k in range(3))
    features = np.zeros((len(option), 6))
    rows = np.arange(len(option))
    features[rows, orientation] = reordering[option, orientation]
    after = previous >= 0
    features[rows[after], 3 + orientation[after]] += reordering[previous[after], 3 + orientation[after]]
    ends = end >= 0
    features[rows[ends], 3 + end[ends]] += reordering[option[ends], 3 + end[ends]]
    return features


@dataclass(frozen=True)
class WeightedReordering:
    """The reordering model of one sentence's options under the weights: what the search adds per arc."""

    backward: list[tuple[float, float, float]]  # [options] weighted backward ln probabilities (m, s, d)
    forward: list[tuple[float, float, float]]  # [options] weighted forward ln probabilities
    forward_class: list[int]  # [options] equal forward probabilities share a class (recombination)
    table: np.ndarray  # [options, 6] ln probabilities

    @classmethod
    def of(cls, rows: Sequence[np.ndarray] | None, weights: Weights) -> "WeightedReordering | None":
        """From the options' reordering ln probabilities (Options.reordering; None: no model)."""
        if rows is None:
            return None
        table = np.array(rows, dtype=np.float64).reshape(-1, 6)
        weighted = table * weights.vector[REORDERING]
        forward_class = np.unique(table[:, 3:], axis=0, return_inverse=True)[1].reshape(-1)
        return cls(list(map(tuple, weighted[:, :3].tolist())), list(map(tuple, weighted[:, 3:].tolist())),
                   forward_class.tolist(), table)

    def score(self, previous: int, option: int, orientation: int, end: int) -> float:
        """What an arc adds, in this order: backward, then the previous option's forward, then against the end."""
        gain = self.backward[option][orientation]
        if previous >= 0:
            gain = gain + self.forward[previous][orientation]
        if end >= 0:
            gain = gain + self.forward[option][end]
        return gain
