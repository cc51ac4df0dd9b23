"""Fixtures of the lattice tests: BPE codes and a target vocabulary learned on a small corpus."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.text.bpe import BpeSegmenter, learn_bpe
from pipeline.vocab import Vocabulary
from tests.conftest import sentence_pairs


@pytest.fixture(scope="session")
def bpe_files(tmp_path_factory) -> tuple[Path, Path]:
    """(codes, vocab.json): 60 merges on 300 English sentences; pieces seen fewer than 3 times are left out."""
    folder = tmp_path_factory.mktemp("bpe")
    lines = [e.replace(",", " ,").replace(".", " .").replace("!", " !").replace("?", " ?")
             for e, _ in sentence_pairs(300, seed=1)]
    codes = folder / "codes.en"
    learn_bpe(lines, 60, codes)
    segmenter = BpeSegmenter(codes)
    vocab = Vocabulary.build((segmenter.segment(line.split()) for line in lines), min_count=3)
    vocab.save(folder / "vocab.en.json")
    return codes, folder / "vocab.en.json"
