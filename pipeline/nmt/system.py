"""An NMT system: the model files a decoder loads together as one Ensemble (FNMT: several GRUs; TNMT: averaged
Transformers), described by a small JSON file.

    {"architecture": "gru", "members": ["../../nmt-average/gru-seed1-.../model.pt", ...]}

Member paths are relative to the JSON file's folder (absolute ones are kept as they are). All members must share
the source and target vocabularies, token for token.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import torch

from pipeline.io import read_json, write_json
from pipeline.nmt.checkpoint import CheckpointError, load_checkpoint, load_vocabularies, model_from_checkpoint
from pipeline.nmt.interface import Ensemble
from pipeline.vocab import Vocabulary


def write_system(path: Path, architecture: str, members: Sequence[Path], relative_to: Path | None = None) -> None:
    """Write the system file `path` naming the member checkpoints, relative to `relative_to` (default: the file's
    folder; give the final folder when `path` is written in a temporary one that is renamed afterwards)."""
    folder = Path(relative_to) if relative_to is not None else Path(path).parent
    write_json(path, {"architecture": architecture,
                      "members": [os.path.relpath(Path(m).resolve(), folder.resolve()) for m in members]})


def system_members(path: Path) -> list[Path]:
    data = read_json(path)
    return [Path(path).parent / m for m in data["members"]]


def load_system(path: Path, device: str | torch.device = "cpu") -> tuple[Ensemble, Vocabulary, Vocabulary]:
    """The Ensemble of a system file (models in eval mode on `device`) and its source and target vocabularies."""
    models, vocabs = [], None
    for member in system_members(path):
        ckpt = load_checkpoint(member)
        pair = load_vocabularies(ckpt)
        if vocabs is not None and (pair[0].tokens, pair[1].tokens) != (vocabs[0].tokens, vocabs[1].tokens):
            raise CheckpointError(f"{member}: its vocabularies differ from the first member's ({path})")
        vocabs = vocabs or pair
        models.append(model_from_checkpoint(ckpt, device))
    if vocabs is None:
        raise CheckpointError(f"{path}: names no member models")
    return Ensemble(models), vocabs[0], vocabs[1]
