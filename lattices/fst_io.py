"""Reading and writing translation lattices in the format of docs/LATTICE_FORMAT.md.

A decoded split is a folder ``<folder>/lattices/<i>.fst`` (OpenFst binary, arc type ``standard``, the word
symbol table on the FST) plus ``<folder>/lattices.json`` (``alpha``, ``sentences``, ``weights``, ``semiring``).
This module reads them into :class:`lattices.lattice.Lattice` (float64, topologically sorted, trimmed) and
writes them (atomically; used by tests and benchmarks, and available to the writer).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from lattices.lattice import Lattice
from pipeline.errors import DataError
from pipeline.io import atomic_path, read_json

__all__ = ["read_fst", "read_lattice", "write_lattice", "symbol_table", "lattice_paths", "read_meta",
           "default_alpha", "sentence_index", "EPSILON", "SENTENCE_START", "SENTENCE_END"]

EPSILON, SENTENCE_START, SENTENCE_END = "<eps>", "<s>", "</s>"
META_NAME = "lattices.json"
_INDEX = re.compile(r"^(\d+)\.fst$")


def read_fst(path: Path):
    """The pynini FST of a lattice file (DataError naming the file when it cannot be read)."""
    import pynini

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such lattice file")
    try:
        return pynini.Fst.read(str(path))
    except Exception as e:  # pynini raises FstIOError / FstOpError
        raise DataError(f"{path}: not an OpenFst lattice ({e})") from None


def read_lattice(path: Path) -> Lattice:
    """A lattice file as a float64 :class:`Lattice`, with the FST's word symbol table as ``symbols``."""
    fst = read_fst(path)
    try:
        return Lattice.from_fst(fst)
    except ValueError as e:
        raise DataError(f"{path}: {e}") from None


def symbol_table(words: Iterable[str]):
    """The word table of the format: ``<eps>``=0, ``<s>``=1, ``</s>``=2, then the words in the given order."""
    import pynini

    table = pynini.SymbolTable()
    for w in (EPSILON, SENTENCE_START, SENTENCE_END):
        table.add_symbol(w)
    for w in words:
        if w not in (EPSILON, SENTENCE_START, SENTENCE_END):
            table.add_symbol(w)
    return table


def write_lattice(lattice: Lattice, path: Path, symbols: Mapping[int, str] | None = None,
                  arc_type: str = "standard") -> None:
    """Write a lattice as an OpenFst binary (atomically), with its symbol table on both sides."""
    import pynini

    fst = lattice.to_fst(arc_type)
    table = symbols if symbols is not None else lattice.symbols
    if table is not None:
        st = pynini.SymbolTable()
        for key in sorted(table):
            st.add_symbol(table[key], key)
        fst.set_input_symbols(st)
        fst.set_output_symbols(st)
    with atomic_path(Path(path)) as tmp:
        fst.write(str(tmp))


def sentence_index(path: Path) -> int:
    """The sentence number of ``<i>.fst``."""
    m = _INDEX.match(Path(path).name)
    if not m:
        raise DataError(f"{path}: a lattice file is named <sentence number>.fst")
    return int(m.group(1))


def lattice_paths(folder: Path) -> list[Path]:
    """The lattice files of a decoded split, by sentence number (``<folder>/lattices/<i>.fst``)."""
    folder = Path(folder)
    sub = folder / "lattices"
    if not sub.is_dir():
        raise DataError(f"{folder}: no lattices/ folder")
    return sorted((p for p in sub.iterdir() if _INDEX.match(p.name)), key=sentence_index)


def read_meta(folder: Path) -> dict[str, Any]:
    """``<folder>/lattices.json``."""
    path = Path(folder) / META_NAME
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    return read_json(path)


def default_alpha(lattice_path: Path) -> float | None:
    """alpha of ``lattices.json`` beside the ``lattices/`` folder of a lattice file; None when there is none."""
    meta = Path(lattice_path).resolve().parent.parent / META_NAME
    if Path(lattice_path).resolve().parent.name != "lattices" or not meta.is_file():
        return None
    value = read_json(meta).get("alpha")
    if value is None:
        return None
    if not isinstance(value, (int, float)) or value <= 0:
        raise DataError(f"{meta}: alpha must be a positive number, not {value!r}")
    return float(value)
