"""MBR selection over sample sets: the chosen texts and expected utilities against a brute force over sacrebleu's
own sentence scores, the sample file's round trip and its errors."""
from __future__ import annotations

import gzip
import random

import pytest
from sacrebleu import sentence_bleu, sentence_chrf

from pipeline.errors import DataError
from pipeline.mbr.sample_sets import SampleSet, select_by_mbr
from tests.pipeline.mbr.test_mbr import sentences


def brute_force(candidates: list[str], references: list[str], utility: str) -> tuple[str, float]:
    score = (lambda h, r: sentence_bleu(h, [r]).score) if utility == "bleu" else \
        (lambda h, r: sentence_chrf(h, [r]).score)
    unique = list(dict.fromkeys(candidates))
    expected = [sum(score(h, r) for r in references) / len(references) for h in unique]
    best = max(range(len(unique)), key=lambda i: (expected[i], -i))
    return unique[best], expected[best]


@pytest.mark.parametrize("utility", ["bleu", "chrf"])
def test_each_lines_choice_and_expected_utility_are_the_brute_forces(utility):
    rng = random.Random(3)
    lines = [sentences(6, seed) for seed in range(4)]
    references = [[rng.choice(line) for _ in range(9)] for line in lines]  # with repeats, as samples come
    texts, expected = select_by_mbr(lines, references, utility)
    for line, refs, text, value in zip(lines, references, texts, expected):
        want_text, want_value = brute_force(line, refs, utility)
        assert text == want_text
        assert abs(value - want_value) < 1e-9


def test_a_line_without_candidates_gives_the_empty_line_and_unknown_utilities_are_refused():
    assert select_by_mbr([[], ["a b"]], [[], ["a b"]], "chrf") == (["", "a b"], [0.0, 100.0])
    with pytest.raises(ValueError, match="unknown MBR utility 'comet'"):
        select_by_mbr([["a"]], [["a"]], "comet")
    with pytest.raises(ValueError, match="2 lines of candidates but 1"):
        select_by_mbr([["a"], ["b"]], [["a"]], "bleu")


def test_a_sample_set_round_trips_and_a_bad_line_is_named(tmp_path):
    samples = SampleSet([[[5, 6], [7]], []], [["Ein Haus.", "Haus"], []])
    path = tmp_path / "samples.jsonl.gz"
    samples.save(path)
    assert SampleSet.load(path) == samples
    with gzip.open(path, "at", encoding="utf-8") as f:
        f.write('{"ids": [[1]], "text": []}\n')
    with pytest.raises(DataError, match=r"samples.jsonl.gz, line 3: not a sample record \(1 id lists for 0 texts\)"):
        SampleSet.load(path)
