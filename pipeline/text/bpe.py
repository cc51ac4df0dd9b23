"""Byte-pair encoding of words into subwords, with subword-nmt (separator ``@@``).

``learn_bpe`` learns merge operations from tokenized lines and writes the codes file atomically;
:class:`BpeSegmenter` applies them; :func:`merge_bpe` is the inverse ("ab@@ c" -> "abc"). subword-nmt's
progress bar and messages are silenced (its diagnostics go to this module's logger at DEBUG level).
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from pipeline.io import atomic_path

__all__ = ["SEPARATOR", "learn_bpe", "BpeSegmenter", "merge_bpe"]

#: Marks a subword that continues in the next token.
SEPARATOR = "@@"
_CODES_HEADER = "#version: 0.2\n"

_LOG = logging.getLogger(__name__)


def _no_progress(iterable: Iterable, *args: object, **kwargs: object) -> Iterable:
    return iterable


@contextlib.contextmanager
def _quiet_learner() -> Iterator[object]:
    """subword-nmt's learn_bpe module with its tqdm bar disabled and stderr captured."""
    from subword_nmt import learn_bpe as module

    saved = module.tqdm
    module.tqdm = _no_progress
    messages = io.StringIO()
    try:
        with contextlib.redirect_stderr(messages):
            yield module
    finally:
        module.tqdm = saved
        if messages.getvalue().strip():
            _LOG.debug("subword-nmt: %s", messages.getvalue().strip())


def _vocabulary(lines: Iterable[str]) -> Counter[str]:
    """Word counts, split exactly as subword-nmt splits its input (on single spaces)."""
    vocab: Counter[str] = Counter()
    for line in lines:
        vocab.update(word for word in line.strip("\r\n ").split(" ") if word)
    return vocab


def learn_bpe(lines: Iterable[str], merges: int, codes_path: Path, min_frequency: int = 2) -> None:
    """Learn ``merges`` BPE operations from space-separated token lines; write ``codes_path`` atomically.

    Fewer operations are written when no pair reaches ``min_frequency`` any more (none at all when no word
    has two characters).
    """
    vocab = _vocabulary(lines)
    with atomic_path(Path(codes_path)) as tmp, open(tmp, "w", encoding="utf-8") as out, _quiet_learner() as module:
        if any(len(word) > 1 for word in vocab):
            # subword-nmt's dictionary input ("word count"), in first-seen order like its own reader
            entries = (f"{word} {count}\n" for word, count in vocab.items())
            module.learn_bpe(entries, out, merges, min_frequency=min_frequency, verbose=False, is_dict=True)
        else:
            out.write(_CODES_HEADER)  # subword-nmt fails on a corpus without a single pair


class BpeSegmenter:
    """Apply a codes file to words; ``glossaries`` (regular expressions, as in subword-nmt) are never split."""

    def __init__(self, codes_path: Path, glossaries: Sequence[str] = ()) -> None:
        from subword_nmt.apply_bpe import BPE

        self.codes_path = Path(codes_path)
        self.glossaries = list(glossaries)
        text = self.codes_path.read_text(encoding="utf-8")
        lines = text.rstrip("\n").split("\n") if text.strip() else []
        first = 1 if lines and lines[0].startswith("#version:") else 0
        for number, line in enumerate(lines[first:], start=first + 1):
            if len(line.strip("\r ").split(" ")) != 2:  # subword-nmt would call sys.exit()
                raise ValueError(f"{self.codes_path}:{number}: not a BPE merge (two units separated by a space)")
        # subword-nmt reads a codes file without merges as one malformed merge: tell it to apply none.
        count = -1 if len(lines) > first else 0
        self._bpe = BPE(io.StringIO(text), merges=count, separator=SEPARATOR, glossaries=self.glossaries or None)

    def segment(self, tokens: list[str]) -> list[str]:
        """Split each word into subwords; every subword but a word's last ends with ``@@``."""
        return self._bpe.segment_tokens(tokens)

    def __repr__(self) -> str:
        return f"BpeSegmenter({str(self.codes_path)!r})"


def merge_bpe(tokens: list[str]) -> list[str]:
    """Join subwords back into words ("ab@@ c" -> "abc"); a dangling "x@@" at the end becomes "x"."""
    words: list[str] = []
    pending = ""
    for token in tokens:
        if token.endswith(SEPARATOR):
            pending += token[: -len(SEPARATOR)]
        else:
            words.append(pending + token)
            pending = ""
    if pending:
        words.append(pending)
    return words
