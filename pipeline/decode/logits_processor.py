"""A score hook (hooks.py) as a `transformers` LogitsProcessor: LMBR's step scores inside `model.generate`.

    hook = lmbr_hook_factory(store, bos_id)(range(len(lines)), device)        one row per sentence, as for our search
    processor = HookLogitsProcessor(hook, num_beams=4, prefix_length=1, weight=0.5, offset=LABEL_OFFSET)
    model.generate(**inputs, num_beams=4, logits_processor=LogitsProcessorList([processor]))

`generate` calls the processor once per step with the rows' sequences input_ids [N*k, T] (sentence-major, k beams
each) and their log-probabilities scores [N*k, V]; it reorders its beams itself and never says how. The processor
recovers the reorder from the sequences: a row at step t extends the row of step t-1 of the same sentence whose
sequence is its own without the last token, so it calls, as our beam search does,

    hook.reorder(index [N*k])      the row each row extends (at the first step: the sentence's one row, k times)
    hook.advance(tokens [N*k])     the token each row appended
    hook.scores(weight * scores, t)

Equal sequences of one sentence share a hook state, which holds for every hook whose state is a function of the
row's tokens (LMBR, bounded gains, acceptors, terms). prefix_length counts the decoder inputs before the search's
first scored step (the decoder start token; with M2M100/NLLB also the forced target-language token, whose step the
processor leaves alone): step t of the hook reads input_ids[:, prefix_length:] of length t. The hook's headroom
and beam allocation are ours only: `generate` keeps its own stopping rule. Sentences never leave the batch inside
`generate`, so select_sentences is never called.

The pipeline's L shards of a pretrained model (BuildPretrainedLMatrix) and the hooks over them count target ids as
the model's + LABEL_OFFSET (lattices/model_units.py: id 0 is the lattices' epsilon): with `offset`, the processor
hands the hook the model's scores shifted into those ids (the first `offset` columns -inf, as our search sees them)
and the tokens each row appended shifted the same way, and gives `generate` the model's columns back.
"""
from __future__ import annotations

import torch
from torch import Tensor

from pipeline.decode.hooks import ScoreHook

try:
    from transformers import LogitsProcessor
except ImportError:  # the hf extra is not installed: the class still imports, generate is not there to call it
    LogitsProcessor = object  # type: ignore[assignment,misc]

__all__ = ["HookLogitsProcessor"]


class HookLogitsProcessor(LogitsProcessor):
    """Adds a score hook's terms to `generate`'s log-probabilities (times `weight`, our SearchSettings.weight)."""

    def __init__(self, hook: ScoreHook, num_beams: int, prefix_length: int = 1, weight: float = 1.0,
                 offset: int = 0) -> None:
        self.hook, self.num_beams, self.prefix_length, self.weight = hook, num_beams, prefix_length, weight
        self.offset = offset  # the hook's target ids are the model's + offset (the pipeline's pretrained L: 1)
        self.keys: dict[tuple[int, tuple[int, ...]], int] | None = None  # (sentence, tokens) -> row of the last step

    def __call__(self, input_ids: Tensor, scores: Tensor) -> Tensor:
        """input_ids [N*k, T], scores [N*k, V] (log-probabilities) -> weight * scores + the hook's terms."""
        t = input_ids.shape[1] - self.prefix_length
        if t < 0:  # a forced step before the search's first (M2M100's target language)
            return scores
        rows = input_ids[:, self.prefix_length:].tolist()                  # [R][t]
        sentence = [r // self.num_beams for r in range(len(rows))]
        if self.keys is None:
            if t != 0:
                raise ValueError(f"the processor first saw step {t}: prefix_length {self.prefix_length} does not "
                                 "match the decoder's prompt")
            self.hook.reorder(torch.tensor(sentence, dtype=torch.long, device=scores.device))
        else:
            index = [self.keys[(s, tuple(row[:-1]))] for s, row in zip(sentence, rows)]
            self.hook.reorder(torch.tensor(index, dtype=torch.long, device=scores.device))
            self.hook.advance(input_ids[:, -1].to(torch.long) + self.offset)
        self.keys = {(s, tuple(row)): r for r, (s, row) in enumerate(zip(sentence, rows))}
        weighted = scores * self.weight if self.weight != 1.0 else scores.clone()
        if not self.offset:
            return self.hook.scores(weighted, t)
        shifted = torch.cat([weighted.new_full((weighted.shape[0], self.offset), float("-inf")), weighted], dim=1)
        return self.hook.scores(shifted, t)[:, self.offset:]
