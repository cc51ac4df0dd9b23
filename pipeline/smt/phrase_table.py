"""Phrase tables: the in-memory table, the fast form on disk, filtering to a test set, the option cap.

A table maps a source phrase (space-joined words) to target phrases with four scores in Moses' column order:
phi(f|e), lex(f|e), phi(e|f), lex(e|f) (pipeline.smt.phrase_scoring builds them), followed in a table with the
lexicalised reordering model by its six probabilities (pipeline.smt.reordering). Kept as natural logs (float32).

- ``PhraseTable``: in memory (a dict from source phrase to rows); what the decoder uses after filtering.
- The fast form (``.npz``, written by ``FastFormWriter``, read by ``FastPhraseTable``): flat arrays: the 64-bit
  BLAKE2 hashes of the source phrases, sorted, with their row ranges and UTF-8 text (to rule out collisions);
  target phrases as one UTF-8 blob with offsets; scores [rows, 4 or 10]. Loading is a few array reads, a look-up is a
  binary search, and ``filter(sentences)`` keeps only the source phrases of a test set, whatever the table's
  size.
- ``cap_options``: the translation options kept per source phrase, by weighted score.
"""
from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from pipeline.io import atomic_path, read_lines
from pipeline.smt.reordering import COLUMNS as REORDERING_COLUMNS

FORMAT_VERSION = 2
SEP = " ||| "
TM_COLUMNS = 4  # the translation model's scores; then the reordering model's, where the table has it


def phrase_hash(phrase: str) -> int:
    """A stable 64-bit hash of a phrase (Python's own hash() changes between processes)."""
    return int.from_bytes(hashlib.blake2b(phrase.encode("utf-8"), digest_size=8).digest(), "little")


def source_phrases(sentences: Iterable[Sequence[str]], max_length: int) -> set[str]:
    """Every n-gram of up to ``max_length`` words of the sentences."""
    wanted = set()
    for words in sentences:
        for i in range(len(words)):
            for j in range(i + 1, min(len(words), i + max_length) + 1):
                wanted.add(" ".join(words[i:j]))
    return wanted


@dataclass
class PhraseTable:
    """Source phrase -> target phrases and ln scores (p_fe, lex_fe, p_ef, lex_ef[, reordering]), in memory."""

    sources: list[str]
    starts: np.ndarray  # int64 [len(sources) + 1]: rows of source k are starts[k]:starts[k+1]
    targets: list[str]
    scores: np.ndarray  # float32 [len(targets), 4 or 4 + 6 with the reordering model], natural logs
    max_length: int

    def __post_init__(self) -> None:
        self.index = {s: k for k, s in enumerate(self.sources)}

    @property
    def reordering(self) -> bool:
        """Whether the table holds the lexicalised reordering model's columns."""
        return self.scores.shape[1] == TM_COLUMNS + REORDERING_COLUMNS

    def __len__(self) -> int:
        return len(self.targets)

    def lookup(self, source: str) -> tuple[list[str], np.ndarray] | None:
        """Target phrases and their ln scores for a source phrase, or None."""
        k = self.index.get(source)
        if k is None:
            return None
        a, b = int(self.starts[k]), int(self.starts[k + 1])
        return self.targets[a:b], self.scores[a:b]

    def filter(self, sentences: Iterable[Sequence[str]]) -> "PhraseTable":
        """The table restricted to the source phrases that occur in the sentences (lists of words)."""
        return _from_lookups(self, source_phrases(sentences, self.max_length))

    def save(self, path: Path) -> None:
        """Write the fast form."""
        writer = FastFormWriter(self.max_length, self.scores.shape[1])
        for k, source in enumerate(self.sources):
            a, b = int(self.starts[k]), int(self.starts[k + 1])
            writer.add(source, self.targets[a:b], self.scores[a:b])
        writer.save(path)

    @classmethod
    def from_moses(cls, path: Path, max_length: int | None = None) -> "PhraseTable":
        """Read a Moses text table (gzip or plain) with at least four scores per line (extra ones ignored)."""
        entries: dict[str, list[tuple[str, list[float]]]] = {}
        for number, line in enumerate(read_lines(Path(path)), start=1):
            fields = line.split(SEP)
            if len(fields) < 3:
                raise ValueError(f"{path}, line {number}: not a phrase table line")
            values = [float(x) for x in fields[2].split()[:4]]
            if len(values) < 4 or min(values) <= 0:
                raise ValueError(f"{path}, line {number}: needs four positive scores")
            entries.setdefault(fields[0].strip(), []).append((fields[1].strip(), values))
        return cls.from_entries(entries, max_length)

    @classmethod
    def from_entries(cls, entries: dict[str, list[tuple[str, Sequence[float]]]],
                     max_length: int | None = None) -> "PhraseTable":
        """A table from {source: [(target, [p_fe, lex_fe, p_ef, lex_ef]), ...]} (probabilities; 4 + 6 per target
        for a table with the reordering model)."""
        sources = sorted(entries)
        targets, scores, starts = [], [], [0]
        for s in sources:
            for t, values in entries[s]:
                targets.append(t)
                scores.append(values)
            starts.append(len(targets))
        longest = max((len(s.split()) for s in sources), default=1)
        columns = len(scores[0]) if scores else TM_COLUMNS
        if columns not in (TM_COLUMNS, TM_COLUMNS + REORDERING_COLUMNS) or any(len(v) != columns for v in scores):
            raise ValueError(f"a phrase table needs {TM_COLUMNS} or {TM_COLUMNS + REORDERING_COLUMNS} scores on "
                             "every row")
        return cls(sources=sources, starts=np.array(starts, dtype=np.int64), targets=targets,
                   scores=np.log(np.array(scores, dtype=np.float64).reshape(-1, columns)).astype(np.float32),
                   max_length=max_length or longest)


