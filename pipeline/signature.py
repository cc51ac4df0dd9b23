"""Signatures: the parameters behind an artifact, and the short hash that names its folder."""
from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def param_hash(data: Any, length: int = 10) -> str:
    """A short stable hash of JSON-able parameters: equal parameters, equal hash."""
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()[:length]


def format_signature(params: dict[str, Any]) -> str:
    """sacrebleu-style one-line form: key:value|key:value (nested values as compact JSON)."""
    parts = []
    for key in sorted(params):
        value = params[key]
        parts.append(f"{key}:{value if isinstance(value, (str, int, float, bool)) else canonical_json(value)}")
    return "|".join(parts)
