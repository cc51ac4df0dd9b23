"""Joining tokens of scripts written without spaces (Chinese, Japanese).

Word segmenters for these scripts drop the spaces of the input. When the tokens are joined again, a space is
put back only where the text would be unreadable without one: between two tokens whose facing characters are
both Latin letters or digits (ASCII or Latin script, not their full-width forms), so "iPhone 8" and
"Windows XP" survive while "使用Python" stays glued.
"""

from __future__ import annotations

import unicodedata

__all__ = ["is_latin_alnum", "join_cjk"]


def is_latin_alnum(char: str) -> bool:
    """True for an ASCII letter or digit, or a letter of the Latin script (not a full-width form)."""
    if char.isascii():
        return char.isalnum()
    return char.isalpha() and unicodedata.name(char, "").startswith("LATIN ")


def join_cjk(words: list[str]) -> str:
    """Concatenate unescaped words, with one space only between two Latin letters/digits."""
    parts: list[str] = []
    previous = ""
    for word in words:
        if not word:
            continue
        if previous and is_latin_alnum(previous[-1]) and is_latin_alnum(word[0]):
            parts.append(" ")
        parts.append(word)
        previous = word
    return "".join(parts)
