"""Terminology constraints: every hypothesis that ends must contain each of its sentence's target terms.

A score hook (hooks.py). Each sentence has K terms, each a sequence of target token ids. Every row follows, per
term, the term's string-matching automaton (Knuth-Morris-Pratt's): its state is the length of the longest prefix
of the term that ends the row's history and starts at a word boundary, and the length of the term once the term
has occurred (then it stays met). So a term counts wherever it occurs, in any order, and a row that drifts off a
term resumes it where the automaton says. Word boundaries: with subwords, a term must not start inside a word
("Poliz" + "erzählte" holds the subwords of "erzählte" but not the word); `final` [V] says which tokens end a word
(BOS counts as one), and a term may start only after one of them (None: anywhere).

    scores     EOS is -inf on rows with an unmet term, even at the length limit: a row that misses a term then
               has no candidate left, and a sentence whose every row does returns no hypothesis (the caller falls
               back to the unconstrained best)
    allocation the next token of each unmet term joins the top-B; the bank of a candidate is the term tokens met
               after it (sum of its terms' states), so the beam keeps room for rows that progress
               (allocation.py, Post & Vilar 2018)

The terms of a sentence come from elsewhere (pipeline/deploy/terms.py matches a terms file to the input); a
sentence without terms is decoded as without the hook. :func:`contains` is the check of the result.

State, per row R: the batch sentence of the row and its term states [R, K]; per sentence N the terms as padded
tables (tokens [N, K, M], lengths [N, K], the automata's transitions [N, K, M, M]).
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import Tensor

from pipeline.decode.allocation import Allocation
from pipeline.decode.hooks import HookFactory, ScoreHook

__all__ = ["TermHook", "contains", "term_automaton", "term_hook_factory"]

Term = Sequence[int]


def term_automaton(term: Term, final: Callable[[int], bool] = lambda token: True) -> list[list[int]]:
    """delta[s][j]: the state after reading token term[j] in state s (0 <= s < len(term)); any token not in the
    term leads to state 0; len(term) means "the term has occurred". The state is the longest k such that term[:k]
    ends term[:s] + [term[j]] and starts at a word boundary: at the start of the current match (checked when the
    match began), or after a token of the term that is `final`. From state 0 the result is 0 or 1, and a 1 still
    needs the row's previous token to be final (TermHook checks it). Terms are short: plain search, O(len^3)."""
    length = len(term)
    delta = []
    for s in range(length):
        row = []
        for token in term:
            read = tuple(term[:s]) + (token,)
            row.append(next((k for k in range(min(s + 1, length), 0, -1)
                             if read[s + 1 - k:] == tuple(term[:k]) and (s + 1 - k == 0 or final(read[s - k]))), 0))
        delta.append(row)
    return delta


def contains(tokens: Sequence[int], term: Term, final: Callable[[int], bool] = lambda token: True) -> bool:
    """Whether `term` occurs in `tokens` as a contiguous sequence, starting at a word boundary (the first token, or
    after a `final` token)."""
    n = len(term)
    return n == 0 or any(tuple(tokens[i:i + n]) == tuple(term) and (i == 0 or final(tokens[i - 1]))
                         for i in range(len(tokens) - n + 1))


class _TermTables:
    """The terms of N sentences, padded to K terms of M tokens (a padded term has length 0: met from the start):
    tokens [N, K, M] (-1 past a term's end), lengths [N, K], the automata's transitions delta [N, K, M, M]."""

    def __init__(self, terms: list[list[Term]], tokens: Tensor, lengths: Tensor, delta: Tensor) -> None:
        self.terms, self.tokens, self.lengths, self.delta = terms, tokens, lengths, delta
        self.levels = lengths.sum(dim=1)  # [N] term tokens in all

    @classmethod
    def build(cls, terms: Sequence[Sequence[Term]], final: Tensor | None, device: torch.device) -> "_TermTables":
        """The tables of `terms`, each automaton built once (term_automaton)."""
        terms = [list(map(tuple, t)) for t in terms]
        is_final = (lambda token: bool(final[token])) if final is not None else (lambda token: True)
        n, k = len(terms), max((len(t) for t in terms), default=0)
        m = max((len(term) for t in terms for term in t), default=1)
        tokens = torch.full((n, k, m), -1, dtype=torch.long)
        lengths = torch.zeros((n, k), dtype=torch.long)
        delta = torch.zeros((n, k, m, m), dtype=torch.long)
        for s, sentence in enumerate(terms):
            for j, term in enumerate(sentence):
                tokens[s, j, :len(term)] = torch.tensor(term)
                lengths[s, j] = len(term)
                delta[s, j, :len(term), :len(term)] = torch.tensor(term_automaton(term, is_final))
        return cls(terms, tokens.to(device), lengths.to(device), delta.to(device))

    def select(self, keep: Tensor) -> "_TermTables":
        """The tables of sentences `keep` [N'] (in that order), K cut to their most terms."""
        terms = [self.terms[i] for i in keep.tolist()]
        k = max((len(t) for t in terms), default=0)
        return _TermTables(terms, self.tokens[keep, :k], self.lengths[keep, :k], self.delta[keep, :k])

    def concat(self, other: "_TermTables") -> "_TermTables":
        """The sentences of both tables, padded to the wider K and M."""
        k = max(self.lengths.shape[1], other.lengths.shape[1])
        m = max(self.tokens.shape[2], other.tokens.shape[2])

        def pad(x: Tensor, value: int, token_dims: int) -> Tensor:
            """x [N, K, M x token_dims] padded at the end to [N, k, m x token_dims]."""
            return torch.nn.functional.pad(x, [0, m - x.shape[-1]] * token_dims + [0, k - x.shape[1]], value=value)

        return _TermTables(self.terms + other.terms,
                           torch.cat([pad(self.tokens, -1, 1), pad(other.tokens, -1, 1)]),
                           torch.cat([pad(self.lengths, 0, 0), pad(other.lengths, 0, 0)]),
                           torch.cat([pad(self.delta, 0, 2), pad(other.delta, 0, 2)]))

    def next_states(self, sentences: Tensor, states: Tensor, tokens: Tensor, boundary: Tensor) -> Tensor:
        """sentences [M], states [M, K], tokens [M], boundary [M] (the token before ends a word) -> [M, K] the
        states after each token (a met term stays met; a term starts only at a boundary)."""
        lengths = self.lengths[sentences]                                       # [M, K]
        terms = self.tokens[sentences]                                          # [M, K, T]
        hit = terms == tokens[:, None, None]                                    # [M, K, T]
        j = hit.long().argmax(dim=2)                                            # [M, K] a position of the token
        s = states.clamp(max=terms.shape[2] - 1)
        moved = self.delta[sentences[:, None], torch.arange(states.shape[1], device=states.device), s, j]
        nxt = torch.where(hit.any(dim=2) & ((states > 0) | boundary[:, None]), moved, torch.zeros_like(moved))
        return torch.where(states >= lengths, states, nxt)