def _from_lookups(table: "PhraseTable | FastPhraseTable", wanted: Iterable[str]) -> PhraseTable:
    sources, starts, targets, scores = [], [0], [], []
    columns = table.scores.shape[1]
    for source in sorted(wanted):
        found = table.lookup(source)
        if found is None:
            continue
        sources.append(source)
        targets.extend(found[0])
        scores.append(np.asarray(found[1], dtype=np.float32))
        starts.append(len(targets))
    return PhraseTable(sources=sources, starts=np.array(starts, dtype=np.int64), targets=targets,
                       scores=np.concatenate(scores) if scores else np.zeros((0, columns), dtype=np.float32),
                       max_length=table.max_length)


class FastFormWriter:
    """Collects a table source by source (any order) and writes the fast form."""

    LOG_BLOCK = 1 << 20  # probabilities whose logs add_probabilities takes at once

    def __init__(self, max_length: int, columns: int = 4) -> None:
        """columns: scores per target, 4 (the translation model) or 10 (with the reordering model)."""
        self.max_length, self.columns = max_length, columns
        self.hashes, self.row_starts = array("Q"), array("q")
        self.source_blob, self.source_offsets = bytearray(), array("q", [0])
        self.target_blob, self.target_offsets = bytearray(), array("q", [0])
        self.scores = array("f")
        self._pending = array("d")  # probabilities whose logs are not taken yet

    def add(self, source: str, targets: Sequence[str], ln_scores: np.ndarray) -> None:
        """One source phrase with its targets and their ln scores [len(targets), columns]."""
        self._add_phrases(source, targets)
        self._log_pending()
        self.scores.extend(np.asarray(ln_scores, dtype=np.float32).ravel().tolist())

    def add_probabilities(self, source: str, targets: Sequence[str], rows: Iterable[float]) -> None:
        """One source phrase with its targets and their probabilities, ``columns`` per target, flat; their logs are taken
        in blocks (elementwise, the same floats as one phrase at a time)."""
        self._add_phrases(source, targets)
        self._pending.extend(rows)
        if len(self._pending) >= self.LOG_BLOCK:
            self._log_pending()

    def _add_phrases(self, source: str, targets: Sequence[str]) -> None:
        self.hashes.append(phrase_hash(source))
        self.row_starts.append(len(self.target_offsets) - 1)
        self.source_blob += source.encode("utf-8")
        self.source_offsets.append(len(self.source_blob))
        target_blob, target_offsets = self.target_blob, self.target_offsets
        for t in targets:
            target_blob += t.encode("utf-8")
            target_offsets.append(len(target_blob))

    def _log_pending(self) -> None:
        if self._pending:
            self.scores.frombytes(np.log(np.frombuffer(self._pending, dtype=np.float64)).astype(np.float32).tobytes())
            self._pending = array("d")

    def save(self, path: Path) -> None:
        self._log_pending()
        hashes = np.frombuffer(self.hashes, dtype=np.uint64)
        order = np.argsort(hashes, kind="stable")
        if len(order) > 1 and (np.diff(hashes[order]) == 0).any():
            raise ValueError("two source phrases with the same 64-bit hash (or one source phrase added twice)")
        rows = np.append(np.frombuffer(self.row_starts, dtype=np.int64), len(self.target_offsets) - 1)
        source_offsets = np.frombuffer(self.source_offsets, dtype=np.int64)
        with atomic_path(Path(path)) as tmp, tmp.open("wb") as f:
            np.savez(f, version=np.array(FORMAT_VERSION), max_length=np.array(self.max_length),
                     hashes=hashes[order], row_start=rows[:-1][order], row_end=rows[1:][order],
                     source_start=source_offsets[:-1][order], source_end=source_offsets[1:][order],
                     source_blob=np.frombuffer(bytes(self.source_blob), dtype=np.uint8),
                     target_offsets=np.frombuffer(self.target_offsets, dtype=np.int64),
                     target_blob=np.frombuffer(bytes(self.target_blob), dtype=np.uint8),
                     scores=np.frombuffer(self.scores, dtype=np.float32).reshape(-1, self.columns))


