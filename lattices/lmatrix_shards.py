"""L's shard files: several sentences' L (and their posteriors) in one npz file, concatenated with offsets.

:class:`ShardWriter` writes a shard sentence by sentence. Each L is cut down to the file's columns (int32 tokens,
float32 values) when it is added; the columns are held in memory up to 64 MB, and past that spooled to a temporary
folder beside the shard. :meth:`ShardWriter.finish` streams the columns into the npz, atomically. A stage therefore
holds little more than one sentence's L however many sentences its shard has (holding them all cost about 2 MB a
sentence on full lattices, and the page faults of that memory a third of the stage's time), and a shard of a few
sentences (a server's) never touches the spool. :func:`save_shard` writes a list of L the same way;
:func:`load_shard` reads one back; :class:`LMatrixStore` finds sentences across shards and loads them on demand;
:func:`build_lmatrix_shard` is the one call a Luigi task needs (:func:`write_lmatrix_shard`, the same with another
mapping of the word lattices to target units: a pretrained model's, lattices/model_shards.py).
"""
from __future__ import annotations

import json
import logging
import math
import shutil
import tempfile
import time
import zipfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from lattices.lmatrix import UNIT_CONVENTION, LMatrix, build_lmatrix
from lattices.posteriors import MAX_ORDER, NgramPosteriors, ngram_posteriors
from lattices.row_automaton import RowAutomaton
from lattices.theta import Theta
from pipeline.io import TMP_MARK, atomic_path

if TYPE_CHECKING:
    from lattices.lattice import Lattice
    from lattices.units import TokenMapper

__all__ = ["ShardWriter", "save_shard", "load_shard", "LMatrixStore", "build_lmatrix_shard", "write_lmatrix_shard"]

_LOG = logging.getLogger(__name__)

#: Columns are held in memory up to this many bytes, then spooled to files.
SPOOL_ABOVE = 64 * 2 ** 20

#: The columns concatenated over the sentences of a shard, with their stored dtype, in the file's order.
_COLUMNS = {
    "row_tokens": np.int32, "uni_tokens": np.int32, "uni_values": np.float32, "hi_row_sizes": np.int32,
    "hi_tokens": np.int32, "hi_values": np.float32, "trans_rows": np.int32, "trans_tokens": np.int32,
    "trans_next": np.int32, "unirow_tokens": np.int32, "unirow_rows": np.int32, "ngram_tokens": np.int32,
    "ngram_values": np.float64,
}
#: The per-sentence offsets [S+1] of the file, each over the rows of one column.
_OFFSETS = {"row_offsets": "row_tokens", "uni_offsets": "uni_tokens", "trans_offsets": "trans_rows",
            "unirow_offsets": "unirow_tokens", "ngram_offsets": "ngram_tokens"}
#: Every array of a shard file, in the file's order (offsets are per sentence, [S+1]).
_FILE_ORDER = ("sentences", "vocab_size", "order", "theta", "row_offsets", "row_tokens", "uni_offsets", "uni_tokens",
               "uni_values", "hi_row_sizes", "hi_tokens", "hi_values", "trans_offsets", "trans_rows", "trans_tokens",
               "trans_next", "unirow_offsets", "unirow_tokens", "unirow_rows", "ngram_offsets", "ngram_tokens",
               "ngram_values", "margins", "signature")


def _offsets(sizes: Iterable[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(list(sizes), dtype=np.int64)]).astype(np.int64)


def _columns(m: LMatrix) -> dict[str, np.ndarray]:
    """One sentence's part of each concatenated column (before the dtype of the file)."""
    a = m.automaton
    return {"row_tokens": a.history_tokens, "uni_tokens": m.uni_tokens, "uni_values": m.uni_values,
            "hi_row_sizes": np.diff(m.hi_indptr), "hi_tokens": m.hi_tokens, "hi_values": m.hi_values,
            "trans_rows": a.trans_rows, "trans_tokens": a.trans_tokens, "trans_next": a.trans_next,
            "unirow_tokens": a.unigram_tokens, "unirow_rows": a.unigram_rows, "ngram_tokens": m.posteriors.tokens,
            "ngram_values": m.posteriors.values}


