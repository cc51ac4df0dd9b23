"""Batched beam search (Iglesias et al. 2018, Algorithm 1): N sentences x B beam items in one neural query per step.

    hyps = beam_search(model, src, src_lengths, max_lengths, settings, hook)     -> N lists of Hypothesis

`model` is any StepModel (pipeline/nmt/interface.py: a model or an Ensemble, which averages log-probabilities);
src [N, S] int64 (each source ends in EOS, padded after src_lengths [N]); max_lengths [N] int64 output limits
(:func:`pipeline.decode.scores.max_output_lengths`). One step t, with R live hypotheses ("rows", R <= N*B):

    1. log_probs [R, V] = weight * model.step(state, prev)                      (one query for all rows)
    2. scores [R, V] = hook.scores(log_probs, t); at the length limit only EOS   (hooks.py: LMBR's L goes here)
    3. grid [N, B*V] = q_{t-1} [R, 1] + scores, placed in the rows' slots        (scores.py)
       early pruning below threshold x best; top-B per sentence -> origin slot, token, q_t   (topk.py)
       (a hook with constraints to meet shares the B out over its banks instead: allocation.py)
    4. EOS candidates in the top B -> finished sets F_s; EOS candidates outside it -> backoff stack (finalize.py)
    5. the other candidates are the new rows: ONE index [R'] reorders the model state, the hook state, the token
       history (the back-pointers, kept as the rows' token prefixes [R', t+1]) and the scores
    6. sentences with B finished hypotheses or no live row are done: their rows are already gone from the index,
       and their per-sentence data leave the batch (hook.select_sentences)

Step 6 is Algorithm 1's stop, right when scores only fall as hypotheses grow. A hook whose scores can rise (LMBR
with bounded gains) gives its headroom instead (hooks.py): an upper bound on what each row can still gain. Then a
sentence ends when no live candidate can reach its n-th best finished score (score before the step + headroom;
exact for raw scores, length_penalty 0), or once patience x B hypotheses have finished (settings.patience, Kasai
et al. 2022). Otherwise B early EOS candidates would end it while a longer hypothesis that would collect more of
L's n-grams is still in the beam. On ger-eng's tuning set with the former small profile's models (a few hundred
updates; bounded gains, lambda 0.02), patience 4 finds the same outputs as the bound alone in 64% of its time.

Without a headroom (scores only fall: plain NMT, masks, costs), `settings.early_exit` ends a sentence as soon as no
live candidate's score reaches its n-th best finished score, besides Algorithm 1's stop. Every later hypothesis
would score at most a live candidate's score, so the n-best list is Algorithm 1's (up to exact ties): this is
CTranslate2's early exit (its beam search without length or coverage penalty), which saves the steps a sentence
spends after its best hypothesis has ended. It needs raw scores (length_penalty 0) and a weight of at least 0.

At step t == max_lengths[n] only EOS can follow (as in greedy decoding), so every hypothesis of sentence n ends by
then; the n-best list is F_s re-ranked (finalize.py), or the backoff stack when F_s is empty (an EOS that never made
the top B, e.g. when a hook forbids EOS at the limit). The search masks no token other than EOS (BOS, PAD and UNK
are scored like any other token, as by greedy decoding); hooks forbid tokens: the LMBR hook BOS (lmbr_hook.py), the
constraint hooks whatever their acceptors do not allow, TokenMaskHook a fixed set (hooks.py).

There is no padding on the target side: all rows share one time index, and a sentence that finishes simply stops
having rows (a sentence that joined a running batch counts its own steps from its `start`: BeamBatch.merge).
Empty slots (finished or pruned candidates, and the B-1 empty slots of the first step, where each sentence has
only its [BOS] row) take part in the top-B as -inf, so a sentence's beam refills from its other candidates.
Nothing in a step depends on the other sentences of the batch, so a sentence decodes to the same output alone or
in any batch (up to floating-point differences of batched matrix products).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from pipeline.decode.allocation import allocated_top_candidates, extra_candidates
from pipeline.decode.finalize import BackoffStack, FinishedSet, Hypothesis, best_hypotheses
from pipeline.decode.hooks import ScoreHook
from pipeline.decode.scores import NEG_INF, candidate_grid, force_eos, slot_rows
from pipeline.decode.topk import full_beam_candidates, prune_below_threshold, top_candidates
from pipeline.nmt.interface import DecoderState, StepModel
from pipeline.nmt.threads import serial_steps

__all__ = ["BeamBatch", "SearchSettings", "beam_search"]


@dataclass(frozen=True)
class SearchSettings:
    """What the search does (sentence batching and sorting are the caller's: batching.py).

    beam: B, hypotheses kept per sentence; nbest: hypotheses returned per sentence (<= beam); threshold: early
    pruning of candidates below threshold x the best candidate's probability (0: off; the paper's accelerated
    system: 0.01); length_penalty: rank finished hypotheses by score / length^alpha (0: raw scores);
    max_length_a, max_length_b: at most a * |source| + b output tokens; weight: lambda, the scale of the NMT
    log-probabilities (LMBR: 0.5 on the ensemble average, the paper's 0.5 / models on their sum); patience: with a
    hook whose scores can rise (a headroom), a sentence also ends once patience x B hypotheses have finished
    (Kasai et al. 2022's patience factor; Algorithm 1's B finished is patience 1, the stop without a headroom);
    early_exit: without a headroom, also end a sentence once no live candidate can reach its n-th best finished
    score (the same n-best, fewer steps; see the module docstring); full_beam: the EOS policy of Hugging Face's
    `generate` and fairseq (topk.py): EOS among the top B candidates finish and the B best other candidates of the
    top 2B live on, instead of the paper's beam that gives up the finished hypotheses' slots for one step; with it,
    the n-best lists are `generate`'s (num_beams=B, length_penalty=0, early_stopping=True) whenever every hypothesis
    ends before the length limit.
    """

    beam: int = 4
    nbest: int = 1
    threshold: float = 0.0
    length_penalty: float = 0.0
    max_length_a: float = 2.0
    max_length_b: int = 10
    weight: float = 1.0
    patience: float = 1.0
    early_exit: bool = False
    full_beam: bool = False

    def __post_init__(self) -> None:
        if self.beam < 1:
            raise ValueError(f"beam must be at least 1, not {self.beam}")
        if not 1 <= self.nbest <= self.beam:
            raise ValueError(f"nbest must be between 1 and the beam ({self.beam}), not {self.nbest}")
        if not 0 <= self.threshold <= 1:
            raise ValueError(f"threshold must be in [0, 1], not {self.threshold}")
        if self.max_length_a < 0 or self.max_length_b < 0:
            raise ValueError("max_length_a and max_length_b must not be negative")
        if self.patience < 1:
            raise ValueError(f"patience must be at least 1, not {self.patience}")
        if self.early_exit and (self.length_penalty != 0 or self.weight < 0):
            raise ValueError("early_exit needs raw scores: length_penalty 0 and a weight of at least 0")


@torch.inference_mode()
def beam_search(model: StepModel, src: Tensor, src_lengths: Tensor, max_lengths: Tensor,
                settings: SearchSettings, hook: ScoreHook | None = None) -> list[list[Hypothesis]]:
    """The n-best lists (best first) of the N sentences of src [N, S]; see the module docstring.

    A list is empty only when every path to EOS was forbidden (-inf) by the hook.
    """
    if src.shape[0] == 0:
        return []
    batch = BeamBatch(model, src, src_lengths, max_lengths, settings, hook)
    results: list[list[Hypothesis]] = [[] for _ in range(src.shape[0])]
    while not batch.done:
        for position, hyps in batch.step():
            results[position] = hyps
    return results


class BeamBatch:
    """The search state of a batch of sentences that share one time index t, advanced one step at a time.

    Sentences are known by their position in the batch as created (0..N-1); :meth:`merge` appends another batch,
    whose sentences keep their own numbering shifted by this batch's N (the streaming decoder's refill). The other
    batch is at the same t, or, for a model that joins at any step (a GRU), at most this one's t: its sentences then
    count their steps from the one they joined at (their `start`): their length limits are shifted by it, and their
    rows' token histories begin with that many placeholder positions, dropped from their hypotheses.
    """

    @torch.inference_mode()
    def __init__(self, model: StepModel, src: Tensor, src_lengths: Tensor, max_lengths: Tensor,
                 settings: SearchSettings, hook: ScoreHook | None = None) -> None:
        n, device = src.shape[0], src.device
        self.model, self.settings = model, settings
        self.hook = hook if hook is not None else ScoreHook()
        self.size = n                                  # sentences ever in the batch (positions 0..size-1)
        self.limits = max_lengths.to(device)           # [N] of the active sentences
        self.source_lengths = src_lengths.tolist()     # of the active sentences
        self.source_width = src.shape[1]               # the padded source length of the state
        self.merged = False                            # a batch that took others in cuts its source padding
        self.state = model.encode(src, src_lengths.to(device))
        self.sentence = list(range(n))                 # batch position of each active sentence
        self.start = [0] * n                           # the step each active sentence joined at
        self.row_slot = torch.arange(n, device=device) * settings.beam  # [R] the slot of each live row
        self.scores = torch.zeros(n, device=device)    # [R] accumulated scores q
        self.history = torch.zeros((n, 0), dtype=torch.long, device=device)  # [R, t] the rows' tokens
        self.prev = torch.full((n,), model.bos_id, dtype=torch.long, device=device)
        self.count = torch.zeros(n, dtype=torch.long, device=device)         # [N] |F_s|
        self.nth_best = torch.full((n,), NEG_INF, device=device)             # [N] (kept with a hook's headroom)
        self.finished = {k: FinishedSet() for k in range(n)}                # F_s of the active, by batch position
        self.backoff = BackoffStack(n, settings.nbest, int(self.limits.max()), device)
        self.first_limit = int(self.limits.min())      # no row is at its limit before this step
        self.need_backoff = True                       # some active sentence has an empty F_s
        self.t = 0

    @property
    def done(self) -> bool:
        return not self.sentence

    @property
    def active(self) -> int:
        """Sentences still decoding."""
        return len(self.sentence)

    def can_merge(self, other: "BeamBatch") -> bool:
        """Whether :meth:`merge` accepts `other`: at the same step, or behind it with a model that joins at any
        step; never with a shared cache (DecoderState.shared)."""
        if self.state.shared or other.state.shared:  # a cache that is not per row (DecoderState.shared)
            return False
        return other.t == self.t or (other.t < self.t and getattr(self.model, "joins_at_any_step", False))

    @torch.inference_mode()
    def merge(self, other: "BeamBatch") -> None:
        """Append the sentences of `other` (same model and settings; see :meth:`can_merge`); its positions shift by
        self.size."""
        if self.state.shared or other.state.shared:
            raise ValueError("a batch whose model state has a shared cache (DecoderState.shared) joins no other")
        if not self.can_merge(other):
            raise ValueError(f"a batch at step {other.t} cannot join one at step {self.t} (this model joins only at "
                             "the same step)")
        beam, shift = self.settings.beam, self.t - other.t
        self.state = DecoderState.concat([self.state, other.state], any_time=shift > 0)
        self.hook.merge(other.hook, shift)
        self.row_slot = torch.cat([self.row_slot, other.row_slot + self.active * beam])
        self.scores = torch.cat([self.scores, other.scores])
        self.history = torch.cat([self.history, torch.nn.functional.pad(other.history, (shift, 0))])
        self.prev = torch.cat([self.prev, other.prev])
        self.count = torch.cat([self.count, other.count])
        self.nth_best = torch.cat([self.nth_best, other.nth_best])
        self.limits = torch.cat([self.limits, other.limits + shift])
        self.backoff.merge(other.backoff, shift)
        self.sentence += [self.size + s for s in other.sentence]
        self.start += [start + shift for start in other.start]
        self.source_lengths += other.source_lengths
        self.source_width = max(self.source_width, other.source_width)
        self.merged = True
        self.finished.update({self.size + k: f for k, f in other.finished.items()})
        self.size += other.size
        self.first_limit = min(self.first_limit, other.first_limit + shift)
        self.need_backoff = self.need_backoff or other.need_backoff

    @torch.inference_mode()
    def step(self) -> list[tuple[int, list[Hypothesis]]]:
        """One step of Algorithm 1 for every active sentence; returns (position, n-best) of the sentences it ends.
        Its small operations run on one thread where the model asks for it (serial_small_ops)."""
        with serial_steps(self.model):
            return self._step()

    def _step(self) -> list[tuple[int, list[Hypothesis]]]:
        model, settings, hook = self.model, self.settings, self.hook
        device = self.scores.device
        active, beam, vocab, eos, t = len(self.sentence), settings.beam, model.tgt_vocab_size, model.eos_id, self.t
        headroom = hook.headroom()                                          # [R] or None
        allocation = hook.allocation()                                      # dynamic beam allocation or None
        log_probs, self.state = model.step(self.state, self.prev)
        if settings.weight != 1.0:
            log_probs = log_probs * settings.weight
        step_scores = hook.scores(log_probs, t)
        if t >= self.first_limit:
            step_scores = force_eos(step_scores, self.limits.index_select(0, self.row_slot // beam) <= t, eos)
        candidates = step_scores + self.scores[:, None]                     # [R, V]
        if self.need_backoff:
            eos_candidates = candidates[:, eos].clone()                     # [R], before pruning
        grid = candidate_grid(candidates, self.row_slot, active, beam)
        if allocation is not None:  # the constraint tokens join the top-B however low they score
            extras = extra_candidates(grid, self.row_slot, beam, vocab, allocation.extra)
        if settings.full_beam:  # live [N, B] without EOS, and the EOS candidates among the top B that end
            if allocation is not None:
                raise ValueError("full_beam does not combine with a hook that allocates the beam")
            top, ending = full_beam_candidates(prune_below_threshold(grid, settings.threshold), beam, vocab, eos)
        else:  # [N, B] each; the EOS among them end
            top, ending = top_candidates(prune_below_threshold(grid, settings.threshold), beam, vocab), None
        full = candidates.shape[0] == active * beam                         # every slot has a row
        if full:                                                            # [N, B] live row of each slot
            slot_row = torch.arange(active * beam, device=device).view(active, beam)
        else:
            slot_row = slot_rows(self.row_slot, active * beam).view(active, beam)
        if allocation is not None:
            top = allocated_top_candidates(top, top.origin * vocab + top.tokens, extras, slot_row, beam, vocab,
                                           allocation)
        ending = top if ending is None else ending
        origin_row = slot_row.gather(1, top.origin)                         # [N, B] the row each candidate extends
        is_eos = top.tokens == eos
        ends = ending.alive & (ending.tokens == eos)                        # [N, B] the EOS candidates that finish
        finishing = bool((is_eos | (top.scores == NEG_INF)).any()) or (ending is not top and bool(ends.any()))
        live = top.alive & ~is_eos if finishing else None                   # [N, B]; None: every candidate
        if finishing:
            done_eos = ends
            if bool(done_eos.any()):
                where = done_eos.nonzero().tolist()
                rows = (origin_row if ending is top else slot_row.gather(1, ending.origin))[done_eos]
                prefixes = self.history.index_select(0, rows).tolist()
                for (s, _), score, prefix in zip(where, ending.scores[done_eos].tolist(), prefixes):
                    self.finished[self.sentence[s]].add(score, tuple(prefix[self.start[s]:]))
                self.count += done_eos.sum(dim=1)
                if headroom is not None or settings.early_exit:
                    self._update_nth_best(sorted({s for s, _ in where}))
                if self.need_backoff:
                    eos_candidates.index_fill_(0, rows, NEG_INF)            # these EOS candidates survived
        if self.need_backoff:  # (only a sentence whose F_s stays empty ever reads its stack)
            self.backoff.offer(candidate_grid(eos_candidates[:, None], self.row_slot, active, beam), slot_row,
                               self.history)
            self.need_backoff = bool((self.count == 0).any())
        done = self._done(live, origin_row, headroom, top.scores)           # [N] or None: nobody ends
        if done is None:
            # the usual step: all N*B candidates live on, nothing finishes
            index, tokens, scores = origin_row.view(-1), top.tokens.view(-1), top.scores.view(-1)
            new_slot = torch.arange(active * beam, device=device)
        else:
            go_on = (~done)[:, None].expand(active, beam) if live is None else live & ~done[:, None]
            new_slot = go_on.reshape(-1).nonzero().squeeze(1)               # [R'] ascending
            index = origin_row.view(-1).index_select(0, new_slot)
            tokens = top.tokens.view(-1).index_select(0, new_slot)
            scores = top.scores.view(-1).index_select(0, new_slot)
        usual = live is None and done is None
        if self.merged and done is not None:  # before the reorder copies the per-source tensors
            self._cut_source_padding(done)
        self.scores = scores
        self.history = torch.cat([self.history.index_select(0, index), tokens[:, None]], dim=1)
        # full before and after, in the same sentence blocks: the rows' sources are unchanged
        self.state = model.reorder(self.state, index, same_sources=full and usual)
        hook.reorder(index)
        hook.advance(tokens)
        self.prev = tokens
        ended: list[tuple[int, list[Hypothesis]]] = []
        if done is not None and bool(done.any()):
            done_list = done.tolist()
            for s, is_done in enumerate(done_list):
                if is_done:
                    ended.append((self.sentence[s], _choose(self.finished.pop(self.sentence[s]), self.backoff, s,
                                                            self.start[s], settings)))
            keep = (~done).nonzero().squeeze(1)
            renumber = torch.cumsum(~done, dim=0) - 1
            new_slot = renumber[new_slot // beam] * beam + new_slot % beam
            self.sentence = [self.sentence[s] for s, is_done in enumerate(done_list) if not is_done]
            self.start = [self.start[s] for s, is_done in enumerate(done_list) if not is_done]
            self.source_lengths = [n for n, is_done in zip(self.source_lengths, done_list) if not is_done]
            self.limits, self.count = self.limits.index_select(0, keep), self.count.index_select(0, keep)
            self.nth_best = self.nth_best.index_select(0, keep)
            self.backoff.select(keep)
            if self.sentence:
                hook.select_sentences(keep)
                self.first_limit = int(self.limits.min())
                self.need_backoff = self.need_backoff and bool((self.count == 0).any())
        self.row_slot = new_slot
        self.t += 1
        return ended

    def _cut_source_padding(self, done: Tensor) -> None:
        """When the longest sources of a merged batch end, cut the source padding of the state to the longest of the
        sentences that go on (a refilled pool would otherwise keep the longest source it ever held). Batches that
        never merged keep their width, so that plain batched decoding computes exactly as before."""
        going_on = [n for n, is_done in zip(self.source_lengths, done.tolist()) if not is_done]
        if going_on and max(going_on) < self.source_width:
            self.source_width = max(going_on)
            self.state = self.state.narrow_sources(self.source_width)

    def _done(self, live: Tensor | None, origin_row: Tensor, headroom: Tensor | None,
              candidate_scores: Tensor) -> Tensor | None:
        """[N] the sentences this step ends (None: none). Algorithm 1 (headroom None): B finished hypotheses, or no
        live candidate; with early_exit, also when no live candidate (candidate_scores [N, B]) reaches the n-th best
        finished score. With the hook's bound, instead: no live candidate can still reach the sentence's n-th best
        finished score (its score before the step plus the hook's headroom bounds every continuation), or
        patience x B hypotheses have finished."""
        if headroom is None:
            if not self.settings.early_exit:
                return None if live is None else (self.count >= self.settings.beam) | ~live.any(dim=1)
            reach = candidate_scores if live is None else candidate_scores.masked_fill(~live, NEG_INF)
            done = (reach.max(dim=1).values <= self.nth_best) | (self.count >= self.settings.beam)
            return done if live is not None or bool(done.any()) else None
        reach = (self.scores + headroom)[origin_row.clamp(min=0)]                 # [N, B]
        if live is not None:
            reach = reach.masked_fill(~live, NEG_INF)
        patient = self.count >= self.settings.patience * self.settings.beam
        done = (reach.max(dim=1).values <= self.nth_best) | patient
        return done if live is not None or bool(done.any()) else None

    def _update_nth_best(self, positions: list[int]) -> None:
        """nth_best [N] of the given active sentences: their n-th best finished score (raw; -inf: fewer)."""
        n = self.settings.nbest
        for s in positions:
            scores = sorted((score for score, _ in self.finished[self.sentence[s]].entries), reverse=True)
            self.nth_best[s] = scores[n - 1] if len(scores) >= n else NEG_INF


def _choose(finished: FinishedSet, backoff: BackoffStack, position: int, start: int,
            settings: SearchSettings) -> list[Hypothesis]:
    """The n-best list of one sentence: from F_s, or from the backoff stack when F_s is empty."""
    if len(finished):
        return best_hypotheses(finished.entries, settings.nbest, settings.length_penalty)
    return best_hypotheses(backoff.entries(position, start), settings.nbest, settings.length_penalty, backoff=True)
