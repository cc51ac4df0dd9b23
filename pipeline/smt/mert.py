"""Minimum error rate training (Och 2003) of the log-linear weights on n-best lists, for corpus BLEU.

- Sufficient statistics per hypothesis: clipped n-gram matches and totals (n = 1..4) and the reference length;
  corpus BLEU is a function of their sums (``corpus_bleu``), computed on tokenized words.
- Exact line search: along w + g d every hypothesis' score is a line a + g b; the best hypothesis of a sentence
  as a function of g is the upper envelope of its lines. The envelopes of all sentences are computed together
  (vectorised over sentences), their breakpoints merged and swept, and the BLEU of every interval is exact.
  The chosen g is the middle of the best interval (0 when the current point is in it; the outer intervals are
  unbounded: 0.1 beyond the last breakpoint).
- ``optimize``: coordinate ascent over the tuned features' axes plus random directions, moving along the best
  direction until nothing improves, from the current weights and from random restarts; the best wins.
  Weights are normalised so that the tuned ones have an L1 norm of 1 (the fixed ones are left alone).
- ``run_mert``: decode to n-best lists, merge them with those of earlier iterations, optimise, repeat until the
  merged lists stop growing or the maximum number of iterations. The result is the weights whose decoding
  scored best on the tuning set (mert-moses.pl's --return-best-dev): weights fitted to a small n-best pool can
  decode far worse than the pool promised (a negative LM weight, say), and the last optimisation is never
  decoded.
"""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from pipeline.smt.features import FEATURES, REORDERING, TUNED, Weights
from pipeline.smt.lattice import Hypothesis

log = logging.getLogger(__name__)
ORDER = 4
STATS = 2 * ORDER + 1  # matches 1..4, totals 1..4, reference length


def ngram_counts(words: Sequence[str]) -> list[Counter]:
    """The n-gram counts of words, n = 1..4."""
    return [Counter(zip(*(words[k:] for k in range(n)))) for n in range(1, ORDER + 1)]


def bleu_stats(hypothesis: Sequence[str], reference: Sequence[str],
               reference_counts: list[Counter] | None = None) -> np.ndarray:
    """[9]: clipped matches (n = 1..4), hypothesis n-gram counts (n = 1..4), reference length.
    ``reference_counts``: ngram_counts(reference), when the caller keeps them."""
    stats = np.zeros(STATS)
    refs = ngram_counts(reference) if reference_counts is None else reference_counts
    for n, (hyp, ref) in enumerate(zip(ngram_counts(hypothesis), refs), start=1):
        stats[n - 1] = sum(min(c, ref[g]) for g, c in hyp.items())
        stats[ORDER + n - 1] = max(len(hypothesis) - n + 1, 0)
    stats[2 * ORDER] = len(reference)
    return stats


def corpus_bleu(stats: np.ndarray) -> np.ndarray | float:
    """BLEU (0..1) of summed statistics [..., 9]; 0 when some n-gram order has no match."""
    stats = np.asarray(stats, dtype=np.float64)
    matches, totals, ref = stats[..., :ORDER], stats[..., ORDER:2 * ORDER], stats[..., 2 * ORDER]
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.where((matches > 0) & (totals > 0), np.log(np.maximum(matches, 1e-300) / np.maximum(totals, 1)),
                        -np.inf).mean(axis=-1)
        hyp_len = totals[..., 0]
        bp = np.where(hyp_len < ref, 1.0 - ref / np.maximum(hyp_len, 1e-300), 0.0)
        bleu = np.exp(logp + bp)
    bleu = np.where(np.isfinite(logp), bleu, 0.0)
    return float(bleu) if bleu.ndim == 0 else bleu


