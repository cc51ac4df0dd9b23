"""Japanese word segmentation with MeCab and the IPA dictionary (mecab-python3 + ipadic).

This is the same analyser that sacrebleu's ``ja-mecab`` BLEU tokenizer uses. The tagger is created lazily
(it cannot be pickled). Detokenizing joins the words without spaces except between Latin letters/digits
(:func:`join_cjk`).
"""

from __future__ import annotations

from .cjk import join_cjk
from .escape import escape, unescape
from .tokenizer_base import Tokenizer

__all__ = ["MecabTokenizer"]


class MecabTokenizer(Tokenizer):
    """Japanese tokenizer: MeCab with ipadic, surface forms only."""

    name = "mecab"

    def __init__(self, lang: str = "ja") -> None:
        self.lang = lang

    def _tokenize(self, text: str) -> list[str]:
        tagger = self.__dict__.get("_engine")
        if tagger is None:
            import ipadic
            import MeCab

            tagger = self.__dict__["_engine"] = MeCab.Tagger(ipadic.MECAB_ARGS + " -Owakati")
        return [escape(word) for word in tagger.parse(text).split()]

    def _detokenize(self, tokens: list[str]) -> str:
        return join_cjk([unescape(token) for token in tokens])