class ShardWriter:
    """A shard file written sentence by sentence (see the module docstring; ``spool_above``: the bytes held in
    memory before they go to the spool). Use it as a context manager, which removes the spool however the block
    ends::

        with ShardWriter(path) as shard:
            for m in matrices:
                shard.add(m)
            shard.finish(signature)
    """

    def __init__(self, path: Path, spool_above: int = SPOOL_ABOVE) -> None:
        self.path = Path(path)
        self._spool_above = spool_above
        self._spool: Path | None = None  # created when the columns first pass `spool_above` bytes
        self._files: dict[str, IO[bytes]] = {}
        self._held: dict[str, list[np.ndarray]] = {name: [] for name in _COLUMNS}
        self._held_bytes = 0
        self._part_rows: dict[str, list[int]] = {name: [] for name in _COLUMNS}  # each sentence's rows per column
        self._widths: dict[str, tuple[int, ...]] = {}
        self._sentences: list[int] = []
        self._thetas: list[np.ndarray] = []
        self._margins: list[float] = []
        self._vocab_size: int | None = None
        self._order: int | None = None

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._sentences)

    def add(self, m: LMatrix) -> None:
        """Append one sentence's L (and posteriors): its columns are kept in the file's dtypes, not the matrix."""
        if self._vocab_size is None:
            self._vocab_size, self._order = m.vocab_size, m.posteriors.order
        elif (m.vocab_size, m.posteriors.order) != (self._vocab_size, self._order):
            raise ValueError("the sentences of a shard must share the vocabulary size and the n-gram order")
        for name, values in _columns(m).items():
            width = values.shape[1:]
            if self._widths.setdefault(name, width) != width:
                raise ValueError(f"{name}: rows of width {width} after rows of width {self._widths[name]}")
            part = np.ascontiguousarray(values, _COLUMNS[name])
            self._held[name].append(part)
            self._held_bytes += part.nbytes
            self._part_rows[name].append(values.shape[0])
        self._sentences.append(m.sentence)
        self._thetas.append(m.theta)
        self._margins.append(m.posteriors.margin)
        if self._held_bytes > self._spool_above:
            self._spill()

    def _spill(self) -> None:
        """Append the held columns to the spool's files (made on first use) and let them go."""
        if self._spool is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._spool = Path(tempfile.mkdtemp(prefix=self.path.name + TMP_MARK, dir=self.path.parent))
            self._files = {name: (self._spool / name).open("wb") for name in _COLUMNS}
        for name, parts in self._held.items():
            for part in parts:
                self._files[name].write(part)
            parts.clear()
        self._held_bytes = 0

    def finish(self, signature: dict[str, Any]) -> None:
        """Write the shard file (atomically), with the given signature."""
        if not self._sentences:
            raise ValueError("a shard needs at least one sentence")
        for f in self._files.values():
            f.close()
        small = {
            "sentences": np.asarray(self._sentences, np.int64), "vocab_size": np.asarray(self._vocab_size, np.int64),
            "order": np.asarray(self._order, np.int64), "theta": np.stack(self._thetas),
            **{offsets: _offsets(self._part_rows[column]) for offsets, column in _OFFSETS.items()},
            "margins": np.asarray(self._margins, np.float64), "signature": np.asarray(json.dumps(signature)),
        }
        with atomic_path(self.path) as tmp:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
                for name in _FILE_ORDER:
                    with archive.open(f"{name}.npy", "w", force_zip64=True) as entry:
                        if name in small:
                            np.lib.format.write_array(entry, small[name], allow_pickle=False)
                        else:
                            self._copy_column(name, entry)

    def _copy_column(self, name: str, entry: IO[bytes]) -> None:
        """The .npy form of a column: its header, then its spooled bytes, then those still held."""
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(_COLUMNS[name])), "fortran_order": False,
                  "shape": (sum(self._part_rows[name]), *self._widths.get(name, ()))}
        np.lib.format.write_array_header_1_0(entry, header)
        if self._spool is not None:
            spooled = self._spool / name
            with spooled.open("rb") as f:
                shutil.copyfileobj(f, entry, 1 << 20)
            spooled.unlink()  # the spool shrinks as the shard grows: the disk holds little more than the shard
        for part in self._held[name]:
            entry.write(part)

    def close(self) -> None:
        """Remove the spool (the shard file, once finished, stays)."""
        for f in self._files.values():
            f.close()
        if self._spool is not None:
            shutil.rmtree(self._spool, ignore_errors=True)


