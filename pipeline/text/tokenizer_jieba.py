"""Chinese word segmentation with jieba.

jieba keeps a cache of its prefix dictionary on disk (by default in the system temp folder); here it goes to
``cache_dir`` (default ``~/.cache/lmbr-pipeline/jieba``). The dictionary is loaded lazily, once per process
and cache folder, with jieba's logger set to WARNING so nothing is printed. Whitespace tokens are dropped;
detokenizing joins the words without spaces except between Latin letters/digits (:func:`join_cjk`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from .cjk import join_cjk
from .escape import escape, unescape
from .tokenizer_base import Tokenizer

__all__ = ["JiebaTokenizer", "DEFAULT_CACHE_DIR"]

DEFAULT_CACHE_DIR = Path.home() / ".cache" / "lmbr-pipeline" / "jieba"

_SEGMENTERS: dict[Path, object] = {}  # one loaded dictionary per cache folder and process


def _segmenter(cache_dir: Path) -> object:
    """Return a jieba ``Tokenizer`` whose dictionary cache lives in ``cache_dir`` (loaded once)."""
    segmenter = _SEGMENTERS.get(cache_dir)
    if segmenter is None:
        import jieba

        logging.getLogger("jieba").setLevel(logging.WARNING)
        cache_dir.mkdir(parents=True, exist_ok=True)
        segmenter = jieba.Tokenizer()
        segmenter.tmp_dir = str(cache_dir)
        segmenter.cache_file = "jieba.cache"
        segmenter.initialize()
        _SEGMENTERS[cache_dir] = segmenter
    return segmenter


class JiebaTokenizer(Tokenizer):
    """Chinese tokenizer: jieba's default (accurate, HMM) mode."""

    name = "jieba"

    def __init__(self, lang: str = "zh", cache_dir: Path | None = None) -> None:
        self.lang = lang
        self.cache_dir = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE_DIR

    def _tokenize(self, text: str) -> list[str]:
        segmenter = self.__dict__.get("_engine")
        if segmenter is None:
            segmenter = self.__dict__["_engine"] = _segmenter(self.cache_dir.expanduser().resolve())
        return [escape(word) for word in segmenter.cut(text) if not word.isspace()]

    def _detokenize(self, tokens: list[str]) -> str:
        return join_cjk([unescape(token) for token in tokens])

    def __repr__(self) -> str:
        return f"JiebaTokenizer(lang={self.lang!r}, cache_dir={str(self.cache_dir)!r})"
