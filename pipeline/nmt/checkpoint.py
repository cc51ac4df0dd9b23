"""Checkpoints: the model config, the vocabulary files, the weights and (while training) the training state.

One file per checkpoint, written with torch.save under a temporary name and renamed into place
(pipeline.io.atomic_path), so a killed writer never leaves a file that looks complete. A checkpoint is a dict:

    format        FORMAT
    config        the model config as a dict (architecture, sizes, vocabulary sizes, special ids)
    vocabularies  {"source": path, "target": path} of the Vocabulary JSON files the ids refer to (a relative path
                  is relative to the checkpoint's folder, so artifacts can move)
    model         the state_dict (CPU tensors)
    training      optimizer, scheduler, batch position, random states, update count, elapsed seconds; or None
    meta          free-form (averaged_from, seed, ...)

Loading never unpickles arbitrary objects (weights_only=True). A file that cannot be read, is not a checkpoint,
or whose weights do not fit its config raises CheckpointError naming the file.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from pipeline.errors import PipelineError
from pipeline.io import atomic_path
from pipeline.nmt.interface import NMTModel
from pipeline.nmt.models import ModelConfig, build_model, config_from_dict
from pipeline.vocab import Vocabulary

FORMAT = "lmbr-nmt-checkpoint/1"
CHECKPOINT_NAME = re.compile(r"^checkpoint-(\d+)\.pt$")


class CheckpointError(PipelineError):
    """A checkpoint file is missing, corrupt, of another format, or does not match its model config."""


@dataclass
class Checkpoint:
    path: Path
    config: ModelConfig
    vocabularies: dict[str, str]
    model: dict[str, torch.Tensor]
    training: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def checkpoint_name(update: int) -> str:
    return f"checkpoint-{update:08d}.pt"


def list_checkpoints(folder: Path) -> list[Path]:
    """The checkpoint-<update>.pt files of a folder, oldest (lowest update) first."""
    found = [(int(m.group(1)), p) for p in Path(folder).glob("checkpoint-*.pt") if (m := CHECKPOINT_NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def checkpoint_update(path: Path) -> int:
    """The update number in a checkpoint's file name (checkpoint-<update>.pt)."""
    match = CHECKPOINT_NAME.match(Path(path).name)
    if match is None:
        raise CheckpointError(f"{path}: not a checkpoint-<update>.pt file name")
    return int(match.group(1))


def is_snapshot(update: int, every: int) -> bool:
    """Whether a training run keeps the checkpoint of `update` beyond its last K (every N-th update; 0: none)."""
    return every > 0 and update > 0 and update % every == 0


def strip_training_state(path: Path) -> Path:
    """Rewrite a checkpoint with its weights only (the optimizer state is for resuming, a third of its size or
    more); its update stays in meta."""
    ckpt = load_checkpoint(path)
    if ckpt.training is None:
        return Path(path)
    return save_checkpoint(path, ckpt.config, ckpt.model, ckpt.vocabularies,
                           meta={**ckpt.meta, "update": ckpt.training["update"]})


def save_checkpoint(path: Path, config: ModelConfig, model_state: dict[str, torch.Tensor],
                    vocabularies: dict[str, str] | None = None, training: dict[str, Any] | None = None,
                    meta: dict[str, Any] | None = None) -> Path:
    """Write a checkpoint atomically; tensors are moved to the CPU first."""
    payload = {
        "format": FORMAT,
        "config": config.to_dict(),
        "vocabularies": {k: str(v) for k, v in (vocabularies or {}).items()},
        "model": {k: v.detach().cpu() for k, v in model_state.items()},
        "training": training,
        "meta": meta or {},
    }
    with atomic_path(Path(path)) as tmp:
        torch.save(payload, tmp)
    return Path(path)


def load_checkpoint(path: Path, map_location: str | torch.device = "cpu") -> Checkpoint:
    """Read and check a checkpoint file."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # torch raises RuntimeError, pickle errors, EOFError, ... on damaged files
        raise CheckpointError(f"{path}: not a readable checkpoint (truncated or corrupt?): {e}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise CheckpointError(f"{path}: not an NMT checkpoint of format {FORMAT!r} (found {found!r})")
    try:
        config = config_from_dict(data["config"])
    except ValueError as e:
        raise CheckpointError(f"{path}: {e}") from None
    return Checkpoint(path, config, data["vocabularies"], data["model"], data.get("training"), data.get("meta", {}))


def model_from_checkpoint(checkpoint: Checkpoint, device: str | torch.device = "cpu") -> NMTModel:
    """The model of a loaded checkpoint, in eval mode, on `device`."""
    model = build_model(checkpoint.config)
    try:
        model.load_state_dict(checkpoint.model, strict=True)
    except RuntimeError as e:
        first = str(e).strip().splitlines()
        raise CheckpointError(f"{checkpoint.path}: the weights do not match the model config "
                              f"({checkpoint.config.architecture}): {' '.join(first[:3])}") from None
    return model.to(device).eval()


def load_model(path: Path, device: str | torch.device = "cpu") -> NMTModel:
    """Load a checkpoint file into its model (eval mode)."""
    return model_from_checkpoint(load_checkpoint(path), device)


def load_vocabularies(checkpoint: Checkpoint) -> tuple[Vocabulary, Vocabulary]:
    """The source and target vocabularies a checkpoint refers to, checked against its config's sizes."""
    vocabs = []
    for side, size in (("source", checkpoint.config.src_vocab_size), ("target", checkpoint.config.tgt_vocab_size)):
        if side not in checkpoint.vocabularies:
            raise CheckpointError(f"{checkpoint.path}: names no {side} vocabulary")
        vocab_path = checkpoint.path.parent / checkpoint.vocabularies[side]  # relative: beside the checkpoint
        vocab = Vocabulary.load(vocab_path)
        if len(vocab) != size:
            raise CheckpointError(f"{checkpoint.path}: its {side} vocabulary {vocab_path} has {len(vocab)} entries, "
                                  f"the model {size}")
        vocabs.append(vocab)
    return vocabs[0], vocabs[1]
