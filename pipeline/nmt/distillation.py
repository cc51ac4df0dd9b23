"""Sequence-level knowledge distillation (Kim & Rush 2016): an NMT model trained on a stronger system's translations
of the training source, instead of or beside the references.

A teacher's output is simpler and more monotone than a human reference, which suits a small model that a compute
budget leaves underfitted. Here the teacher is the task's own phrase-based system (tasks/distill.py translates the
training source with it). `distilled_corpus` assembles the training pairs from the references and the teacher's
translations, line by line, and counts what it did.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from pipeline.config import DISTILLATIONS

Tokens = list[str]


@dataclass
class DistilledCorpus:
    """Training pairs (token lists) and how they were assembled."""

    sources: list[Tokens]
    targets: list[Tokens]
    stats: dict[str, int] = field(default_factory=dict)


def distilled_corpus(sources: Sequence[Tokens], references: Sequence[Tokens], teacher: Sequence[Tokens],
                     mode: str) -> DistilledCorpus:
    """The training pairs of distillation `mode` (pipeline.config.DISTILLATIONS):

    - "none": the references;
    - "pbmt": each source with the teacher's translation, which replaces the reference; a line the teacher left
      empty keeps its reference;
    - "pbmt+references": every reference pair, then each source with the teacher's translation where it is not
      empty and differs from the reference (an identical one would only weigh that pair twice).

    The teacher's translations are line-aligned with the sources (ValueError naming the counts otherwise)."""
    if not len(sources) == len(references):
        raise ValueError(f"{len(sources)} sources but {len(references)} references")
    if mode == "none":
        return DistilledCorpus(list(sources), list(references), {"pairs": len(sources), "teacher_pairs": 0})
    if len(teacher) != len(sources):
        raise ValueError(f"the teacher translated {len(teacher)} lines of a training source of {len(sources)}")
    identical = sum(t == r for t, r in zip(teacher, references))
    empty = sum(not t for t in teacher)
    if mode == "pbmt":
        targets = [list(t) if t else list(r) for t, r in zip(teacher, references)]
        stats = {"pairs": len(sources), "teacher_pairs": len(sources) - empty}
        return DistilledCorpus(list(sources), targets, {**stats, "identical": identical, "teacher_empty": empty})
    if mode == "pbmt+references":
        extra = [i for i, (t, r) in enumerate(zip(teacher, references)) if t and t != r]
        return DistilledCorpus(list(sources) + [sources[i] for i in extra],
                               list(references) + [list(teacher[i]) for i in extra],
                               {"pairs": len(sources) + len(extra), "teacher_pairs": len(extra),
                                "identical": identical, "teacher_empty": empty})
    raise ValueError(f"unknown distillation {mode!r} (known: {', '.join(DISTILLATIONS)})")