def save_shard(path: Path, matrices: Sequence[LMatrix], signature: dict[str, Any] | None = None) -> None:
    """Write several sentences' L (and posteriors) into one npz file, atomically."""
    if not matrices:
        raise ValueError("a shard needs at least one sentence")
    with ShardWriter(path) as shard:
        for m in matrices:
            shard.add(m)
        shard.finish(signature if signature is not None else matrices[0].signature)


def load_shard(path: Path, sentences: Iterable[int] | None = None) -> list[LMatrix]:
    """The sentences of a shard (all, or those listed, in shard order), rebuilt from the stored arrays."""
    with np.load(Path(path), allow_pickle=False) as z:
        a = {k: z[k] for k in z.files}
    signature = json.loads(str(a["signature"]))
    order = int(a["order"])
    vocab_size = int(a["vocab_size"])
    wanted = None if sentences is None else set(int(s) for s in sentences)
    result = []
    ro, uo, no = a["row_offsets"], a["uni_offsets"], a["ngram_offsets"]
    hi_offsets = _offsets(a["hi_row_sizes"])
    margins = a.get("margins", np.full(len(a["sentences"]), np.inf))  # shards written before pruning existed
    for k, sentence in enumerate(a["sentences"].tolist()):
        if wanted is not None and sentence not in wanted:
            continue
        r0, r1 = int(ro[k]), int(ro[k + 1])
        sizes = a["hi_row_sizes"][r0:r1].astype(np.int64)
        h0, h1 = int(hi_offsets[r0]), int(hi_offsets[r1])
        posteriors = NgramPosteriors(a["ngram_tokens"][no[k]:no[k + 1]].astype(np.int64),
                                     a["ngram_values"][no[k]:no[k + 1]].astype(np.float64), order,
                                     float(margins[k]))
        t0, t1 = int(a["trans_offsets"][k]), int(a["trans_offsets"][k + 1])
        u0, u1 = int(a["unirow_offsets"][k]), int(a["unirow_offsets"][k + 1])
        automaton = RowAutomaton(
            a["row_tokens"][r0:r1].astype(np.int64), order - 1,
            a["unirow_tokens"][u0:u1].astype(np.int64), a["unirow_rows"][u0:u1].astype(np.int64),
            a["trans_rows"][t0:t1].astype(np.int64), a["trans_tokens"][t0:t1].astype(np.int64),
            a["trans_next"][t0:t1].astype(np.int64))
        result.append(LMatrix(
            sentence=sentence, vocab_size=vocab_size, theta=a["theta"][k].astype(np.float64), automaton=automaton,
            uni_tokens=a["uni_tokens"][uo[k]:uo[k + 1]].astype(np.int64),
            uni_values=a["uni_values"][uo[k]:uo[k + 1]],
            hi_indptr=_offsets(sizes), hi_tokens=a["hi_tokens"][h0:h1].astype(np.int64),
            hi_values=a["hi_values"][h0:h1], posteriors=posteriors, signature=signature))
    return result


class LMatrixStore:
    """Sentences spread over shard files, loaded on demand (the last few shards are kept in memory)."""

    def __init__(self, paths: Iterable[Path], cache_shards: int = 2) -> None:
        self.paths = [Path(p) for p in paths]
        self._where: dict[int, Path] = {}
        for p in self.paths:
            with np.load(p, allow_pickle=False) as z:
                for s in z["sentences"].tolist():
                    if s in self._where:
                        raise ValueError(f"sentence {s} is in both {self._where[s]} and {p}")
                    self._where[s] = p
        self._cache: dict[Path, dict[int, LMatrix]] = {}
        self._cache_shards = max(1, cache_shards)

    def __contains__(self, sentence: int) -> bool:
        return sentence in self._where

    def __len__(self) -> int:
        return len(self._where)

    def sentences(self) -> list[int]:
        return sorted(self._where)

    def get(self, sentences: Sequence[int]) -> list[LMatrix]:
        """L of the given sentences, in the given order (KeyError for a sentence in no shard)."""
        result = []
        for s in sentences:
            path = self._where[int(s)]
            shard = self._cache.get(path)
            if shard is None:
                shard = {m.sentence: m for m in load_shard(path)}
                while len(self._cache) >= self._cache_shards:
                    self._cache.pop(next(iter(self._cache)))
                self._cache[path] = shard
            result.append(shard[int(s)])
        return result


