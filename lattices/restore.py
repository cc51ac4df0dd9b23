"""Words back from units: the cheapest path of a sentence's word lattice that spells a given string of units.

The constrained systems (lattice rescoring, lattice MBR) output strings of the lattice's evidence space in NMT
target units, where every piece outside the target vocabulary became ``<unk>`` (lattices/units.py). A source word
that the PBMT passed through untranslated (a name, a number, a word without a phrase) thus comes out as a chain of
``<unk>``, although the lattice knows the word. Such an output is a unit string of the word lattice, so its words
can be found exactly: the cheapest word path whose units are that string, by dynamic programming over pairs
(lattice state, units read so far) in topological order. ``<s>``, ``</s>`` and epsilon arcs read no unit (the
acceptors drop ``<s>`` and ``</s>``, lattices/acceptor.py).

The unconstrained LMBR systems (LNMT, LTNMT) write the same chains: L's n-grams come from the lattice's words in
units, so the search copies a passed-through word as the units L rewards, ``<unk>`` included. Their outputs are not
lattice paths, but each such word still spells, unit for unit, a word of the lattice: `restore_unknown_words` puts
the lattice's word back wherever an output word (its units from a word start to a word end) spells one. Words
whose units are the same (two names of one unknown script, each all ``<unk>``) are taken in the order in which the
lattice first reaches them, which is the order the PBMT translated them in.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Collection, Sequence

import numpy as np

from lattices.lattice import Lattice
from lattices.units import TokenMapper
from pipeline.text.bpe import SEPARATOR, merge_bpe
from pipeline.vocab import BOS, EOS, UNK

__all__ = ["WordRestorer", "restore_unknown_words", "restore_words", "unknown_word_spellings"]


def restore_words(lattice: Lattice, mapper: TokenMapper, units: Sequence[int]) -> list[str] | None:
    """The words of the cheapest complete path of `lattice` (over words, with its symbol table) whose units
    (``mapper``, ``<s>`` and ``</s>`` left out) are `units`; None when no path spells them."""
    if lattice.num_states == 0 or lattice.symbols is None:
        return None
    target, n = tuple(units), len(units)
    outgoing: dict[int, list[tuple[int, int, float]]] = {}
    for s, d, x, c in zip(lattice.src.tolist(), lattice.dst.tolist(), lattice.label.tolist(), lattice.cost.tolist()):
        outgoing.setdefault(s, []).append((d, x, c))
    # best[state][position] = (cost, previous (state, position), word or None)
    best: dict[int, dict[int, tuple[float, tuple[int, int] | None, str | None]]] = {lattice.start: {0: (0.0, None,
                                                                                                        None)}}
    end: tuple[float, int] | None = None
    for state in range(lattice.num_states):  # states are numbered topologically
        entries = best.get(state)
        if not entries:
            continue
        final = float(lattice.final[state])
        if n in entries and final < float("inf") and (end is None or entries[n][0] + final < end[0]):
            end = (entries[n][0] + final, state)
        for position, (cost, _, _) in entries.items():
            for d, x, c in outgoing.get(state, ()):
                word = lattice.symbols.get(x) if x else None
                ids = () if word is None or word in (BOS, EOS) else mapper.ids(word)
                after = position + len(ids)
                if after > n or target[position:after] != ids:
                    continue
                slot = best.setdefault(d, {})
                if after not in slot or cost + c < slot[after][0]:
                    slot[after] = (cost + c, (state, position), word if ids else None)
    if end is None:
        return None
    words, key = [], (end[1], n)
    while key is not None:
        _, previous, word = best[key[0]][key[1]]
        if word is not None:
            words.append(word)
        key = previous
    return words[::-1]


def unknown_word_spellings(lattice: Lattice, mapper: TokenMapper) -> dict[tuple[int, ...], list[str]]:
    """The lattice's words whose units hold ``<unk>``, by their units; the words of one spelling in the order of
    the first state (topological) with an arc that writes them."""
    if lattice.symbols is None:
        return {}
    spellings: dict[tuple[int, ...], list[str]] = {}
    seen: set[int] = set()
    for label in lattice.label[np.argsort(lattice.src, kind="stable")].tolist():
        if not label or label in seen:
            continue
        seen.add(label)
        word = lattice.symbols.get(label)
        if word is None or word in (BOS, EOS):
            continue
        ids = mapper.ids(word)
        if mapper.vocab.unk_id in ids:
            spellings.setdefault(ids, []).append(word)
    return spellings


def restore_unknown_words(lattice: Lattice, mapper: TokenMapper, pieces: Sequence[str]) -> list[str] | None:
    """The words of an output's BPE `pieces`, where each run of units that starts a word and spells a lattice word
    holding ``<unk>`` (the longest such run) is that lattice word; None when there is no such run. The k-th run of
    one spelling takes the k-th of its words (unknown_word_spellings; cycling when the output repeats it more
    often)."""
    if UNK not in pieces:
        return None
    spellings = unknown_word_spellings(lattice, mapper)
    if not spellings:
        return None
    ids = mapper.vocab.encode(list(pieces))
    lengths = sorted({len(spelling) for spelling in spellings}, reverse=True)
    taken = dict.fromkeys(spellings, 0)
    words: list[str] = []
    word: list[str] = []  # the pieces of the word being read
    position = 0
    while position < len(pieces):
        spelling = None if word else next((key for n in lengths
                                           if (key := tuple(ids[position:position + n])) in spellings), None)
        if spelling is not None:
            choices = spellings[spelling]
            words.append(choices[taken[spelling] % len(choices)])
            taken[spelling] += 1
            position += len(spelling)
            continue
        word.append(pieces[position])
        position += 1
        if not word[-1].endswith(SEPARATOR):
            words += merge_bpe(word)
            word = []
    return words + merge_bpe(word) if any(taken.values()) else None


class WordRestorer:
    """The words of a split's outputs from its word lattices (``<dir>/<i>.fst``, sentence i = line i)."""

    def __init__(self, lattice_dir: Path, mapper: TokenMapper) -> None:
        self.lattice_dir, self.mapper = Path(lattice_dir), mapper

    def words(self, sentence: int, units: Sequence[int]) -> list[str] | None:
        """The words of `units` in sentence's lattice (None: no lattice, or no path spells them)."""
        lattice = self.lattice(sentence)
        return restore_words(lattice, self.mapper, units) if lattice is not None else None

    def lattice(self, sentence: int) -> Lattice | None:
        """The sentence's word lattice (None: there is none)."""
        from lattices.fst_io import read_lattice

        path = self.lattice_dir / f"{sentence}.fst"
        return read_lattice(path) if path.exists() else None

    def restore(self, sentences: Sequence[int], subwords: Sequence[str], texts: Sequence[str],
                postprocess: Callable[[list[str]], str],
                paths: bool | Collection[int] = True) -> tuple[list[str], list[int]]:
        """`texts` with each output whose subwords hold ``<unk>`` replaced by postprocess(its words), and the
        positions so restored. Output k is sentence sentences[k]. `paths`: the outputs are lattice strings (the
        constrained systems), whose words are the cheapest path that spells them; an output no path spells stays
        as it is. Otherwise (unconstrained LMBR) each output word that spells a lattice word with ``<unk>`` is that
        word (restore_unknown_words). A collection: the positions k of outputs that are lattice strings (anchored
        search, pipeline/decode/anchored.py), the others unconstrained."""
        restored, changed = list(texts), []
        for k, (sentence, pieces) in enumerate(zip(sentences, subwords)):
            if UNK not in pieces.split():
                continue
            if paths is True or (paths is not False and k in paths):
                words = self.words(sentence, self.mapper.vocab.encode(pieces.split()))
            else:
                lattice = self.lattice(sentence)
                words = None if lattice is None else restore_unknown_words(lattice, self.mapper, pieces.split())
            if words is not None:
                restored[k] = postprocess(words)
                changed.append(k)
        return restored, changed
