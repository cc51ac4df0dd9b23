"""Translation options of one sentence: phrase-table look-ups for every span, unknown words, the option cap.

Each option has a source span, a target phrase, its static feature values (every feature except ``lm`` and
``distortion``, which depend on the hypothesis it extends), the weighted static score, and a *future score*:
the static score plus the weighted LM-only estimate of its target phrase without context (KenLM's null
context), as Moses uses for the option cap and the future-cost table. A position that no one-word option
covers gets a pass-through option (the source word itself, ``unknown`` = -1), as in Moses. With a table that has
the lexicalised reordering model, each option also carries its six reordering ln probabilities (uniform for an
option the table lacks), which the search scores by orientation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import kenlm
import numpy as np

from pipeline.smt.features import FEATURES, LM, LN10, PHRASE, TM, UNKNOWN, WORD, Weights
from pipeline.smt.phrase_table import TM_COLUMNS, PhraseTable, cap_options
from pipeline.smt.reordering import UNIFORM


@dataclass
class SpanOptions:
    """The options of one source span, best future score first."""

    start: int
    end: int  # inclusive
    mask: int  # coverage bits of the span
    best_future: float
    # (option id, future score, static score, target id) of each option, best future score first: what the
    # search's inner loop reads
    entries: list[tuple[int, float, float, int]] = field(default_factory=list)


@dataclass
class Options:
    """Every translation option of a sentence, and the spans by start position (shortest span first)."""

    targets: list[tuple[str, ...]] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    static: list[np.ndarray] = field(default_factory=list)  # feature values without lm and distortion
    static_score: list[float] = field(default_factory=list)
    future: list[float] = field(default_factory=list)
    target_ids: list[int] = field(default_factory=list)  # equal target phrases share an id (LM cache key)
    by_start: list[list[SpanOptions]] = field(default_factory=list)
    reordering: list[np.ndarray] | None = None  # [6] ln probabilities per option, with the reordering model

    def __len__(self) -> int:
        return len(self.targets)

    def best_by_span(self, n: int) -> np.ndarray:
        """[n, n] best future score of a single option covering span i..j (-inf where there is none)."""
        best = np.full((n, n), -np.inf)
        for spans in self.by_start:
            for s in spans:
                best[s.start, s.end] = s.best_future
        return best


def lm_estimate(lm: kenlm.Model, words: Sequence[str]) -> float:
    """ln P_LM of words in KenLM's null context (the first words use lower orders)."""
    state, out = kenlm.State(), kenlm.State()
    lm.NullContextWrite(state)
    total = 0.0
    for w in words:
        total += lm.BaseScore(state, w, out)
        state, out = out, state
    return total * LN10