class NbestPool:
    """The n-best hypotheses of every tuning sentence, merged across iterations (duplicates dropped)."""

    def __init__(self, references: Sequence[Sequence[str]]) -> None:
        self.references = [list(r) for r in references]
        self.reference_counts = [ngram_counts(r) for r in self.references]
        self.keys: list[set] = [set() for _ in references]
        self.features: list[list[np.ndarray]] = [[] for _ in references]
        self.stats: list[list[np.ndarray]] = [[] for _ in references]

    def add(self, index: int, hypotheses: Sequence[Hypothesis]) -> int:
        """Merge one sentence's n-best list; returns how many hypotheses were new."""
        new = 0
        for h in hypotheses:
            key = (h.words, tuple(np.round(h.features, 4)))
            if key in self.keys[index]:
                continue
            self.keys[index].add(key)
            self.features[index].append(np.asarray(h.features, dtype=np.float64))
            self.stats[index].append(bleu_stats(h.words, self.references[index], self.reference_counts[index]))
            new += 1
        return new

    def size(self) -> int:
        return sum(len(f) for f in self.features)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Padded features [S, M, D], statistics [S, M, 9] and the mask of real entries [S, M]."""
        rows = [k for k in range(len(self.features)) if self.features[k]]
        m = max((len(self.features[k]) for k in rows), default=1)
        feats = np.zeros((len(rows), m, len(FEATURES)))
        stats = np.zeros((len(rows), m, STATS))
        valid = np.zeros((len(rows), m), dtype=bool)
        for r, k in enumerate(rows):
            c = len(self.features[k])
            feats[r, :c], stats[r, :c], valid[r, :c] = self.features[k], self.stats[k], True
        return feats, stats, valid


def line_search(feats: np.ndarray, stats: np.ndarray, valid: np.ndarray, w: np.ndarray,
                d: np.ndarray) -> tuple[float, float]:
    """(g, BLEU) maximising corpus BLEU of the 1-best under weights w + g d (exact on these n-best lists)."""
    a, b = feats @ w, feats @ d
    s_idx = np.arange(len(a))
    b_first = np.where(valid, b, np.inf)
    lowest = b_first.min(axis=1)
    cur = np.argmax(np.where(valid & (b_first <= lowest[:, None]), a, -np.inf), axis=1)  # the winner at g = -inf
    base = stats[s_idx, cur].sum(axis=0)
    gammas, diffs = [], []
    rows = s_idx
    while len(rows):
        a_r, b_r, v_r = a[rows], b[rows], valid[rows]
        a_c, b_c = a_r[np.arange(len(rows)), cur[rows]], b_r[np.arange(len(rows)), cur[rows]]
        cand = v_r & (b_r > b_c[:, None] + 1e-12 * (1 + np.abs(b_c[:, None])))
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(cand, (a_c[:, None] - a_r) / (b_r - b_c[:, None]), np.inf)
        g_min = g.min(axis=1)
        going = np.isfinite(g_min)
        rows, g, g_min, cand, b_r = rows[going], g[going], g_min[going], cand[going], b_r[going]
        if not len(rows):
            break
        tie = cand & (g <= g_min[:, None] + 1e-12 * (1 + np.abs(g_min[:, None])))
        nxt = np.argmax(np.where(tie, b_r, -np.inf), axis=1)
        gammas.append(g_min)
        diffs.append(stats[rows, nxt] - stats[rows, cur[rows]])
        cur[rows] = nxt
    if not gammas:
        return 0.0, float(corpus_bleu(base))
    gam = np.concatenate(gammas)
    order = np.argsort(gam, kind="stable")
    gam = gam[order]
    totals = base + np.cumsum(np.concatenate(diffs)[order], axis=0)
    last_of_group = np.append(gam[1:] != gam[:-1], True)  # intervals start after the last of equal breakpoints
    starts = np.concatenate([[-np.inf], gam[last_of_group]])
    ends = np.append(gam[last_of_group], np.inf)
    bleus = np.concatenate([[corpus_bleu(base)], corpus_bleu(totals[last_of_group])])
    best = float(bleus.max())
    choices = np.flatnonzero(bleus >= best - 1e-12)
    containing = [k for k in choices if starts[k] <= 0.0 <= ends[k]]
    k = containing[0] if containing else min(choices, key=lambda c: min(abs(starts[c]), abs(ends[c])))
    if containing:
        g_best = 0.0
    elif np.isinf(starts[k]):
        g_best = ends[k] - 0.1
    elif np.isinf(ends[k]):
        g_best = starts[k] + 0.1
    else:
        g_best = (starts[k] + ends[k]) / 2
    return float(g_best), best


def _normalise(w: np.ndarray, tuned: np.ndarray) -> np.ndarray:
    norm = np.abs(w[tuned]).sum()
    out = w.copy()
    if norm > 0:
        out[tuned] = w[tuned] / norm
    return out


def optimize(feats: np.ndarray, stats: np.ndarray, valid: np.ndarray, start: np.ndarray, rng: np.random.Generator,
             random_directions: int = 0, restarts: int = 0, max_steps: int = 30,
             tuned_names: Sequence[str] = TUNED) -> tuple[np.ndarray, float]:
    """Best weights found by coordinate ascent from ``start`` and ``restarts`` random points; (weights, BLEU).
    Only the features of ``tuned_names`` move.

    Without the reordering features among them, the search runs over the first features only (those of a system
    without the model, whose reordering features are 0): the same arithmetic and random draws as before the model
    existed, so such a system's weights are the same to the bit."""
    width = len(FEATURES) if any(f in tuned_names for f in FEATURES[REORDERING]) else REORDERING.start
    tuned = np.array([f in tuned_names for f in FEATURES[:width]])
    feats = np.ascontiguousarray(feats[..., :width])
    axes = [np.eye(width)[k] for k in np.flatnonzero(tuned)]
    randoms = []
    for _ in range(random_directions):
        d = np.where(tuned, rng.normal(size=width), 0.0)
        randoms.append(d / np.abs(d).sum())
    directions = axes + randoms
    points = [_normalise(start[:width], tuned)]
    for _ in range(restarts):
        points.append(_normalise(np.where(tuned, rng.uniform(-1, 1, size=width), start[:width]), tuned))
    best_w, best_bleu = points[0], -1.0
    for w in points:
        bleu = -1.0
        for _ in range(max_steps):
            step = max(((*line_search(feats, stats, valid, w, d), d) for d in directions), key=lambda t: t[1])
            if step[1] <= bleu + 1e-9:
                break
            w, bleu = _normalise(w + step[0] * step[2], tuned), step[1]
        if bleu > best_bleu:
            best_w, best_bleu = w, bleu
    return np.concatenate([best_w, start[width:]]), best_bleu


