"""Choosing a tokenizer by name: ``get_tokenizer("moses" | "jieba" | "mecab", lang)``."""

from __future__ import annotations

from pathlib import Path

from .tokenizer_base import Tokenizer
from .tokenizer_jieba import JiebaTokenizer
from .tokenizer_mecab import MecabTokenizer
from .tokenizer_moses import MosesTokenizer

__all__ = ["TOKENIZERS", "get_tokenizer"]

#: The known tokenizer names.
TOKENIZERS = ("moses", "jieba", "mecab")


def get_tokenizer(name: str, lang: str, cache_dir: Path | None = None) -> Tokenizer:
    """Return the tokenizer called ``name`` for ``lang``; ``cache_dir`` is where jieba keeps its cache."""
    if name == "moses":
        return MosesTokenizer(lang)
    if name == "jieba":
        return JiebaTokenizer(lang, cache_dir=cache_dir)
    if name == "mecab":
        return MecabTokenizer(lang)
    raise ValueError(f"unknown tokenizer {name!r}; known tokenizers: {', '.join(TOKENIZERS)}")
