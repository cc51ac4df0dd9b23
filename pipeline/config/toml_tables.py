"""TOML tables read into frozen dataclasses: every key known, every value of its field's type, or a ConfigError
naming the file and the key."""
from __future__ import annotations

import dataclasses
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from pipeline.errors import ConfigError

T = TypeVar("T")


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from e



def build_dataclass(cls: type[T], raw: Any, path: Path, prefix: str) -> T:
    """Build dataclass `cls` from a TOML table, checking keys and types."""
    where = prefix.rstrip(".") or "top level"
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: key '{where}' must be a table")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "path"}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ConfigError(
            f"{path}: unknown key '{prefix}{unknown[0]}' (known at {where}: {', '.join(sorted(fields))})"
        )
    values = {}
    for name, f in fields.items():
        if name not in raw:
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            if not has_default:
                raise ConfigError(f"{path}: missing key '{prefix}{name}'")
            continue
        values[name] = _convert(hints[name], raw[name], path, f"{prefix}{name}")
    return cls(**values)


def _convert(hint: Any, value: Any, path: Path, key: str) -> Any:
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return build_dataclass(hint, value, path, key + ".")
    if origin is dict:
        _, value_type = typing.get_args(hint)
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: key '{key}' must be a table, not {type(value).__name__}")
        return {k: _convert(value_type, v, path, f"{key}.{k}") for k, v in value.items()}
    if origin is tuple:
        (item_type, _) = typing.get_args(hint)
        if not isinstance(value, list):
            raise ConfigError(f"{path}: key '{key}' must be a list, not {type(value).__name__}")
        return tuple(_convert(item_type, v, path, f"{key}[{i}]") for i, v in enumerate(value))
    if origin in (typing.Union, types.UnionType):
        raise TypeError(f"unsupported config type {hint} for {key}")
    expected = (int, float) if hint is float else hint
    if isinstance(value, bool) and hint is not bool or not isinstance(value, expected):
        raise ConfigError(f"{path}: key '{key}' must be {hint.__name__}, not {type(value).__name__} ({value!r})")
    return float(value) if hint is float else value

