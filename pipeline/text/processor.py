"""One language's whole text path: raw line -> words -> subwords, and model output -> detokenized text.

Forward: normalise, tokenize and escape (the tokenizer), truecase -> *words*, the units of the phrase-based
system and KenLM; BPE -> *subwords*, the units of the NMT system. Reverse (:meth:`TextProcessor.postprocess`):
merge BPE, detruecase, unescape and detokenize.
"""

from __future__ import annotations

from dataclasses import dataclass

from .bpe import BpeSegmenter, merge_bpe
from .tokenizer_base import Tokenizer
from .truecase import Truecaser

__all__ = ["TextProcessor"]


@dataclass
class TextProcessor:
    """Tokenizer, truecaser (None for scripts without case) and BPE segmenter (None: word level) of a language."""

    tokenizer: Tokenizer
    truecaser: Truecaser | None
    bpe: BpeSegmenter | None

    def words(self, line: str) -> list[str]:
        """Normalised, tokenized, escaped and truecased words of a raw line."""
        tokens = self.tokenizer.tokenize(line)
        return self.truecaser.truecase(tokens) if self.truecaser is not None else tokens

    def subwords(self, words: list[str]) -> list[str]:
        """BPE subwords of truecased words (the words themselves when there is no BPE model)."""
        return self.bpe.segment(words) if self.bpe is not None else list(words)

    def postprocess(self, tokens: list[str], subword: bool = True) -> str:
        """Text of model output: merge BPE (if ``subword``), detruecase (if cased), unescape, detokenize."""
        words = merge_bpe(tokens) if subword else list(tokens)
        if self.truecaser is not None:
            words = self.truecaser.detruecase(words)
        return self.tokenizer.detokenize(words)