# ---------------------------------------------------------------------------------------------- the task's call
def build_lmatrix_shard(lattice_paths: Sequence[Path], codes: Path | None, vocab: Path, theta: Theta,
                        alpha: float | None, semiring: str, nbest: int, out_path: Path,
                        order: int = MAX_ORDER, engine: str = "exact", max_states: int = 0,
                        mapper: TokenMapper | None = None) -> dict[str, Any]:
    """Posteriors and L of the given lattice files (``<i>.fst``) into one shard ``out_path``; returns statistics.

    ``codes``/``vocab``: LearnBPE's codes.<tgt> (None: lattice words are already target units) and BuildVocab's
    vocab.<tgt>.json. ``alpha`` None takes each lattice's lattices.json value. ``nbest`` 0 = full lattice.
    ``engine``: how the evidence space is computed (lattices.openfst); ``max_states``: the bound on a determinised
    tropical full lattice (lattices.pruning; 0: none). The statistics name the pruned sentences with their margin.
    ``mapper``: the TokenMapper of codes and vocab when the caller holds one (a server: loading the codes costs ~50 ms).
    Each sentence's L goes to the shard as soon as it is built (:class:`ShardWriter`), so memory does not grow with
    the number of lattices.
    """
    from lattices.units import TokenMapper, map_lattice

    mapper = mapper if mapper is not None else TokenMapper.from_files(codes, vocab)
    return write_lmatrix_shard(lattice_paths, lambda lattice: map_lattice(lattice, mapper), len(mapper.vocab), theta,
                               alpha, semiring, nbest, out_path, order, engine, max_states,
                               {"units": UNIT_CONVENTION, "codes": str(codes) if codes else None, "vocab": str(vocab)})


def write_lmatrix_shard(lattice_paths: Sequence[Path], to_units: Callable[[Lattice], Lattice], vocab_size: int,
                        theta: Theta, alpha: float | None, semiring: str, nbest: int, out_path: Path,
                        order: int = MAX_ORDER, engine: str = "exact", max_states: int = 0,
                        units: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`build_lmatrix_shard` with any mapping of word lattices to target units: ``to_units`` (a word lattice
    -> the lattice in ids below ``vocab_size``, label 0 epsilon); ``units``: what the shard's signature says of
    the units (their convention, the files they come from)."""
    from lattices.fst_io import default_alpha, read_lattice, sentence_index
    from pipeline.errors import DataError

    seconds = 0.0
    alphas = set()
    rows, nnz, ngrams, pruned = [], 0, 0, {}
    with ShardWriter(Path(out_path)) as shard:
        for path in lattice_paths:
            started = time.perf_counter()
            a = alpha if alpha is not None else default_alpha(Path(path))
            if a is None:
                raise DataError(f"{path}: no alpha given and no lattices.json with one beside its lattices/ folder")
            alphas.add(a)
            mapped = to_units(read_lattice(Path(path)))
            if mapped.num_states == 0:
                _LOG.warning("%s: no complete path; its L is Theta_0 everywhere", path)
            post = ngram_posteriors(mapped, order=order, alpha=a, semiring=semiring, nbest=nbest, engine=engine,
                                    max_states=max_states)
            if math.isfinite(post.margin):
                _LOG.info("%s: determinised lattice over %d states; pruned to margin %.4g", path, max_states,
                          post.margin)
            m = build_lmatrix(post, theta, vocab_size, sentence_index(Path(path)))
            shard.add(m)
            rows.append(m.num_rows)
            nnz += m.nnz
            ngrams += len(post)
            if math.isfinite(post.margin):
                pruned[m.sentence] = round(post.margin, 6)
            seconds += time.perf_counter() - started
        signature = {
            "theta": theta.signature(), "alpha": sorted(alphas)[0] if len(alphas) == 1 else sorted(alphas),
            "semiring": semiring, "nbest": nbest, "order": order, "engine": engine, "max_states": max_states,
            **(units or {}), "vocab_size": vocab_size,
        }
        shard.finish(signature)
    return {"sentences": len(rows), "rows": int(sum(rows)), "max_rows": int(max(rows, default=0)),
            "nnz": int(nnz), "ngrams": int(ngrams), "seconds": round(float(seconds), 3), "signature": signature,
            "pruned": pruned}