class FastPhraseTable:
    """The fast form of a phrase table, read from disk."""

    def __init__(self, path: Path) -> None:
        with np.load(Path(path)) as data:
            if "version" not in data or int(data["version"]) != FORMAT_VERSION:
                raise ValueError(f"{path}: not a phrase table in the fast form (version {FORMAT_VERSION})")
            self.max_length = int(data["max_length"])
            for name in ("hashes", "row_start", "row_end", "source_start", "source_end", "target_offsets",
                         "scores"):
                setattr(self, name, data[name])
            self.source_blob = data["source_blob"].tobytes()
            self.target_blob = data["target_blob"].tobytes()

    @classmethod
    def load(cls, path: Path) -> "FastPhraseTable":
        return cls(path)

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def reordering(self) -> bool:
        return self.scores.shape[1] == TM_COLUMNS + REORDERING_COLUMNS

    @property
    def sources(self) -> list[str]:
        return [self.source_blob[a:b].decode("utf-8") for a, b in zip(self.source_start, self.source_end)]

    def lookup(self, source: str) -> tuple[list[str], np.ndarray] | None:
        h = np.uint64(phrase_hash(source))
        k = int(np.searchsorted(self.hashes, h))
        if k == len(self.hashes) or self.hashes[k] != h:
            return None
        if self.source_blob[self.source_start[k]:self.source_end[k]].decode("utf-8") != source:
            return None  # a hash collision with a phrase that is not in the table
        a, b = int(self.row_start[k]), int(self.row_end[k])
        offsets, blob = self.target_offsets, self.target_blob
        return [blob[offsets[r]:offsets[r + 1]].decode("utf-8") for r in range(a, b)], self.scores[a:b]

    def filter(self, sentences: Iterable[Sequence[str]]) -> PhraseTable:
        """The table restricted to the source phrases of the sentences, in memory."""
        return _from_lookups(self, source_phrases(sentences, self.max_length))


def cap_options(future_scores: np.ndarray, limit: int) -> np.ndarray:
    """Indices of the ``limit`` best options by weighted score (best first; ties keep table order)."""
    order = np.argsort(-np.asarray(future_scores, dtype=np.float64), kind="stable")
    return order[:limit] if limit > 0 else order
