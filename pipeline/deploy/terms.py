"""A terminology: source terms and the target terms that must appear in the translation when they occur.

    terms = Terminology.load(Path("terms.tsv"))        # one "source term<TAB>target term" per line
    terms = Terminology.parse(text, origin="request")   # the same format from a string (a request's `terms`)
    terms.matches(tokenized_words)                      # the entries whose source term occurs in a line
    terms.find(tokenized_words)                         # the same, with the span of each (PBMT's forced options)

Blank lines and lines starting with '#' are skipped. A line without exactly one tab, or with an empty side, is a
DataError naming origin:line. Source terms are matched on the tokenizer's words, so "New York" also matches "New
York's" tokenized as "New York 's"; the comparison ignores the case of a line's first word (a term "Haus" matches
"haus" there, where truecasing lowercased it). The translator (translator.py) turns the target terms into target
subword ids for the decoder's TermHook (pipeline/decode/terms.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from pipeline.errors import DataError

__all__ = ["Term", "Terminology"]


@dataclass(frozen=True)
class Term:
    """One entry: the source term's words (tokenized), and the target term as written."""

    source: tuple[str, ...]
    target: str
    origin: str  # file:line, for messages


class Terminology:
    """See the module docstring."""

    def __init__(self, entries: Sequence[tuple[str, str, str]], tokenize: Callable[[str], list[str]]) -> None:
        """entries: (source text, target text, origin) each; tokenize: the source language's tokenizer."""
        self.terms = [Term(tuple(tokenize(source)), target, origin) for source, target, origin in entries]

    @staticmethod
    def read(text: str, origin: str) -> list[tuple[str, str, str]]:
        """The (source, target, origin:line) entries of tab-separated text; a malformed line is a DataError."""
        entries = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 2:
                raise DataError(f"{origin}:{number}: expected 'source term<TAB>target term', found "
                                f"{len(fields)} tab-separated fields")
            source, target = (field.strip() for field in fields)
            if not source or not target:
                raise DataError(f"{origin}:{number}: the {'source' if not source else 'target'} term is empty")
            entries.append((source, target, f"{origin}:{number}"))
        return entries

    @classmethod
    def load(cls, path: Path, tokenize: Callable[[str], list[str]]) -> "Terminology":
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        return cls(cls.read(text, str(path)), tokenize)

    @classmethod
    def parse(cls, text: str, tokenize: Callable[[str], list[str]], origin: str = "terms") -> "Terminology":
        return cls(cls.read(text, origin), tokenize)

    def __len__(self) -> int:
        return len(self.terms)

    def matches(self, words: Sequence[str]) -> list[Term]:
        """The terms whose source words occur in `words` (a line's tokenized words), each once, in file order."""
        return [term for term, _ in self.find(words)]

    def find(self, words: Sequence[str]) -> list[tuple[Term, tuple[int, int]]]:
        """Each term that occurs in `words`, with the span (first, last word) of its first occurrence."""
        folded = [words[0].lower(), *words[1:]] if words else []
        found = []
        for term in self.terms:
            n = len(term.source)
            first = (term.source[0].lower(), *term.source[1:]) if n else ()
            for i in range(len(words) - n + 1):
                window = tuple(words[i:i + n])
                if window == term.source or (i == 0 and tuple(folded[:n]) == first):
                    found.append((term, (i, i + n - 1)))
                    break
        return found