class OptionCache:
    """The capped, scored options of each source phrase, shared by every sentence decoded with one set of weights.

    Entries are (target words, static features, static score, future score, reordering ln probabilities [6] or
    None), best future score first. Scoring a phrase scores every one of its targets with the LM (a common word has
    thousands), so a long-lived decoder (a server's) keeps the cache across calls; ``max_phrases`` bounds it (0: no
    bound): past it, the cache starts again empty (the options are the same either way).
    """

    def __init__(self, table: PhraseTable, lm: kenlm.Model, weights: Weights, limit: int,
                 max_phrases: int = 0) -> None:
        self.table, self.lm, self.weights, self.limit = table, lm, weights, limit
        self.max_phrases = max_phrases
        self.w_static = weights.vector.copy()
        self.w_static[LM] = 0.0
        self.phrases: dict[str, list[tuple] | None] = {}
        self.estimates: dict[tuple[str, ...], float] = {}

    def lookup(self, source: str) -> list[tuple] | None:
        if source in self.phrases:
            return self.phrases[source]
        if self.max_phrases and len(self.phrases) >= self.max_phrases:
            self.phrases.clear()
            self.estimates.clear()
        found = self.table.lookup(source)
        entries = None
        if found is not None:
            targets = [tuple(t.split()) for t in found[0]]
            static = np.zeros((len(targets), len(FEATURES)))
            static[:, TM] = found[1][:, :TM_COLUMNS]
            static[:, PHRASE] = 1.0
            static[:, WORD] = [-len(t) for t in targets]
            entries = self.score(targets, static, found[1][:, TM_COLUMNS:])
        self.phrases[source] = entries
        return entries

    def forced(self, source: str, target: tuple[str, ...]) -> list[tuple]:
        """The one option of a forced span (collect_options): its phrase-table scores when the table has the
        pair, else probability 1 (log 0) for the four translation features."""
        static = np.zeros((1, len(FEATURES)))
        static[0, PHRASE], static[0, WORD] = 1.0, -len(target)
        reordering = UNIFORM[None, :]
        found = self.table.lookup(source)
        for text, scores in zip(*found) if found is not None else ():
            if tuple(text.split()) == target:
                static[0, TM] = scores[:TM_COLUMNS]
                reordering = scores[None, TM_COLUMNS:]
                break
        return self.score([target], static, reordering)

    def score(self, targets: list[tuple[str, ...]], static: np.ndarray,
              reordering: np.ndarray | None = None) -> list[tuple]:
        """The capped entries of targets with their static features [targets, features] and, with the reordering
        model, their reordering ln probabilities [targets, 6] (None: uniform)."""
        if not self.table.reordering:
            rows = [None] * len(targets)
        elif reordering is None:
            rows = [UNIFORM] * len(targets)
        else:
            rows = list(np.asarray(reordering, dtype=np.float64))
        estimates = self.estimates
        lm_est = np.empty(len(targets))
        for k, t in enumerate(targets):
            e = estimates.get(t)
            if e is None:
                e = estimates[t] = lm_estimate(self.lm, t)
            lm_est[k] = e
        static_score = static @ self.w_static
        future = static_score + self.weights.vector[LM] * lm_est
        return [(targets[k], static[k], float(static_score[k]), float(future[k]), rows[k])
                for k in cap_options(future, self.limit)]


def collect_options(words: Sequence[str], cache: OptionCache,
                    forced: Mapping[tuple[int, int], tuple[str, ...]] | None = None) -> Options:
    """All options of the sentence (at most ``cache.limit`` per span by future score; 0: no cap).

    forced: source spans (first, last word) whose one option is the given target, as Moses' XML input in its
    exclusive mode (terminology): no other option covers any word of a forced span. Forced spans must not overlap.
    """
    n = len(words)
    max_length = cache.table.max_length
    forced = dict(forced or {})
    opts = Options(by_start=[[] for _ in range(n)], reordering=[] if cache.table.reordering else None)
    target_ids: dict[tuple[str, ...], int] = {}
    for i in range(n):
        ends = sorted(set(range(i, min(n, i + max_length))) | {b for a, b in forced if a == i})
        for j in ends:
            if (i, j) in forced:
                entries = cache.forced(" ".join(words[i:j + 1]), forced[(i, j)])
            elif any(a <= j and i <= b for a, b in forced):
                continue  # the span shares a word with a forced span
            else:
                entries = cache.lookup(" ".join(words[i:j + 1]))
            if entries is None:
                if j > i:
                    continue
                entries = cache.score([(words[i],)], passthrough_features(1)[None, :])
            ids = []
            for target, static, static_score, future, reordering in entries:
                ids.append(len(opts.targets))
                if opts.reordering is not None:
                    opts.reordering.append(reordering)
                opts.targets.append(target)
                opts.spans.append((i, j))
                opts.static.append(static)
                opts.static_score.append(static_score)
                opts.future.append(future)
                opts.target_ids.append(target_ids.setdefault(target, len(target_ids)))
            mask = ((1 << (j - i + 1)) - 1) << i
            inner = [(o, opts.future[o], opts.static_score[o], opts.target_ids[o]) for o in ids]
            opts.by_start[i].append(SpanOptions(i, j, mask, entries[0][3], inner))
    return opts


def passthrough_features(words: int) -> np.ndarray:
    """Static features of passing ``words`` unknown source words through as one phrase."""
    static = np.zeros(len(FEATURES))
    static[PHRASE] = 1.0
    static[WORD] = -words
    static[UNKNOWN] = -words
    return static
