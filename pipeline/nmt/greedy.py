"""Greedy decoding on the step interface: validation BLEU during training, and tests.

Works with any StepModel (a single model or an Ensemble). Each row stops at its first EOS or at its own length
limit (a*|source| + b positions, EOS excluded); finished rows keep being stepped with EOS as input until the whole
batch is done, and their output is cut at the EOS.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from pipeline.nmt.token_batches import pad_sequences
from pipeline.nmt.interface import StepModel


@torch.no_grad()
def greedy_decode(model: StepModel, src: Tensor, src_lengths: Tensor, max_lengths: Tensor) -> list[list[int]]:
    """Best-first token ids of each row of src [N, S] (EOS removed); max_lengths [N] caps the output lengths."""
    state = model.encode(src, src_lengths)
    n = src.shape[0]
    prev = torch.full((n,), model.bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(n, dtype=torch.bool, device=src.device)
    limits = max_lengths.to(src.device)
    outputs = []
    for t in range(int(limits.max()) + 1):
        log_probs, state = model.step(state, prev)
        tokens = log_probs.argmax(dim=-1)
        tokens = torch.where(finished | (limits <= t), torch.full_like(tokens, model.eos_id), tokens)
        outputs.append(tokens)
        finished |= tokens == model.eos_id
        if bool(finished.all()):
            break
        prev = tokens
    rows = torch.stack(outputs, dim=1).tolist() if outputs else [[] for _ in range(n)]
    return [row[: row.index(model.eos_id)] if model.eos_id in row else row for row in rows]


def translate_ids(model: StepModel, sources: Sequence[Sequence[int]], pad_id: int, device: str | torch.device,
                  batch_size: int = 64, length_ratio: float = 2.0, length_offset: int = 10) -> list[list[int]]:
    """Greedy output ids for every source (ids ending in EOS, as the encoder reads them), in input order.

    Sentences are decoded in batches of similar length; a hypothesis may have up to
    length_ratio * len(source) + length_offset tokens.
    """
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    results: list[list[int]] = [[] for _ in sources]
    for start in range(0, len(order), batch_size):
        chunk = order[start: start + batch_size]
        src, lengths = pad_sequences([sources[i] for i in chunk], pad_id)
        limits = (lengths.double() * length_ratio + length_offset).long()
        for i, ids in zip(chunk, greedy_decode(model, src.to(device), lengths.to(device), limits)):
            results[i] = ids
    return results
