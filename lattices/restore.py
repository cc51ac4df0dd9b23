"""Words back from units: the cheapest path of a sentence's word lattice that spells a given string of units.

The constrained systems (lattice rescoring, lattice MBR) output strings of the lattice's evidence space in NMT
target units, where every piece outside the target vocabulary became ``<unk>`` (lattices/units.py). A source word
that the PBMT passed through untranslated (a name, a number, a word without a phrase) thus comes out as a chain of
``<unk>``, although the lattice knows the word. Such an output is a unit string of the word lattice, so its words
can be found exactly: the cheapest word path whose units are that string, by dynamic programming over pairs
(lattice state, units read so far) in topological order. ``<s>``, ``</s>`` and epsilon arcs read no unit (the
acceptors drop ``<s>`` and ``</s>``, lattices/acceptor.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from lattices.lattice import Lattice
from lattices.units import TokenMapper
from pipeline.vocab import BOS, EOS, UNK

__all__ = ["WordRestorer", "restore_words"]


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


class WordRestorer:
    """The words of a split's outputs from its word lattices (``<dir>/<i>.fst``, sentence i = line i)."""

    def __init__(self, lattice_dir: Path, mapper: TokenMapper) -> None:
        self.lattice_dir, self.mapper = Path(lattice_dir), mapper

    def words(self, sentence: int, units: Sequence[int]) -> list[str] | None:
        """The words of `units` in sentence's lattice (None: no lattice, or no path spells them)."""
        from lattices.fst_io import read_lattice

        path = self.lattice_dir / f"{sentence}.fst"
        return restore_words(read_lattice(path), self.mapper, units) if path.exists() else None

    def restore(self, sentences: Sequence[int], subwords: Sequence[str], texts: Sequence[str],
                postprocess: Callable[[list[str]], str]) -> tuple[list[str], list[int]]:
        """`texts` with each output whose subwords hold ``<unk>`` replaced by postprocess(its lattice words), and
        the positions so restored. Output k is sentence sentences[k]; an output no path spells stays as it is."""
        restored, changed = list(texts), []
        for k, (sentence, pieces) in enumerate(zip(sentences, subwords)):
            if UNK not in pieces.split():
                continue
            words = self.words(sentence, self.mapper.vocab.encode(pieces.split()))
            if words is not None:
                restored[k] = postprocess(words)
                changed.append(k)
        return restored, changed
