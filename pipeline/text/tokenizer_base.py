"""The tokenizer contract shared by every language.

A :class:`Tokenizer` turns one raw segment into *escaped* tokens (see :mod:`pipeline.text.escape`) and back.
Subclasses fill in two hooks, ``_tokenize`` and ``_detokenize``; the base class normalises the line first
(:func:`pipeline.text.normalize.normalize`) and guarantees that no token is empty or contains whitespace.

Tokenizers are cheap to construct and picklable: a heavy engine (a MeCab tagger, a jieba dictionary) is
built lazily on first use and stored as ``_engine``, which is dropped when the object is pickled, so a
tokenizer can be shipped to a worker process and rebuilds its engine there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from .normalize import normalize

__all__ = ["Tokenizer", "split_whitespace"]


def split_whitespace(tokens: Iterable[str]) -> list[str]:
    """Split every token at whitespace and drop empty pieces."""
    return [piece for token in tokens for piece in token.split()]


class Tokenizer(ABC):
    """Normalise, split and escape a segment (``tokenize``); rebuild the text (``detokenize``)."""

    #: The language code the tokenizer was made for ("en", "de", "zh", "ja", ...).
    lang: str
    #: Short name used by :func:`pipeline.text.tokenizers.get_tokenizer`.
    name: str = ""

    def tokenize(self, line: str) -> list[str]:
        """Return the normalised, escaped tokens of ``line``: none empty, none containing whitespace."""
        text = normalize(line)
        if not text:
            return []
        return split_whitespace(self._tokenize(text))

    def detokenize(self, tokens: list[str]) -> str:
        """Unescape ``tokens`` and rebuild the text as close to the original as the tokens allow."""
        tokens = split_whitespace(tokens)
        if not tokens:
            return ""
        return self._detokenize(tokens)

    @abstractmethod
    def _tokenize(self, text: str) -> list[str]:
        """Split a normalised, non-empty line into escaped tokens."""

    @abstractmethod
    def _detokenize(self, tokens: list[str]) -> str:
        """Rebuild the text of a non-empty list of escaped tokens."""

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_engine", None)  # rebuilt lazily after unpickling
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lang={self.lang!r})"
