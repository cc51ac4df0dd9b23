"""Assembling the training pairs of sequence-level distillation from references and a teacher's translations."""
from __future__ import annotations

import pytest

from pipeline.nmt.distillation import distilled_corpus

SOURCES = [["ein", "Haus"], ["das", "Auto"], ["gut"], ["ja"]]
REFERENCES = [["a", "house"], ["the", "car"], ["good"], ["yes"]]
TEACHER = [["a", "house"], ["the", "automobile"], [], ["yes", "indeed"]]


def test_none_keeps_the_references():
    corpus = distilled_corpus(SOURCES, REFERENCES, [], "none")
    assert corpus.sources == SOURCES and corpus.targets == REFERENCES
    assert corpus.stats == {"pairs": 4, "teacher_pairs": 0}


def test_pbmt_replaces_each_reference_and_keeps_it_where_the_teacher_gave_nothing():
    corpus = distilled_corpus(SOURCES, REFERENCES, TEACHER, "pbmt")
    assert corpus.sources == SOURCES
    assert corpus.targets == [["a", "house"], ["the", "automobile"], ["good"], ["yes", "indeed"]]
    assert corpus.stats == {"pairs": 4, "teacher_pairs": 3, "identical": 1, "teacher_empty": 1}


def test_pbmt_and_references_adds_only_the_new_teacher_pairs_after_the_references():
    corpus = distilled_corpus(SOURCES, REFERENCES, TEACHER, "pbmt+references")
    assert corpus.sources == SOURCES + [["das", "Auto"], ["ja"]]
    assert corpus.targets == REFERENCES + [["the", "automobile"], ["yes", "indeed"]]
    assert corpus.stats == {"pairs": 6, "teacher_pairs": 2, "identical": 1, "teacher_empty": 1}


def test_the_inputs_are_not_aliased():
    corpus = distilled_corpus(SOURCES, REFERENCES, TEACHER, "pbmt")
    corpus.targets[0].append("x")
    assert TEACHER[0] == ["a", "house"] and REFERENCES[0] == ["a", "house"]


@pytest.mark.parametrize("teacher, message", [(TEACHER[:3], "translated 3 lines of a training source of 4"),
                                              (TEACHER, "unknown distillation 'kd'")])
def test_misaligned_or_unknown_input_is_a_clear_error(teacher, message):
    mode = "pbmt" if len(teacher) == 3 else "kd"
    with pytest.raises(ValueError, match=message):
        distilled_corpus(SOURCES, REFERENCES, teacher, mode)
