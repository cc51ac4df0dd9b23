"""Tests for pipeline.text.truecase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.text import MosesTokenizer, Truecaser
from pipeline.text.truecase import sentence_starts

CORPUS = [
    "The cat sat on the mat.",
    "The dog saw the cat in the garden.",
    "Yesterday the cat ate the fish.",
    "In the US, the dog is the most popular pet.",
    "We went to Paris with the dog.",
    "Then the cat left Paris for London.",
    "A dog and a cat met the Queen.",
    "Paris is the capital of France.",
]


@pytest.fixture(scope="module")
def truecaser(moses_en: MosesTokenizer) -> Truecaser:
    return Truecaser.train(moses_en.tokenize(line) for line in CORPUS)


def test_learns_that_the_is_lower_case_and_paris_is_not(truecaser: Truecaser) -> None:
    assert truecaser.best["the"] == "the"
    assert truecaser.best["cat"] == "cat"
    assert truecaser.best["paris"] == "Paris"
    assert truecaser.casing["the"] == {"the": 12}  # sentence-initial "The" is not counted
    assert "yesterday" not in truecaser.casing  # seen only at sentence starts


def test_truecase_lowers_sentence_initial_words(truecaser: Truecaser) -> None:
    assert truecaser.truecase(["The", "cat", "saw", "Paris", "."]) == ["the", "cat", "saw", "Paris", "."]
    tokens = ["Paris", "is", "big", ".", "The", "end", "."]
    assert truecaser.truecase(tokens) == ["Paris", "is", "big", ".", "the", "end", "."]
    assert truecaser.truecase(["&quot;", "The", "cat", "&quot;"]) == ["&quot;", "the", "cat", "&quot;"]


def test_truecase_leaves_other_words_alone(truecaser: Truecaser) -> None:
    # mid-sentence forms are kept even when unseen; "US" at the start is not the best form "us" capitalised
    assert truecaser.truecase(["US", "sees", "THE", "Cat", "."]) == ["US", "sees", "THE", "Cat", "."]
    assert truecaser.truecase(["Unknown", "words", "stay", "."]) == ["Unknown", "words", "stay", "."]
    assert truecaser.truecase([]) == []


def test_detruecase_capitalises_sentence_initial_words() -> None:
    assert Truecaser.detruecase(["the", "cat", "sat", "."]) == ["The", "cat", "sat", "."]
    assert Truecaser.detruecase(["the", "end", ".", "a", "new", "one", "?", "yes", "!"]) == [
        "The", "end", ".", "A", "new", "one", "?", "Yes", "!"]
    assert Truecaser.detruecase(["(", "the", "cat", ")"]) == ["(", "The", "cat", ")"]
    assert Truecaser.detruecase(["&quot;", "why", "?", "&quot;", "asks", "Bob"]) == [
        "&quot;", "Why", "?", "&quot;", "asks", "Bob"]
    assert Truecaser.detruecase(["note", ":", "the", "cat"]) == ["Note", ":", "the", "cat"]


def test_sentence_starts() -> None:
    tokens = ["&quot;", "hi", "!", "&quot;", "he", "said", ".", "(", "then", ")"]
    assert sentence_starts(tokens) == [True, True, False, True, False, False, False, True, True, False]


def test_truecase_then_detruecase_restores_the_tokens(truecaser: Truecaser, moses_en: MosesTokenizer) -> None:
    for line in CORPUS + ["The Queen met the US president in Paris. The dog barked!"]:
        tokens = moses_en.tokenize(line)
        assert Truecaser.detruecase(truecaser.truecase(tokens)) == tokens


def test_save_and_load_give_identical_output(
    truecaser: Truecaser, tmp_path: Path, moses_en: MosesTokenizer
) -> None:
    path = tmp_path / "truecase.json"
    truecaser.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["truecase.json"]  # no temporary file left behind
    payload = json.loads(path.read_text(encoding="utf-8"))  # plain JSON, not a pickle
    assert payload["format"] == "moses-truecase-counts"
    loaded = Truecaser.load(path)
    assert loaded.casing == truecaser.casing and loaded.best == truecaser.best
    for line in CORPUS:
        tokens = moses_en.tokenize(line)
        assert loaded.truecase(tokens) == truecaser.truecase(tokens)
    truecaser.save(path)  # overwriting works and gives the same bytes
    assert Truecaser.load(path).casing == truecaser.casing


def test_load_rejects_other_json(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"format": "something-else"}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a truecasing model"):
        Truecaser.load(path)
