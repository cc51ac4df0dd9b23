"""Moses tokenization for languages written with spaces (English, German, ...), via sacremoses.

Tokenizing uses ``MosesTokenizer(lang).tokenize(escape=True, aggressive_dash_splits=True)``: hyphens
between letters or digits become the token ``@-@`` ("well-known" -> "well @-@ known"). URLs and e-mail
addresses are kept as single tokens (sacremoses' protected patterns) instead of being cut at every ``:``,
``/`` and ``@``.

Detokenizing glues every ``@-@`` back without spaces, unescapes the tokens, lets ``MosesDetokenizer(lang)``
choose the spaces and corrects its choices around quotes and a few symbols (:mod:`pipeline.text.spacing`).
"""

from __future__ import annotations

from sacremoses import MosesDetokenizer
from sacremoses import MosesTokenizer as _SacreMosesTokenizer

from .escape import unescape
from .spacing import fix_gaps, join_gaps, moses_gaps
from .tokenizer_base import Tokenizer

__all__ = ["MosesTokenizer", "DASH", "PROTECTED_PATTERNS", "join_dashes"]

#: The token that aggressive dash splitting puts in place of an intra-word hyphen.
DASH = "@-@"

#: Kept as one token: URLs (without trailing punctuation) and e-mail addresses.
PROTECTED_PATTERNS = (
    r"(?:(?:https?|ftp)://|www\.)[^\s<>\"'()\[\]{}]*[^\s<>\"'()\[\]{}.,;:!?]",
    r"[\w\-.]+@(?:[\w\-]+\.)+[a-zA-Z]{2,}",
)


def join_dashes(tokens: list[str]) -> list[str]:
    """Glue each ``@-@`` token to its neighbours as a plain ``-`` ("well @-@ known" -> "well-known")."""
    out: list[str] = []
    glue = False
    for token in tokens:
        if token == DASH:
            if out:
                out[-1] += "-"
            else:
                out.append("-")
            glue = True
        elif glue:
            out[-1] += token
            glue = False
        else:
            out.append(token)
    return out


class MosesTokenizer(Tokenizer):
    """The Moses tokenizer and detokenizer of sacremoses for one language."""

    name = "moses"

    def __init__(self, lang: str = "en") -> None:
        self.lang = lang

    @property
    def _engines(self) -> tuple[_SacreMosesTokenizer, MosesDetokenizer]:
        engine = self.__dict__.get("_engine")
        if engine is None:
            engine = self.__dict__["_engine"] = (_SacreMosesTokenizer(self.lang), MosesDetokenizer(self.lang))
        return engine

    def _tokenize(self, text: str) -> list[str]:
        return self._engines[0].tokenize(
            text, aggressive_dash_splits=True, escape=True, protected_patterns=PROTECTED_PATTERNS
        )

    def _detokenize(self, tokens: list[str]) -> str:
        words = [unescape(word) for word in join_dashes(tokens)]
        gaps = fix_gaps(words, moses_gaps(self._engines[1], words), self.lang)
        return join_gaps(words, gaps)
