"""Small synthetic problems for the decoder: a real lmplz trigram on a made-up corpus, random phrase tables."""
from __future__ import annotations

import random
from pathlib import Path

import kenlm
import numpy as np
import pytest

from pipeline.lm import KenlmTools, train_lm
from pipeline.smt.features import DISTORTION, FEATURES, LM, LN10, PHRASE, TM, WORD, Weights
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


def random_table(seed: int, multi_word: int = 6) -> PhraseTable:
    """Every source word has 1-3 options of 1-2 target words; a few 2-3 word source phrases have 1-2 options."""
    rng = random.Random(seed)

    def options(k: int) -> list[tuple[str, list[float]]]:
        chosen = {}
        while len(chosen) < k:
            chosen[" ".join(rng.choice(TARGET_VOCAB) for _ in range(rng.randint(1, 2)))] = [
                rng.uniform(0.05, 1.0) for _ in range(4)]
        return list(chosen.items())

    entries = {s: options(rng.randint(1, 3)) for s in SOURCE_VOCAB}
    for _ in range(multi_word):
        phrase = " ".join(rng.choice(SOURCE_VOCAB) for _ in range(rng.randint(2, 3)))
        entries[phrase] = options(rng.randint(1, 2))
    return PhraseTable.from_entries(entries, max_length=3)


def random_weights(seed: int) -> Weights:
    rng = np.random.default_rng(seed)
    w = Weights.default().vector.copy()
    w[:8] *= rng.uniform(0.5, 1.5, size=8)
    return Weights(w)


def static_features(table: PhraseTable, source: str, target: tuple[str, ...]) -> np.ndarray:
    """Recomputed from the table: everything but the LM and distortion."""
    f = np.zeros(len(FEATURES))
    found = table.lookup(source)
    if found is None or " ".join(target) not in found[0]:
        raise KeyError((source, target))
    f[list(TM)] = found[1][found[0].index(" ".join(target))]
    f[PHRASE] = 1.0
    f[WORD] = -len(target)
    return f


def derivation_score(table: PhraseTable, lm: kenlm.Model, weights: Weights, words: list[str],
                     steps: list[tuple[int, int, tuple[str, ...]]]) -> tuple[tuple[str, ...], float]:
    """(target words, log-linear score) of a derivation (source spans in order of application), from scratch."""
    f = np.zeros(len(FEATURES))
    last = -1
    target: list[str] = []
    for i, j, t in steps:
        f += static_features(table, " ".join(words[i:j + 1]), t)
        f[DISTORTION] -= abs(i - last - 1)
        last = j
        target += t
    f[LM] = lm.score(" ".join(target), bos=True, eos=True) * LN10
    return tuple(target), weights.score(f)


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
