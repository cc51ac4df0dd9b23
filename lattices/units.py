"""From word lattices to NMT target units: each word arc becomes the chain of its BPE pieces, as vocabulary ids.

The phrase-based decoder writes lattices over words (docs/LATTICE_FORMAT.md); the NMT decoder and the L matrix
work in the target vocabulary's ids (``pipeline.vocab.Vocabulary``, built by BuildVocab from the BPE text of
LearnBPE's codes). The mapping, one convention for the whole project:

- label 0 (``<eps>``) stays epsilon;
- ``<s>`` -> ``Vocabulary.bos_id`` and ``</s>`` -> ``Vocabulary.eos_id``: n-grams at the start and end of a
  sentence get posteriors, and the NMT decoder's initial history ``[bos]`` is a row of L;
- every other word -> its BPE pieces (``BpeSegmenter``, exactly as ApplyBPE segments the training text), each
  piece -> its vocabulary id, or ``Vocabulary.unk_id`` when the piece is not in the vocabulary;
- the word ``<unk>`` -> ``unk_id``; a word or piece that is another special symbol (``<pad>``, a ``<s>`` or
  ``</s>`` produced by BPE: impossible for Moses-escaped text) -> ``unk_id``, so ``<pad>`` never appears;
- the arc's weight goes on the first piece of the chain; the other pieces cost 0.

FST label = vocabulary id. Label 0 is OpenFst's epsilon, which is why the vocabulary's id 0 must be ``<pad>``
(``Vocabulary`` guarantees it: specials first) and why ``<pad>`` is never emitted.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from lattices.lattice import Lattice
from pipeline.text.bpe import BpeSegmenter
from pipeline.vocab import BOS, EOS, PAD, UNK, Vocabulary

__all__ = ["TokenMapper", "map_lattice"]


class TokenMapper:
    """Word -> tuple of target vocabulary ids (cached per word)."""

    def __init__(self, vocab: Vocabulary, segmenter: BpeSegmenter | None) -> None:
        if vocab.pad_id != 0:
            raise ValueError("FST label 0 is epsilon: the target vocabulary must have <pad> at id 0")
        self.vocab = vocab
        self.segmenter = segmenter
        self._specials = {PAD: (vocab.unk_id,), BOS: (vocab.bos_id,), EOS: (vocab.eos_id,), UNK: (vocab.unk_id,)}
        self._forbidden = {vocab.pad_id, vocab.bos_id, vocab.eos_id}
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_files(cls, codes: Path | None, vocab: Path) -> "TokenMapper":
        """LearnBPE's ``codes.<tgt>`` (None: words are already units) and BuildVocab's ``vocab.<tgt>.json``."""
        return cls(Vocabulary.load(Path(vocab)), BpeSegmenter(Path(codes)) if codes else None)

    def pieces(self, word: str) -> list[str]:
        """The BPE pieces of one word (the word itself without codes)."""
        return self.segmenter.segment([word]) if self.segmenter else [word]

    def ids(self, word: str) -> tuple[int, ...]:
        cached = self._cache.get(word)
        if cached is None:
            if word in self._specials:
                cached = self._specials[word]
            else:
                unk = self.vocab.unk_id
                cached = tuple(unk if (i := self.vocab.id(p)) in self._forbidden else i for p in self.pieces(word))
            if not cached:
                raise ValueError(f"the word {word!r} has no BPE pieces")
            self._cache[word] = cached
        return cached

    def symbols(self) -> dict[int, str]:
        """Id -> token of the whole target vocabulary (for printing mapped lattices)."""
        return dict(enumerate(self.vocab.tokens))


def map_lattice(lattice: Lattice, mapper: TokenMapper, symbols: Mapping[int, str] | None = None) -> Lattice:
    """The lattice in target units. ``symbols`` (label -> word) defaults to the lattice's own symbol table.

    Vectorised: each distinct word is segmented once; arc i with k_i pieces becomes a chain through k_i - 1 new
    states. The chain's states are numbered right after the arc's source state (ordered by (source state, place
    in chain)), so the result stays topologically numbered and trimmed, with start 0.
    """
    table = symbols if symbols is not None else lattice.symbols
    if table is None:
        raise ValueError("the lattice has no symbol table: its word labels cannot be mapped to target units")
    if lattice.num_states == 0:
        return Lattice.empty({})
    words, which = np.unique(lattice.label, return_inverse=True)
    chains: list[tuple[int, ...]] = []
    for x in words.tolist():
        if x == 0:
            chains.append((0,))
            continue
        word = table.get(x)
        if word is None:
            raise ValueError(f"label {x} is not in the lattice's symbol table")
        chains.append(mapper.ids(word))
    lengths = np.asarray([len(c) for c in chains], np.int64)
    flat = np.asarray([y for c in chains for y in c], np.int64)
    k = lengths[which]                                              # [A] pieces per arc
    arc = np.repeat(np.arange(lattice.num_arcs), k)                 # [A'] the word arc of each new arc
    place = np.arange(len(arc)) - np.repeat(np.cumsum(k) - k, k)    # [A'] position in its chain
    tokens = flat[(np.cumsum(lengths) - lengths)[which][arc] + place]
    extra = np.cumsum(k - 1) - (k - 1)                              # [A] index of each arc's first new state
    n = lattice.num_states
    src = np.where(place == 0, lattice.src[arc], n + extra[arc] + place - 1)
    dst = np.where(place == k[arc] - 1, lattice.dst[arc], n + extra[arc] + place)
    cost = np.where(place == 0, lattice.cost[arc], 0.0)
    # topological renumbering: state q -> key (q, 0); the p-th new state of arc i -> (src_i, p)
    inner = np.flatnonzero(place < k[arc] - 1)                      # new arcs that end in a new state
    major = np.concatenate([np.arange(n), lattice.src[arc[inner]]])
    minor = np.concatenate([np.zeros(n, np.int64), place[inner] + 1])
    renumber = np.empty(n + len(inner), np.int64)
    renumber[np.lexsort((minor, major))] = np.arange(n + len(inner))
    src, dst = renumber[src], renumber[dst]
    final = np.full(n + len(inner), np.inf)
    final[renumber[:n]] = lattice.final
    order = np.lexsort((dst, src))
    vocab_tokens = mapper.vocab.tokens
    used = np.unique(tokens[tokens != 0]).tolist()
    return Lattice(n + len(inner), int(renumber[lattice.start]), src[order], dst[order], tokens[order],
                   cost[order], final, {y: vocab_tokens[y] for y in used})
