"""The score hook: where a search adds scores of its own to the NMT log-probabilities at every step.

Pure NMT uses :class:`ScoreHook` itself (every method a no-op). LMBR decoding (Algorithm 1, step 2) adds the L rows
of the hypotheses' histories; constraints set forbidden tokens to -inf (:class:`SentenceMaskHook`).

The contract, per time step t of one sentence batch, with R live hypotheses ("rows") of N sentences:

    log_probs = weight * model.step(state, prev)      [R, V]  (an Ensemble has averaged its members already)
    log_probs = hook.scores(log_probs, t)             [R, V]  e.g. log_probs + L[rows]; -inf forbids a token
    ...   + accumulated scores, top-B per sentence over [N, B*V], EOS candidates to the finished sets   ...
    hook.reorder(index)                               index [R'] int64: the row (of the R) each new row extends
    hook.advance(tokens)                              tokens [R'] int64: the token each new row appended (never EOS)
    hook.select_sentences(keep)                       keep [N'] int64, ascending: the sentences (positions in the
                                                      batch's current order) still decoding; called only on steps
                                                      where some sentence finished, after reorder and advance
    hook.merge(other, shift)                          streaming refill: another batch's hook, `shift` steps behind
                                                      (0 unless the model joins at any step); its rows and
                                                      sentences follow this hook's
    hook.headroom()                                   [R] or None, at the start of a step: how much the hook can
                                                      still add to each row; with a bound, a sentence stops when
                                                      no live row can reach its n-th best finished score
                                                      (beam_search.py); None keeps Algorithm 1's stop
    hook.allocation()                                 Allocation or None, at the start of a step: constraints that
                                                      must be met share the top-B out by progress (dynamic beam
                                                      allocation, allocation.py); None: the plain top-B

A hook owns its per-hypothesis state (e.g. L-matrix row ids [R]) and keeps it aligned with the rows through
`reorder` and `advance`; `reorder` may repeat rows and never includes rows of a sentence that has just finished.
Rows are sentence-major: the rows of batch sentence n are contiguous and ordered by rank, but a sentence may have
fewer than B rows (finished or pruned candidates leave no row). `scores` may return its input modified in place.

Lifecycle: the decoder calls a :data:`HookFactory` once per sentence batch with the input indices of its N
sentences (in batch order) and the device; the hook returned starts with one row per sentence, in that order (the
hypothesis [BOS] of each sentence: the rows of `model.encode`), and is dropped when the batch is done.

LMBR with lattices/batch.py (row ids are batch-global there, so select_sentences has nothing to do):

    class LmbrHook(ScoreHook):
        def __init__(self, batch: LMatrixBatch, bos_id: int):
            self.batch, self.rows = batch, batch.initial_rows(bos_id)        # [N]: the row of history [BOS]
        def scores(self, log_probs, t):
            return log_probs + self.batch.rows(self.rows)                    # [R, V] + L[rows] [R, V]
        def reorder(self, index):
            self.rows = self.rows.index_select(0, index)
        def advance(self, tokens):
            self.rows = self.batch.next_rows(self.rows, tokens)

    factory = lambda sentences, device: LmbrHook(LMatrixBatch([store[i] for i in sentences], device), bos_id)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import torch
from torch import Tensor

if TYPE_CHECKING:
    from pipeline.decode.allocation import Allocation

__all__ = ["ChainHook", "HookFactory", "ScoreHook", "SentenceMaskHook", "TokenMaskHook", "chain_factories", "no_hook",
           "token_mask_factory"]


class ScoreHook:
    """A hook that changes nothing: the pure NMT search. Subclasses override what they need."""

    def scores(self, log_probs: Tensor, t: int) -> Tensor:
        """log_probs [R, V] of step t (0: the first target token) -> the scores [R, V] the search ranks."""
        return log_probs

    def reorder(self, index: Tensor) -> None:
        """The new rows [R'] are the old rows `index` (int64, on the decoder's device)."""

    def advance(self, tokens: Tensor) -> None:
        """Row r appended tokens[r] ([R'] int64)."""

    def select_sentences(self, keep: Tensor) -> None:
        """Only the sentences `keep` [N'] (ascending positions among the current N) go on; renumber them 0..N'-1."""

    def merge(self, other: "ScoreHook", shift: int = 0) -> None:
        """Append the rows and sentences of `other` (a hook of the same kind) after this one's. `other`'s batch is
        `shift` steps behind this one (0: the same step): from now on, the step t that `scores` is given is its
        sentences' own step t - shift (a hook whose scores depend on t shifts their limits)."""

    def headroom(self) -> Tensor | None:
        """[R] an upper bound on what the hook can still add to each row's score, over all its continuations; or
        None, which stops the search at B finished hypotheses (Algorithm 1). A hook whose scores never rise above
        the NMT's (a mask, a cost) returns None: in a chain with a hook that gives a bound, it adds 0 to it."""
        return None

    def allocation(self) -> "Allocation | None":
        """The banks of a hook whose constraints must be met (allocation.py), or None: the plain top-B."""
        return None


HookFactory = Callable[[Sequence[int], torch.device], ScoreHook]


def no_hook(sentences: Sequence[int], device: torch.device) -> ScoreHook:
    """The factory of pure NMT decoding."""
    return ScoreHook()


class ChainHook(ScoreHook):
    """Several hooks applied in order (e.g. LMBR scores, then a constraint mask)."""

    def __init__(self, hooks: Sequence[ScoreHook]) -> None:
        self.hooks = list(hooks)

    def scores(self, log_probs: Tensor, t: int) -> Tensor:
        for hook in self.hooks:
            log_probs = hook.scores(log_probs, t)
        return log_probs

    def reorder(self, index: Tensor) -> None:
        for hook in self.hooks:
            hook.reorder(index)

    def advance(self, tokens: Tensor) -> None:
        for hook in self.hooks:
            hook.advance(tokens)

    def select_sentences(self, keep: Tensor) -> None:
        for hook in self.hooks:
            hook.select_sentences(keep)

    def merge(self, other: ScoreHook, shift: int = 0) -> None:
        for hook, theirs in zip(self.hooks, other.hooks):
            hook.merge(theirs, shift)

    def headroom(self) -> Tensor | None:
        """The sum of the members' bounds (None when no member gives one)."""
        bounds = [b for b in (hook.headroom() for hook in self.hooks) if b is not None]
        return sum(bounds[1:], bounds[0]) if bounds else None

    def allocation(self) -> "Allocation | None":
        """The one member's allocation (two members with banks cannot share one beam)."""
        found = [a for a in (hook.allocation() for hook in self.hooks) if a is not None]
        if len(found) > 1:
            raise ValueError("only one hook of a chain may allocate the beam")
        return found[0] if found else None


def chain_factories(factories: Sequence[HookFactory | None]) -> HookFactory | None:
    """One factory whose hooks chain the hooks of `factories` (Nones left out; None when none is left)."""
    chosen = [f for f in factories if f is not None]
    if len(chosen) <= 1:
        return chosen[0] if chosen else None
    return lambda sentences, device: ChainHook([f(sentences, device) for f in chosen])


class SentenceMaskHook(ScoreHook):
    """Constraints as a mask: `forbidden` [N, V] bool says, per sentence of the batch, which tokens never follow.

    It tracks the sentence of every row ([R] int64) through reorder and select_sentences, the pattern any hook with
    per-sentence data follows.
    """

    def __init__(self, forbidden: Tensor) -> None:
        self.forbidden = forbidden                                              # [N, V] bool
        self.row_sentence = torch.arange(forbidden.shape[0], device=forbidden.device)  # [R]

    def scores(self, log_probs: Tensor, t: int) -> Tensor:
        return log_probs.masked_fill(self.forbidden.index_select(0, self.row_sentence), float("-inf"))

    def reorder(self, index: Tensor) -> None:
        self.row_sentence = self.row_sentence.index_select(0, index)

    def select_sentences(self, keep: Tensor) -> None:
        renumber = torch.full((self.forbidden.shape[0],), -1, dtype=torch.long, device=keep.device)
        renumber[keep] = torch.arange(keep.numel(), device=keep.device)
        self.forbidden = self.forbidden.index_select(0, keep)
        self.row_sentence = renumber[self.row_sentence]

    def merge(self, other: ScoreHook, shift: int = 0) -> None:
        self.row_sentence = torch.cat([self.row_sentence, other.row_sentence + self.forbidden.shape[0]])
        self.forbidden = torch.cat([self.forbidden, other.forbidden])


class TokenMaskHook(ScoreHook):
    """Tokens that no row may produce, in every sentence and at every step: e.g. ``<unk>`` in a search that is not
    held to a lattice, where nothing can give the unknown word back (Marian's default, without ``--allow-unk``).
    It keeps no per-row state, so reorder, advance, select_sentences and merge have nothing to do."""

    def __init__(self, tokens: Tensor) -> None:
        self.tokens = tokens                                                    # [K] int64

    def scores(self, log_probs: Tensor, t: int) -> Tensor:
        log_probs[:, self.tokens] = float("-inf")
        return log_probs


def token_mask_factory(tokens: Sequence[int]) -> HookFactory | None:
    """The factory of a :class:`TokenMaskHook` forbidding `tokens` (None when there are none)."""
    if not tokens:
        return None
    ids = sorted(set(tokens))
    return lambda sentences, device: TokenMaskHook(torch.tensor(ids, dtype=torch.long, device=device))