@dataclass(frozen=True)
class MertSettings:
    iterations: int = 10
    nbest: int = 100
    random_directions: int = 10
    restarts: int = 20
    seed: int = 1


def run_mert(decode: Callable[[Weights], list[list[Hypothesis]]], references: Sequence[Sequence[str]],
             initial: Weights, settings: MertSettings, tuned: Sequence[str] = TUNED) -> tuple[Weights, list[dict]]:
    """Tune weights: ``decode(weights)`` gives every tuning sentence's n-best list (best first); ``tuned``: the
    features that move (``features.tuned_features``).

    Returns the decoded weights with the best tuning BLEU, and one record per iteration.
    """
    rng = np.random.default_rng(settings.seed)
    pool = NbestPool(references)
    weights, history = initial, []
    best: tuple[float, Weights] = (-1.0, initial)
    for iteration in range(1, settings.iterations + 1):
        nbests = decode(weights)
        one_best = sum((bleu_stats(h[0].words, r) if h else bleu_stats([], r)) for h, r in zip(nbests, references))
        new = sum(pool.add(k, h) for k, h in enumerate(nbests))
        record = {"iteration": iteration, "weights": weights.to_dict(), "decoded_bleu": float(corpus_bleu(one_best)),
                  "new_hypotheses": new, "pool": pool.size()}
        if record["decoded_bleu"] > best[0]:
            best = (record["decoded_bleu"], weights)
        if new == 0:
            history.append(record)
            log.info("MERT iteration %d: no new hypotheses, stopping", iteration)
            break
        vector, bleu = optimize(*pool.arrays(), weights.vector, rng, settings.random_directions, settings.restarts,
                                tuned_names=tuned)
        weights = Weights(vector)
        record["optimized_bleu"] = float(bleu)
        history.append(record)
        log.info("MERT iteration %d: decoded BLEU %.4f, %d new hypotheses, n-best BLEU after %.4f", iteration,
                 record["decoded_bleu"], new, bleu)
    return best[1], history
