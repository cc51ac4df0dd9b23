"""Shared fixtures for the text-processing tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.text import JiebaTokenizer, MecabTokenizer, MosesTokenizer


@pytest.fixture(scope="session")
def jieba_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private folder for jieba's dictionary cache (never the system temp folder or ~/.cache)."""
    return tmp_path_factory.mktemp("jieba-cache")


@pytest.fixture(scope="session")
def moses_en() -> MosesTokenizer:
    return MosesTokenizer("en")


@pytest.fixture(scope="session")
def moses_de() -> MosesTokenizer:
    return MosesTokenizer("de")


@pytest.fixture(scope="session")
def jieba_zh(jieba_cache: Path) -> JiebaTokenizer:
    return JiebaTokenizer("zh", cache_dir=jieba_cache)


@pytest.fixture(scope="session")
def mecab_ja() -> MecabTokenizer:
    return MecabTokenizer("ja")
