"""Tests for pipeline.text.bpe."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.text import BpeSegmenter, learn_bpe, merge_bpe

CORPUS = [
    "the lower the newer the lowest the newest",
    "low lower lowest new newer newest wide wider widest",
    "the widest river is lower than the newest river",
    "slow slower slowest show shower showers",
] * 5


@pytest.fixture(scope="module")
def codes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bpe") / "codes.bpe"
    learn_bpe(iter(CORPUS), 30, path)
    return path


def test_learn_writes_a_versioned_codes_file_atomically(codes: Path) -> None:
    lines = codes.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#version: 0.2")
    assert 0 < len(lines) - 1 <= 30
    assert all(len(line.split()) == 2 for line in lines[1:])
    assert [p.name for p in codes.parent.iterdir()] == ["codes.bpe"]


def test_learn_is_quiet(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    learn_bpe(["abc abc", "xyz"], 1000, tmp_path / "codes")  # runs out of frequent pairs: subword-nmt complains
    assert len((tmp_path / "codes").read_text(encoding="utf-8").splitlines()) == 3  # header + 2 merges
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_learn_without_any_pair_writes_an_empty_model(tmp_path: Path) -> None:
    learn_bpe(["a b c", "", "a"], 10, tmp_path / "codes")
    assert (tmp_path / "codes").read_text(encoding="utf-8") == "#version: 0.2\n"
    assert BpeSegmenter(tmp_path / "codes").segment(["a", "bc"]) == ["a", "b@@", "c"]


def test_learn_matches_subword_nmt_on_plain_text(tmp_path: Path) -> None:
    import io

    from subword_nmt.learn_bpe import learn_bpe as reference

    expected = io.StringIO()
    reference(io.StringIO("\n".join(CORPUS) + "\n"), expected, 30, verbose=False)
    learn_bpe(CORPUS, 30, tmp_path / "codes")
    assert (tmp_path / "codes").read_text(encoding="utf-8") == expected.getvalue()


def test_segment_then_merge_gives_back_the_words(codes: Path) -> None:
    bpe = BpeSegmenter(codes)
    seen = "the newest river is wider than the lowest".split()
    unseen = "blowers snowiest zebra x &quot; &amp; 2019 renewers".split()
    for words in (seen, unseen, seen + unseen):
        subwords = bpe.segment(words)
        assert merge_bpe(subwords) == words
        assert all(subword and " " not in subword for subword in subwords)
    assert bpe.segment(["newest"]) != ["newest"] or bpe.segment(["zebra"]) != ["zebra"]
    assert any(subword.endswith("@@") for subword in bpe.segment(unseen))


def test_glossary_words_are_not_split(codes: Path) -> None:
    bpe = BpeSegmenter(codes, glossaries=["zebra", "&quot;"])
    assert bpe.segment(["zebra", "&quot;"]) == ["zebra", "&quot;"]


def test_merge_bpe() -> None:
    assert merge_bpe(["ab@@", "c", "d"]) == ["abc", "d"]
    assert merge_bpe(["a@@", "b@@", "c"]) == ["abc"]
    assert merge_bpe(["x", "y@@"]) == ["x", "y"]  # a dangling continuation at the end of a sentence
    assert merge_bpe([]) == []


def test_malformed_codes_file_raises(tmp_path: Path) -> None:
    path = tmp_path / "codes"
    path.write_text("#version: 0.2\na b\nnot a merge\n", encoding="utf-8")
    with pytest.raises(ValueError, match="codes:3"):
        BpeSegmenter(path)
