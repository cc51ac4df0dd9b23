"""Log-linear weights on disk: a JSON file with the weights by feature name and the signature behind them.

    {"weights": {"lm": 0.5, ...}, "features": [...], "signature": "mert|iterations:3|...", "info": {...}}

The signature is a sacrebleu-style line (how the weights were obtained: defaults, or MERT with its settings and
tuning set); ``info`` holds free-form details (BLEU per iteration, ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigError
from pipeline.io import read_json, write_json
from pipeline.signature import format_signature
from pipeline.smt.features import FEATURES, Weights


@dataclass(frozen=True)
class WeightsFile:
    weights: Weights
    signature: str
    info: dict[str, Any] = field(default_factory=dict)


def save_weights(path: Path, weights: Weights, params: dict[str, Any], info: dict[str, Any] | None = None) -> str:
    """Write the weights with the signature of ``params``; returns the signature line."""
    signature = format_signature(params)
    values = weights.to_dict()  # the features of its model (the reordering ones only where it has them)
    write_json(Path(path), {"weights": values, "features": list(values), "signature": signature,
                            "info": info or {}})
    return signature


def load_weights(path: Path) -> WeightsFile:
    """Read a weights file; an unknown or missing feature is a ConfigError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such weights file")
    data = read_json(path)
    try:
        weights = Weights.from_dict(data["weights"])
    except (KeyError, ValueError, TypeError) as e:
        raise ConfigError(f"{path}: not a weights file of this decoder: {e}") from e
    return WeightsFile(weights=weights, signature=str(data.get("signature", "")), info=data.get("info", {}))
