"""Signatures: the parameters behind an artifact, and the short hash that names its folder."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

SIGNATURE_FILE = "signature.json"


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


def artifact_param(path: Path, key: str, levels: int = 4) -> tuple[Any, Path] | None:
    """A parameter of the artifact that holds `path` (a file or folder inside an artifact folder): the value of
    `key` in the params of the nearest signature.json at or above it (at most `levels` folders up), and that
    file; None when there is none or it lacks the key."""
    folder = Path(path).resolve()
    folder = folder if folder.is_dir() else folder.parent
    for candidate in [folder, *folder.parents][: levels + 1]:
        signature = candidate / SIGNATURE_FILE
        if signature.is_file():
            try:
                params = json.loads(signature.read_text(encoding="utf-8")).get("params", {})
            except (OSError, ValueError):
                return None
            return (params[key], signature) if key in params else None
    return None
