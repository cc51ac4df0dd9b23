"""Tests for pipeline.text.escape."""

from __future__ import annotations

import random

import pytest
from sacremoses import MosesTokenizer

from pipeline.text import escape, unescape

PAIRS = [
    ("&", "&amp;"),
    ("|", "&#124;"),
    ("<", "&lt;"),
    (">", "&gt;"),
    ("'", "&apos;"),
    ('"', "&quot;"),
    ("[", "&#91;"),
    ("]", "&#93;"),
]


@pytest.mark.parametrize(("char", "entity"), PAIRS)
def test_each_special_character(char: str, entity: str) -> None:
    assert escape(char) == entity
    assert unescape(entity) == char
    assert escape(f"a{char}b") == f"a{entity}b"


def test_matches_sacremoses_escaping() -> None:
    moses = MosesTokenizer("en")
    text = "AT&T's <b>|x|</b> [1] \"q\" &amp; &lt;"
    assert escape(text) == moses.escape_xml(text)


def test_plain_text_is_untouched() -> None:
    assert escape("Straße 東京 café") == "Straße 東京 café"
    assert unescape("Straße & so") == "Straße & so"  # a bare ampersand is not an entity


def test_already_escaped_looking_text_round_trips() -> None:
    for text in ["&amp;", "&lt;tag&gt;", "&#124;", "&amp;lt;", "&&amp;;", "&bar;", "&apos;s"]:
        assert unescape(escape(text)) == text
    assert escape("&lt;") == "&amp;lt;"


def test_random_strings_round_trip_exactly() -> None:
    moses = MosesTokenizer("en")
    rng = random.Random(20180601)
    alphabet = ["&", "|", "<", ">", "'", '"', "[", "]", "a", "#", ";", "1", "2", "4", "9", "3", " ",
                "amp;", "lt;", "gt;", "apos;", "quot;", "#124;", "#91;", "#93;", "é"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        escaped = escape(text)
        assert escaped == moses.escape_xml(text)
        assert not set(escaped) & set("|<>'\"[]")
        assert unescape(escaped) == text
