"""The NMT vocabulary: the single source of truth for token ids, special symbols included."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from pipeline.io import read_json, write_json

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)


class TokenLookup:
    """Ids by token and tokens by id over `tokens` (the index `_ids` built by `_index`), for every vocabulary of
    the project: this one, and a pretrained model's (pipeline/nmt/pretrained.py). Subclasses define `tokens` and
    `unk_id`, the id of a token they lack."""

    tokens: tuple[str, ...]
    unk_id: int

    def _index(self) -> None:
        object.__setattr__(self, "_ids", {t: i for i, t in enumerate(self.tokens)})

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: str) -> bool:
        return token in self._ids  # type: ignore[attr-defined]

    def id(self, token: str) -> int:
        return self._ids.get(token, self.unk_id)  # type: ignore[attr-defined]

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.id(t) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.tokens[i] for i in ids]


@dataclass(frozen=True)
class Vocabulary(TokenLookup):
    """Specials first (<pad>, <s>, </s>, <unk>), then tokens by falling frequency (ties alphabetical)."""

    tokens: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.tokens[: len(SPECIALS)] != SPECIALS:
            raise ValueError(f"a vocabulary starts with {SPECIALS}, not {self.tokens[:len(SPECIALS)]}")
        self._index()

    @classmethod
    def build(cls, lines: Iterable[Sequence[str]], max_size: int = 0, min_count: int = 1) -> "Vocabulary":
        counts = Counter(token for tokens in lines for token in tokens)
        for special in SPECIALS:
            counts.pop(special, None)
        ranked = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
        if max_size:
            ranked = ranked[: max(0, max_size - len(SPECIALS))]
        return cls(SPECIALS + tuple(ranked))

    @property
    def pad_id(self) -> int:
        return self._ids[PAD]  # type: ignore[attr-defined]

    @property
    def bos_id(self) -> int:
        return self._ids[BOS]  # type: ignore[attr-defined]

    @property
    def eos_id(self) -> int:
        return self._ids[EOS]  # type: ignore[attr-defined]

    @property
    def unk_id(self) -> int:
        return self._ids[UNK]  # type: ignore[attr-defined]

    def save(self, path: Path) -> None:
        write_json(path, {"tokens": list(self.tokens)})

    @classmethod
    def load(cls, path: Path) -> "Vocabulary":
        return cls(tuple(read_json(path)["tokens"]))
