"""The NMT's samples of a split, as a file, and MBR selection over them (Eikema and Aziz 2020).

    samples = SampleSet.from_translation(translation)      # each line's K samples: target token ids and texts
    samples.save(out / "samples.jsonl.gz"); SampleSet.load(path)
    texts, expected = select_by_mbr(candidates, samples.text, "chrf")    # per line: the chosen text, its E[u]

One JSON line per source line: {"ids": [[...], ...], "text": [...]}, samples in the order drawn (token ids of the
NMT's target vocabulary, without BOS and EOS; the detokenized texts). A line that was not decoded (empty source)
has no samples and translates to the empty line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from pipeline.errors import DataError
from pipeline.io import read_lines, write_lines
from pipeline.mbr.selection import mbr_choose
from pipeline.mbr.utility import utility_matrix

__all__ = ["SampleSet", "distinct", "select_by_mbr"]


@dataclass(frozen=True)
class SampleSet:
    ids: list[list[list[int]]]  # [lines][K] token ids
    text: list[list[str]]       # [lines][K] detokenized

    @classmethod
    def from_translation(cls, translation) -> "SampleSet":
        """From translate_lines' Translation under SamplingSettings (its n-best lists are the samples)."""
        return cls([[list(h.tokens) for h in hyps] for hyps in translation.nbest],
                   [list(texts) for texts in translation.nbest_text])

    def __len__(self) -> int:
        return len(self.text)

    def save(self, path: Path) -> None:
        write_lines(path, (json.dumps({"ids": ids, "text": text}, ensure_ascii=False)
                           for ids, text in zip(self.ids, self.text)))

    @classmethod
    def load(cls, path: Path) -> "SampleSet":
        """The saved set; DataError naming the file and line for a line that is not a sample record."""
        ids, text = [], []
        for number, line in enumerate(read_lines(path), 1):
            try:
                record = json.loads(line)
                line_ids, line_text = record["ids"], record["text"]
                if len(line_ids) != len(line_text):
                    raise ValueError(f"{len(line_ids)} id lists for {len(line_text)} texts")
            except (ValueError, KeyError, TypeError) as e:
                raise DataError(f"{path}, line {number}: not a sample record ({e})") from None
            ids.append([list(map(int, s)) for s in line_ids])
            text.append([str(t) for t in line_text])
        return cls(ids, text)


def distinct(texts: Sequence[str]) -> list[str]:
    """The texts without repeats, in the order first seen."""
    return list(dict.fromkeys(texts))


def select_by_mbr(candidates: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
                  utility: str) -> tuple[list[str], list[float]]:
    """Per line, the candidate of highest expected utility against that line's pseudo-references (every one, with
    its repeats: a Monte Carlo estimate of the model's distribution), and that expected utility; a line without
    candidates or references gives "" and 0.0. Candidates are deduplicated first (ties: the first seen)."""
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} lines of candidates but {len(references)} of pseudo-references")
    chosen, expected = [], []
    for line_candidates, line_references in zip(candidates, references):
        unique = distinct(line_candidates)
        if not unique or not line_references:
            chosen.append("")
            expected.append(0.0)
            continue
        choice = mbr_choose(utility_matrix(utility, unique, list(line_references)))
        chosen.append(unique[choice.index])
        expected.append(float(choice.expected[choice.index]))
    return chosen, expected
