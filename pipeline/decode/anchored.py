"""Anchored LMBR search: each sentence searched twice in one run, free and inside its PBMT lattice; the better wins.

Unconstrained LMBR decoding (LNMT, LTNMT) scores a hypothesis y by lambda * log P_NMT(y) + the gains L pays it, and
searches all strings of the target vocabulary with a beam. The beam compares hypotheses of one length, so under L it
keeps those that earn the lattice's surest n-grams first and loses those that spend their first steps on a clause L
is less sure of: the n-grams of that clause are then left unearned, because no later position fits them. On ger-eng
(models of the former small profile, a few hundred updates) the lattice MBR string scores higher than the search's own
output, under the search's own objective, on 42% of the devtest sentences (docs/benchmarks/posteriors-and-lmbr.md).

Anchoring adds a second copy of each sentence to the same run: the same models, the same L, and the acceptor hook
(pipeline/decode/constraints.py) at weight 0, so that copy searches the strings of the sentence's PBMT lattice under
the *same* objective. The output is the finished hypothesis of either copy with the higher score. The free copy
decodes as it would alone (decoding is batch invariant), so the anchored output never scores below the free one, and
the objective, the vocabulary and the strings it can produce are those of unconstrained LMBR: the lattice copy only
supplies the whole-sentence hypotheses that the free beam drops.

    best, from_lattice = translate_anchored(bpe_lines, models, settings, target,
                                            lambda ids: lmbr_hook_factory(store, bos_id, sentence_ids=ids),
                                            sentence_ids, acceptors)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from lattices.acceptor import Acceptor
from pipeline.decode.batching import position_limit
from pipeline.decode.beam_search import SearchSettings
from pipeline.decode.constraints import acceptor_hook_factory
from pipeline.decode.finalize import Hypothesis
from pipeline.decode.hooks import HookFactory, chain_factories
from pipeline.decode.scores import max_output_lengths
from pipeline.decode.translate import LoadedModels, Translation, source_lengths, translate_lines
from pipeline.text import TextProcessor
from pipeline.text.bpe import merge_bpe

__all__ = ["COPIES", "anchored_hooks", "best_of_copies", "better_copy", "translate_anchored"]

#: The copies of each line: 0 free, 1 inside its lattice.
COPIES = 2


def anchored_hooks(lmbr: Callable[[list[int]], HookFactory], sentence_ids: Sequence[int],
                   acceptors: Sequence[Acceptor | None], limits: Sequence[int], eos_id: int,
                   warn: Callable[[int, str], None] = lambda index, reason: None) -> HookFactory:
    """The hooks of a run over COPIES * n input lines, n = len(sentence_ids): input line k * n + i is copy k of line
    i. `lmbr(ids)` makes the LMBR hook factory whose input line j scores with the L of sentence ids[j]; copy 0 is
    free, copy 1 follows acceptors[i] (None: free as well) within limits[i] tokens at weight 0 (the same objective).
    `warn(i, reason)`: line i's acceptor is unusable (its lattice copy then decodes free)."""
    n = len(sentence_ids)
    if len(acceptors) != n or len(limits) != n:
        raise ValueError(f"{n} sentences but {len(acceptors)} acceptors and {len(limits)} limits")
    lattice = acceptor_hook_factory([None] * n + list(acceptors), [*limits, *limits], eos_id,
                                    lambda index, reason: warn(index % n, reason), weight=0.0)
    return chain_factories([lmbr(list(sentence_ids) * COPIES), lattice])


def better_copy(copies: Sequence[list[Hypothesis]]) -> int:
    """The copy whose best hypothesis ranks highest (ties: the earlier copy; a copy with none never wins)."""
    scores = [hyps[0].ranking_score if hyps else float("-inf") for hyps in copies]
    return max(range(len(scores)), key=lambda k: (scores[k], -k))


def best_of_copies(result: Translation, lines: int) -> tuple[Translation, list[int]]:
    """The Translation of `lines` lines from that of their COPIES * lines copies, each line taking the copy whose best
    hypothesis scores higher, and the lines (0-based) taken from the lattice copy. Stats count each line once."""
    if len(result.text) != COPIES * lines:
        raise ValueError(f"{len(result.text)} translated lines are not {COPIES} copies of {lines} lines")
    chosen = [k * lines + i for i in range(lines)
              for k in [better_copy([result.nbest[c * lines + i] for c in range(COPIES)])]]
    pick = lambda rows: [rows[j] for j in chosen]  # noqa: E731
    best = Translation(pick(result.text), pick(result.bpe), pick(result.nbest), pick(result.nbest_text),
                       pick(result.nbest_bpe), dict(result.stats))
    stats = best.stats
    seconds = stats.get("seconds", 0.0)
    stats["sentences"] = lines
    stats["decoded_sentences"] = stats.get("decoded_sentences", 0) // COPIES
    stats["source_words"] = stats.get("source_words", 0) // COPIES
    stats["words_per_minute"] = round(60 * stats["source_words"] / max(seconds, 1e-9), 1)
    stats["target_words"] = sum(len(merge_bpe(line.split())) for line in best.bpe)
    stats["backoff_sentences"] = sum(1 for hyps in best.nbest if hyps and hyps[0].backoff)
    return best, [i for i, j in enumerate(chosen) if j >= lines]


def translate_anchored(lines: Sequence[str], models: LoadedModels, settings: SearchSettings, target: TextProcessor,
                       lmbr: Callable[[list[int]], HookFactory], sentence_ids: Sequence[int],
                       acceptors: Sequence[Acceptor | None],
                       warn: Callable[[int, str], None] = lambda index, reason: None,
                       **batching: Any) -> tuple[Translation, list[int]]:
    """translate_lines of BPE `lines` (raw lines for a pretrained model; line i scored by the L of sentence_ids[i])
    under anchored search, and the lines (0-based) whose output came from the lattice copy. `batching`:
    translate_lines' batch_sentences, sort, streaming and refill."""
    lengths = torch.tensor(source_lengths(lines, models))
    limits = max_output_lengths(lengths, settings.max_length_a, settings.max_length_b,
                                position_limit(models.ensemble)).tolist()
    hooks = anchored_hooks(lmbr, sentence_ids, acceptors, limits, models.tgt_vocab.eos_id, warn)
    result = translate_lines(list(lines) * COPIES, models, settings, target, source=None, hook_factory=hooks,
                             **batching)
    return best_of_copies(result, len(lines))
