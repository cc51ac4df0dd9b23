"""Truecasing: undo the capitalisation that only marks a sentence start (after Moses ``truecase.perl``).

Training counts, for every lowercased word, how often each surface form occurs *not* at a sentence start
(the statistics of sacremoses' ``MosesTruecaser``); the most frequent form is the word's *best* form.

Applying the model changes only sentence-initial words, and only those that differ from their best form by
the case of the first letter ("The" -> "the", but "US" stays "US" when the best form of "us" is "us").
Every other token is left exactly as it is, so :meth:`Truecaser.detruecase`, which capitalises the first
letter of each sentence-initial token (``detruecase.perl``), restores the input except where a sentence
began with a lower-case letter. Two deliberate departures from ``truecase.perl`` keep this round trip
lossless: Moses also rewrites unseen case forms in mid-sentence to the best form ("KONDO" -> "Kondo",
"park" -> "Park") and always takes the best form at a sentence start; and Moses counts ``:`` as a sentence
end, which turns a lower-case word after a colon into a capitalised one on the way back.

A sentence starts at the beginning of the line and after ``. ? !``; the opening tokens ``( [ " '`` (also
escaped) delay it by one token. A double quote that closes a quotation ends the delay instead ('"Why?" asks
Bob' keeps "asks"); quotes are paired by counting from the start of the line. The model is saved as JSON
(the per-word form counts).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pipeline.io import atomic_path

__all__ = ["Truecaser", "SENTENCE_END", "DELAYED_SENTENCE_START", "sentence_starts"]

#: Tokens after which a new sentence starts (Moses also has ":"; see the module docstring).
SENTENCE_END = frozenset({".", "?", "!"})
#: Tokens that may precede a sentence's first word (the sentence start moves past them).
DELAYED_SENTENCE_START = frozenset({"(", "[", '"', "'", "&apos;", "&quot;", "&#91;", "&#93;"})

_DOUBLE_QUOTES = frozenset({'"', "&quot;"})
_FORMAT = "moses-truecase-counts"


def _capitalize(word: str) -> str:
    """Upper-case the first character only (``ucfirst``)."""
    return word[:1].upper() + word[1:]


def sentence_starts(tokens: list[str]) -> list[bool]:
    """For each token, whether it stands at a sentence start (see the module docstring)."""
    starts: list[bool] = []
    start = True
    quote_open = False
    for token in tokens:
        starts.append(start)
        if token in _DOUBLE_QUOTES:
            if quote_open:
                start = False  # a closing quote: what follows continues the sentence
            quote_open = not quote_open
        elif token in SENTENCE_END:
            start = True
        elif token not in DELAYED_SENTENCE_START:
            start = False
    return starts


class Truecaser:
    """A Moses truecasing model: for each lowercased word, the counts of its surface forms."""

    def __init__(self, casing: dict[str, dict[str, float]]) -> None:
        """``casing`` maps a lowercased word to {surface form: count}, most frequent form first on ties."""
        self.casing = casing
        # max() keeps the first of equal counts, like Counter.most_common in sacremoses.
        self.best: dict[str, str] = {lower: max(forms, key=forms.__getitem__) for lower, forms in casing.items()}

    @classmethod
    def train(cls, tokenized_lines: Iterable[list[str]]) -> "Truecaser":
        """Count surface forms in tokenized (escaped) lines with sacremoses' ``MosesTruecaser``."""
        from sacremoses import MosesTruecaser

        trainer = MosesTruecaser()
        trainer.SENT_END = set(SENTENCE_END)  # the same sentence starts as truecase() and detruecase()
        model = trainer.train(tokenized_lines, possibly_use_first_token=False, processes=1)
        casing = {lower: dict(forms.most_common()) for lower, forms in model["casing"].items()}
        return cls(casing)

    def save(self, path: Path) -> None:
        """Write the model as JSON, atomically (temporary file in the same folder, then ``os.replace``)."""
        payload = {"format": _FORMAT, "version": 1, "casing": self.casing}
        with atomic_path(Path(path)) as tmp, open(tmp, "w", encoding="utf-8") as out:
            json.dump(payload, out, ensure_ascii=False, indent=0)
            out.write("\n")

    @classmethod
    def load(cls, path: Path) -> "Truecaser":
        """Read a model written by :meth:`save`."""
        with open(path, encoding="utf-8") as handle:
            payload = json.load(handle)
        if payload.get("format") != _FORMAT:
            raise ValueError(f"{path}: not a truecasing model (format {payload.get('format')!r})")
        return cls(payload["casing"])

    def truecase(self, tokens: list[str]) -> list[str]:
        """Return the truecased tokens (same length as ``tokens``)."""
        out = list(tokens)
        for i, start in enumerate(sentence_starts(tokens)):
            if start:
                best = self.best.get(tokens[i].lower())
                if best is not None and tokens[i] == _capitalize(best):
                    out[i] = best
        return out

    @staticmethod
    def detruecase(tokens: list[str]) -> list[str]:
        """Capitalise the first letter of each sentence-initial token (Moses ``detruecase.perl``)."""
        return [_capitalize(token) if start else token for token, start in zip(tokens, sentence_starts(tokens))]

    def __len__(self) -> int:
        return len(self.casing)

    def __repr__(self) -> str:
        return f"Truecaser({len(self.casing)} words)"
