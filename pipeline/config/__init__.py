"""Translation-task configs and scale profiles: TOML files loaded and validated once.

`configs/tasks/<name>.toml` describes one translation task (languages, data splits, tokenizers, BPE, LM order;
task_settings.py); `configs/profiles/<name>.toml` says how big everything is (tiny, medium, paper;
profile_settings.py). Both are read into frozen dataclasses (toml_tables.py); an unknown key, a value of the wrong
type or out of range, or a missing file raises ConfigError naming the file and the key.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pipeline.config.profile_settings import (DISTILLATIONS, GAIN_FORMS, PRECISIONS, TRAIN_SOURCES, BpeProfile,
                                              DataProfile, DecodeProfile, GruProfile, LmbrProfile, LmProfile,
                                              NmtProfile, NmtTrainingProfile, PbmtProfile, Profile, SampleMbrProfile,
                                              TransformerProfile, VariantProfile)
from pipeline.config.task_settings import (ARCHIVE_FORMATS, CHECKSUM_ALGORITHMS, TOKENIZERS, BpeTaskConfig,
                                           CorpusConfig, DownloadConfig, LanguageConfig, LmTaskConfig,
                                           PretrainedTaskConfig, SplitsConfig, TaskConfig, check_task)
from pipeline.config.toml_tables import build_dataclass, read_toml
from pipeline.errors import ConfigError

__all__ = ["ARCHIVE_FORMATS", "CHECKSUM_ALGORITHMS", "CONFIG_DIR", "DISTILLATIONS", "GAIN_FORMS", "PRECISIONS",
           "TOKENIZERS", "TRAIN_SOURCES", "BpeProfile", "BpeTaskConfig", "CorpusConfig", "DataProfile", "DecodeProfile",
           "DownloadConfig", "GruProfile", "LanguageConfig", "LmProfile", "LmTaskConfig", "LmbrProfile", "NmtProfile",
           "NmtTrainingProfile", "PbmtProfile", "PretrainedTaskConfig", "Profile", "SampleMbrProfile", "SplitsConfig", "TaskConfig",
           "TransformerProfile", "VariantProfile", "available", "load_profile", "load_task"]

CONFIG_DIR = Path(__file__).resolve().parent.parent.parent / "configs"


def available(kind: str, config_dir: Path = CONFIG_DIR) -> list[str]:
    """Names of the task configs (kind="tasks") or profiles (kind="profiles")."""
    return sorted(p.stem for p in (config_dir / kind).glob("*.toml"))


def load_task(name: str, config_dir: Path = CONFIG_DIR) -> TaskConfig:
    """Load and validate configs/tasks/<name>.toml."""
    path = _config_path("tasks", name, config_dir)
    config = build_dataclass(TaskConfig, read_toml(path), path, "")
    for profile_name, pairs in config.train_pairs.items():
        if pairs < 1:
            raise ConfigError(f"{path}: key 'train_pairs.{profile_name}' must be at least 1, not {pairs}")
    config = dataclasses.replace(config, path=path)
    for profile_name, architectures in config.nmt.items():
        if profile_name not in available("profiles", config_dir):
            raise ConfigError(f"{path}: key 'nmt.{profile_name}' names no profile "
                              f"(known: {', '.join(available('profiles', config_dir))})")
        for architecture in architectures:
            if architecture not in ("gru", "transformer"):
                raise ConfigError(f"{path}: key 'nmt.{profile_name}.{architecture}' names no NMT architecture "
                                  "(known: gru, transformer)")
            config.nmt_for(load_profile(profile_name, config_dir), architecture)
    config = dataclasses.replace(config, path=path)
    check_task(config)
    return config


def load_profile(name: str, config_dir: Path = CONFIG_DIR) -> Profile:
    """Load and validate configs/profiles/<name>.toml (over the profile it names in `based_on`, if any)."""
    path = _config_path("profiles", name, config_dir)
    profile = dataclasses.replace(build_dataclass(Profile, profile_values(name, config_dir), path, ""), path=path)
    if profile.name != name:
        raise ConfigError(f"{path}: key 'name' is {profile.name!r} but the file is named {name!r}")
    for key, problem in profile.problems():
        raise ConfigError(f"{path}: key '{key}' {problem}")
    return profile


def profile_values(name: str, config_dir: Path = CONFIG_DIR, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """The TOML values of a profile: with `based_on = "other"`, the other profile's values with this file's tables
    merged over them key by key (a value that is not a table replaces the other's)."""
    path = _config_path("profiles", name, config_dir)
    values = read_toml(path)
    base = values.pop("based_on", None)
    if base is None:
        return values
    if not isinstance(base, str) or base in (*seen, name):
        raise ConfigError(f"{path}: key 'based_on' must name another profile, without a cycle ({base!r})")
    return _merged(profile_values(base, config_dir, (*seen, name)), values)


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        merged[key] = _merged(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) \
            else value
    return merged


def _config_path(kind: str, name: str, config_dir: Path) -> Path:
    path = config_dir / kind / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(available(kind, config_dir)) or "none"
        raise ConfigError(f"{path}: no such config file (known {kind}: {known})")
    return path
