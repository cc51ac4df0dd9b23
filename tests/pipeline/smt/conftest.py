"""Small synthetic problems for the decoder: a real lmplz trigram on a made-up corpus, random phrase tables."""
from __future__ import annotations

import random
from pathlib import Path

import kenlm
import numpy as np
import pytest

from pipeline.lm import KenlmTools, train_lm
from pipeline.smt.features import DISTORTION, FEATURES, LM, LN10, PHRASE, REORDERING, TM, WORD, Weights
from pipeline.smt.phrase_table import PhraseTable

REPO = Path(__file__).resolve().parents[3]
TARGET_VOCAB = [f"t{i}" for i in range(8)]
SOURCE_VOCAB = [f"s{i}" for i in range(6)]


def lm_corpus(n: int = 400, seed: int = 0) -> list[str]:
    """Target sentences with some bigram structure (t_k is often followed by t_{k+1})."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        k, words = rng.randrange(8), []
        for _ in range(rng.randint(2, 9)):
            words.append(TARGET_VOCAB[k])
            k = (k + 1) % 8 if rng.random() < 0.6 else rng.randrange(8)
        lines.append(" ".join(words))
    return lines


@pytest.fixture(scope="session")
def lm_path(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("smt-lm")
    result = train_lm(lm_corpus(), out, 3, KenlmTools.locate(REPO / "tools"), memory="64M", discount_fallback=True)
    return result.binary


@pytest.fixture(scope="session")
def lm(lm_path) -> kenlm.Model:
    return kenlm.Model(str(lm_path))


@pytest.fixture(scope="session")
def bigram_lm(tmp_path_factory) -> kenlm.Model:
    """A bigram of the same corpus: a state is the last word, so that many hypotheses recombine."""
    out = tmp_path_factory.mktemp("smt-bigram")
    result = train_lm(lm_corpus(), out, 2, KenlmTools.locate(REPO / "tools"), memory="64M", discount_fallback=True)
    return kenlm.Model(str(result.binary))


def random_table(seed: int, multi_word: int = 6, reordering: bool = False) -> PhraseTable:
    """Every source word has 1-3 options of 1-2 target words; a few 2-3 word source phrases have 1-2 options.
    With ``reordering``, each pair also has a random backward orientation distribution and one of two forward ones
    (pairs share forward probabilities, as the many rare pairs of a real table do)."""
    rng = random.Random(seed)

    def distribution() -> list[float]:
        weights = [rng.uniform(0.05, 1.0) for _ in range(3)]
        return [x / sum(weights) for x in weights]

    forward = [distribution(), distribution()] if reordering else []

    def options(k: int) -> list[tuple[str, list[float]]]:
        chosen = {}
        while len(chosen) < k:
            chosen[" ".join(rng.choice(TARGET_VOCAB) for _ in range(rng.randint(1, 2)))] = [
                rng.uniform(0.05, 1.0) for _ in range(4)] + (distribution() + rng.choice(forward) if reordering else [])
        return list(chosen.items())

    entries = {s: options(rng.randint(1, 3)) for s in SOURCE_VOCAB}
    for _ in range(multi_word):
        phrase = " ".join(rng.choice(SOURCE_VOCAB) for _ in range(rng.randint(2, 3)))
        entries[phrase] = options(rng.randint(1, 2))
    return PhraseTable.from_entries(entries, max_length=3)


def random_weights(seed: int, reordering: bool = False) -> Weights:
    rng = np.random.default_rng(seed)
    w = Weights.default(reordering).vector.copy()
    w[:8] *= rng.uniform(0.5, 1.5, size=8)
    if reordering:
        w[REORDERING] *= rng.uniform(0.0, 2.0, size=6)
    return Weights(w)


def static_features(table: PhraseTable, source: str, target: tuple[str, ...]) -> np.ndarray:
    """Recomputed from the table: everything but the LM, distortion and reordering."""
    f = np.zeros(len(FEATURES))
    f[list(TM)] = table_row(table, source, target)[:4]
    f[PHRASE] = 1.0
    f[WORD] = -len(target)
    return f


def table_row(table: PhraseTable, source: str, target: tuple[str, ...]) -> np.ndarray:
    found = table.lookup(source)
    if found is None or " ".join(target) not in found[0]:
        raise KeyError((source, target))
    return found[1][found[0].index(" ".join(target))]


def orientation(previous: tuple[int, int], span: tuple[int, int]) -> int:
    """Moses' phrase-based orientation, from its definition: 0 monotone, 1 swap, 2 discontinuous."""
    if span[0] == previous[1] + 1:
        return 0
    return 1 if span[1] + 1 == previous[0] else 2


def derivation_score(table: PhraseTable, lm: kenlm.Model, weights: Weights, words: list[str],
                     steps: list[tuple[int, int, tuple[str, ...]]]) -> tuple[tuple[str, ...], float]:
    """(target words, log-linear score) of a derivation (source spans in order of application), from scratch."""
    target, f = derivation_features(table, lm, words, steps)
    return target, weights.score(f)


def derivation_features(table: PhraseTable, lm: kenlm.Model, words: list[str],
                        steps: list[tuple[int, int, tuple[str, ...]]]) -> tuple[tuple[str, ...], np.ndarray]:
    """(target words, feature vector) of a derivation, from scratch; with a reordering table, the backward
    probability of each phrase and the forward one of the phrase before it at their orientation, and the last
    phrase's forward probability against the end of the sentence."""
    f = np.zeros(len(FEATURES))
    previous, previous_row = (-1, -1), None
    target: list[str] = []
    for i, j, t in steps:
        f += static_features(table, " ".join(words[i:j + 1]), t)
        f[DISTORTION] -= abs(i - previous[1] - 1)
        if table.reordering:
            row = table_row(table, " ".join(words[i:j + 1]), t)[4:]
            o = orientation(previous, (i, j))
            f[REORDERING.start + o] += row[o]
            if previous_row is not None:
                f[REORDERING.start + 3 + o] += previous_row[3 + o]
            previous_row = row
        previous = (i, j)
        target += t
    if table.reordering and steps:
        o = orientation(previous, (len(words), len(words)))
        f[REORDERING.start + 3 + o] += previous_row[3 + o]
    f[LM] = lm.score(" ".join(target), bos=True, eos=True) * LN10
    return tuple(target), f


def brute_force(table: PhraseTable, lm: kenlm.Model, weights: Weights, words: list[str],
                distortion_limit: int) -> list[tuple[float, tuple[str, ...]]]:
    """Every derivation's (score, target) by enumerating segmentations and orders within the distortion limit."""
    n = len(words)
    d = distortion_limit if distortion_limit >= 0 else n
    results = []

    def extend(coverage: int, last: int, steps: list) -> None:
        if coverage == (1 << n) - 1:
            target, score = derivation_score(table, lm, weights, words, steps)
            results.append((score, target))
            return
        first_gap = next(k for k in range(n) if not coverage >> k & 1)
        for i in range(n):
            for j in range(i, min(n, i + table.max_length)):
                mask = ((1 << (j - i + 1)) - 1) << i
                if coverage & mask:
                    break
                if abs(i - last - 1) > d or (i > first_gap and j + 1 - first_gap > d):
                    continue
                found = table.lookup(" ".join(words[i:j + 1]))
                for t in (found[0] if found else []):
                    extend(coverage | mask, j, steps + [(i, j, tuple(t.split()))])

    extend(0, -1, [])
    return results


def random_sentence(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(SOURCE_VOCAB) for _ in range(n)]
