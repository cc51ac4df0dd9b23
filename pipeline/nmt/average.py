"""Checkpoint averaging: the element-wise mean of the weights of the last K checkpoints of one training run.

The paper's Transformers are each the average of their last 20 checkpoints. Means are accumulated in float64 and
cast back to each tensor's dtype; non-floating tensors (none in our models) are taken from the newest checkpoint.
All checkpoints must share one model config; a difference is a CheckpointError naming the file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch

from pipeline.nmt.checkpoint import CheckpointError, list_checkpoints, load_checkpoint, save_checkpoint


class _Mean:
    """Running float64 sums of state_dicts that must agree in names and shapes."""

    def __init__(self) -> None:
        self.total: dict[str, torch.Tensor] = {}
        self.dtypes: dict[str, torch.dtype] = {}
        self.count = 0

    def add(self, state: dict[str, torch.Tensor], name: str) -> None:
        """Add one state_dict; ValueError (naming `name`) when names or shapes differ from the first one's."""
        if self.count:
            diff = sorted(set(state) ^ set(self.total)) or [
                k for k in self.total if state[k].shape != self.total[k].shape]
            if diff:
                raise ValueError(f"{name}: weights differ in names or shapes from the first one's (e.g. {diff[:3]})")
        for key, value in state.items():
            if not value.is_floating_point():
                self.total[key] = value.clone()
            elif self.count:
                self.total[key] += value.double()
            else:
                self.total[key] = value.double().clone()
            self.dtypes[key] = value.dtype
        self.count += 1

    def result(self) -> dict[str, torch.Tensor]:
        return {k: (v / self.count).to(self.dtypes[k]) if self.dtypes[k].is_floating_point else v
                for k, v in self.total.items()}


def average_state_dicts(states: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The mean of state_dicts with the same names and shapes."""
    if not states:
        raise ValueError("nothing to average")
    mean = _Mean()
    for i, state in enumerate(states):
        mean.add(state, f"state {i}")
    return mean.result()


def last_checkpoints(folder: Path, k: int) -> list[Path]:
    """The newest k checkpoint files of a folder (fewer if there are fewer), oldest first."""
    found = list_checkpoints(folder)
    if not found:
        raise CheckpointError(f"{folder}: no checkpoint-*.pt files to average")
    return found[-k:]


def average_checkpoints(paths: Sequence[Path], out: Path, vocabularies: dict[str, str] | None = None) -> Path:
    """Write the average of checkpoint files `paths` (one config) to `out`, loading one file at a time.

    `vocabularies` replaces the vocabulary paths the checkpoints name (needed when `out` is in another folder and
    they are relative).
    """
    if not paths:
        raise ValueError("no checkpoints to average")
    mean, first = _Mean(), None
    for path in paths:
        ckpt = load_checkpoint(path)
        if first is None:
            first = ckpt
        elif ckpt.config != first.config:
            raise CheckpointError(f"{path}: model config {ckpt.config} differs from {paths[0]}'s {first.config}")
        try:
            mean.add(ckpt.model, str(path))
        except ValueError as e:
            raise CheckpointError(str(e)) from None
    meta = {**first.meta, "averaged_from": [Path(p).name for p in paths]}
    return save_checkpoint(out, first.config, mean.result(), vocabularies or first.vocabularies, meta=meta)


def average_last(folder: Path, k: int, out: Path, vocabularies: dict[str, str] | None = None) -> list[Path]:
    """Average the newest k checkpoints of `folder` into `out`; returns the files averaged."""
    paths = last_checkpoints(folder, k)
    average_checkpoints(paths, out, vocabularies)
    return paths
