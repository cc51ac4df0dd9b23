"""Tests for pipeline.text.normalize."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from pipeline.text import normalize

BREAKING = ["\t", "\r", "\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028", "\u2029",
            "\x00", "\x7f"]


@pytest.mark.parametrize("char", BREAKING)
def test_control_and_separator_characters_become_one_space(char: str) -> None:
    assert normalize(f"a{char}b") == "a b"
    assert normalize(f"a {char} b") == "a b"


def test_runs_of_spaces_collapse_and_ends_are_stripped() -> None:
    assert normalize("  Hello \t\r\n  world \u2028 ") == "Hello world"
    assert normalize("\r\n\t") == ""
    assert normalize("") == ""


def test_no_character_of_categories_cc_zl_zp_survives() -> None:
    chars = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in {"Cc", "Zl", "Zp"}]
    assert len(chars) == 67  # 65 control characters, U+2028, U+2029
    text = normalize("x".join(chars) + "end")
    assert not any(unicodedata.category(c) in {"Cc", "Zl", "Zp"} for c in text)
    assert text.splitlines() == [text]
    assert "\n" not in text and "\r" not in text


def test_never_produces_a_line_break_on_mixed_input() -> None:
    for line in ["one\u2028two\u2029three", "a\r\nb", "x\x85y\x1cz", "tab\tand\x0bvt\x0cff"]:
        out = normalize(line)
        assert len(out.splitlines()) == 1
        assert "  " not in out


def test_text_is_otherwise_unchanged() -> None:
    decomposed = "Cafe\u0301 \u00a0 Tel\u00a0Aviv 東京\u3000タワー ﬁ"
    assert normalize(decomposed) == decomposed  # no NFC/NFKC, inner no-break/ideographic spaces kept
    assert normalize("  Ünïcödé — “quotes” ") == "Ünïcödé — “quotes”"