class TermHook(ScoreHook):
    """See the module docstring."""

    def __init__(self, terms: Sequence[Sequence[Term]], eos_id: int, device: torch.device,
                 final: Tensor | None = None) -> None:
        """final: [V] bool, the tokens that end a word (None: a term may start anywhere)."""
        self.eos_id = eos_id
        self.final = final.to(device) if final is not None else None
        self.tables = _TermTables.build(terms, self.final, device)
        self.row_sentence = torch.arange(len(terms), device=device)                     # [R]
        self.states = torch.zeros_like(self.tables.lengths)                              # [R, K]
        self.boundary = torch.ones(len(terms), dtype=torch.bool, device=device)         # [R] after BOS: yes

    def unmet(self) -> Tensor:
        """[R] bool: the row misses some term."""
        return (self.states < self.tables.lengths[self.row_sentence]).any(dim=1)

    def scores(self, log_probs: Tensor, t: int) -> Tensor:
        if self.states.shape[1]:
            log_probs[:, self.eos_id].masked_fill_(self.unmet(), float("-inf"))
        return log_probs

    def allocation(self) -> Allocation | None:
        if not self.states.shape[1]:  # no sentence of the batch has a term
            return None
        tables, sentences = self.tables, self.row_sentence
        lengths = tables.lengths[sentences]                                              # [R, K]
        position = self.states.clamp(max=max(tables.tokens.shape[2] - 1, 0))
        following = tables.tokens[sentences].gather(2, position[:, :, None]).squeeze(2)      # [R, K]
        extra = torch.where(self.states < lengths, following, torch.full_like(following, -1))

        def progress(rows: Tensor, tokens: Tensor) -> Tensor:
            return tables.next_states(sentences[rows], self.states[rows], tokens, self.boundary[rows]).sum(dim=1)

        return Allocation(extra, progress, tables.levels)

    def reorder(self, index: Tensor) -> None:
        self.states = self.states.index_select(0, index)
        self.row_sentence = self.row_sentence.index_select(0, index)
        self.boundary = self.boundary.index_select(0, index)

    def advance(self, tokens: Tensor) -> None:
        if self.states.shape[1]:
            self.states = self.tables.next_states(self.row_sentence, self.states, tokens, self.boundary)
        self.boundary = self.final[tokens] if self.final is not None else self.boundary

    def select_sentences(self, keep: Tensor) -> None:
        renumber = torch.full((len(self.tables.terms),), -1, dtype=torch.long, device=keep.device)
        renumber[keep] = torch.arange(keep.numel(), device=keep.device)
        self.row_sentence = renumber[self.row_sentence]
        self.tables = self.tables.select(keep)
        self.states = self.states[:, :self.tables.lengths.shape[1]]

    def merge(self, other: ScoreHook, shift: int = 0) -> None:
        if not isinstance(other, TermHook):
            raise TypeError(f"a term hook merges with another term hook, not {other!r}")
        width = max(self.states.shape[1], other.states.shape[1])

        def widen(states: Tensor) -> Tensor:
            return torch.nn.functional.pad(states, (0, width - states.shape[1]))

        self.row_sentence = torch.cat([self.row_sentence, other.row_sentence + len(self.tables.terms)])
        self.states = torch.cat([widen(self.states), widen(other.states)])
        self.boundary = torch.cat([self.boundary, other.boundary])
        self.tables = self.tables.concat(other.tables)


def term_hook_factory(terms: Sequence[Sequence[Term]], eos_id: int, final: Tensor | None = None) -> HookFactory:
    """A hook factory for decode_sources / translate_lines: every output of input index i contains each term of
    terms[i] (token id sequences), starting after a `final` token ([V] bool; None: anywhere); a sentence that
    cannot meet them within its length limit gets no output."""
    def factory(indices: Sequence[int], device: torch.device) -> ScoreHook:
        return TermHook([terms[i] for i in indices], eos_id, device, final)

    return factory
