"""The L matrix of one sentence: rows = histories seen in the evidence space, columns = target vocabulary.

    L[h, y] = Theta_0 + sum_{n=1..N} Theta_n * p(suffix_{n-1}(h) . y)      (ALGORITHMS.md section 4)

(a term whose suffix_{n-1}(h) does not exist, because h is shorter than n-1, is 0). Storage, never dense:

- ``Theta_0`` as a scalar (``theta[0]``);
- the unigram part Theta_1 p(y), shared by every row: ``uni_tokens`` [U], ``uni_values`` [U];
- the higher-order part sum_{n>=2} Theta_n p(suffix_{n-1}(h) . y) as CSR over rows: ``hi_indptr`` [R+1],
  ``hi_tokens`` [nnz], ``hi_values`` [nnz] (float32);
- the row automaton (:mod:`lattices.row_automaton`) and the posteriors it came from (for dumps and for a new
  theta without recomputing them: :meth:`LMatrix.with_theta`).

A shard file (npz, written atomically) holds several sentences, concatenated with offsets;
:func:`build_lmatrix_shard` is the one call a Luigi task needs. :class:`LMatrixStore` finds sentences across
shards and loads them on demand; :class:`lattices.batch.LMatrixBatch` puts a batch on the device.
"""
from __future__ import annotations

import functools
import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from lattices.posteriors import MAX_ORDER, NgramPosteriors, ngram_posteriors
from lattices.lmatrix_kernels import lmatrix_tables
from lattices.row_automaton import RowAutomaton, row_key
from lattices.theta import Theta
from pipeline.io import atomic_path

if TYPE_CHECKING:
    from lattices.units import TokenMapper

__all__ = ["LMatrix", "build_lmatrix", "compile_kernels", "save_shard", "load_shard", "LMatrixStore", "build_lmatrix_shard",
           "UNIT_CONVENTION"]

_LOG = logging.getLogger(__name__)

#: How word lattices become token sequences (see lattices.units); recorded in every signature.
UNIT_CONVENTION = ("word arcs -> BPE piece chains (weight on the first piece); <s> -> bos_id, </s> -> eos_id, "
                   "piece outside the vocabulary -> unk_id; epsilon kept")


@dataclass
class LMatrix:
    """L of one sentence (see the module docstring for the layout). ``R`` rows, ``V`` = vocabulary size."""

    sentence: int
    vocab_size: int
    theta: np.ndarray          # [N+1] float64: Theta_0..Theta_N
    automaton: RowAutomaton
    uni_tokens: np.ndarray     # [U] int64, sorted
    uni_values: np.ndarray     # [U] float32: Theta_1 p(y)
    hi_indptr: np.ndarray      # [R+1] int64
    hi_tokens: np.ndarray      # [nnz] int64, sorted within a row
    hi_values: np.ndarray      # [nnz] float32
    posteriors: NgramPosteriors
    signature: dict[str, Any] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        return self.automaton.num_rows

    @property
    def nnz(self) -> int:
        return int(self.hi_tokens.size)

    def dense_rows(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The dense rows [len(rows), V] (float32), Theta_0 everywhere outside the stored part."""
        rows = np.asarray(rows, np.int64)
        out = np.full((rows.size, self.vocab_size), self.theta[0], np.float32)
        out[:, self.uni_tokens] += self.uni_values
        for k, r in enumerate(rows.tolist()):
            lo, hi = self.hi_indptr[r], self.hi_indptr[r + 1]
            out[k, self.hi_tokens[lo:hi]] += self.hi_values[lo:hi]
        return out

    def values(self, rows: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """L[rows[i], tokens[i]] for pairs of equal shape: the float32 values of :meth:`dense_rows` (same sums in the
        same order), without building dense rows."""
        rows, tokens = np.asarray(rows, np.int64), np.asarray(tokens, np.int64)
        out = np.full(rows.shape, self.theta[0], np.float32)
        if self.uni_tokens.size:
            j = np.minimum(np.searchsorted(self.uni_tokens, tokens), self.uni_tokens.size - 1)
            hit = self.uni_tokens[j] == tokens
            out[hit] += self.uni_values[j[hit]]
        if self.hi_tokens.size:
            keys = self._hi_keys
            query = row_key(rows, tokens)
            i = np.minimum(np.searchsorted(keys, query), keys.size - 1)
            hit = keys[i] == query
            out[hit] += self.hi_values[i[hit]]
        return out

    @functools.cached_property
    def _hi_keys(self) -> np.ndarray:
        """[nnz] the sorted (row, token) keys of the stored part (computed once)."""
        rows = np.repeat(np.arange(self.num_rows, dtype=np.int64), np.diff(self.hi_indptr))
        return row_key(rows, self.hi_tokens)

    def with_theta(self, theta: Theta) -> "LMatrix":
        """The same posteriors under another theta."""
        return build_lmatrix(self.posteriors, theta, self.vocab_size, self.sentence,
                             {**self.signature, "theta": theta.signature()})

    def nbytes(self) -> int:
        arrays = (self.uni_tokens, self.uni_values, self.hi_indptr, self.hi_tokens, self.hi_values,
                  self.automaton.trans_rows, self.automaton.trans_tokens, self.automaton.trans_next)
        return int(sum(a.nbytes for a in arrays))


def build_lmatrix(posteriors: NgramPosteriors, theta: Theta, vocab_size: int, sentence: int = 0,
                  signature: dict[str, Any] | None = None) -> LMatrix:
    """L from the posteriors of orders 1..N (N = posteriors.order <= theta's order)."""
    order = posteriors.order
    if order > theta.order:
        raise ValueError(f"posteriors of order {order} but theta only up to {theta.order}")
    if len(posteriors) and int(posteriors.tokens.max()) >= vocab_size:
        raise ValueError(f"an n-gram token id is outside the vocabulary of size {vocab_size}")
    th = np.asarray(theta.values[: order + 1], np.float64)
    tables = lmatrix_tables(posteriors.tokens, posteriors.values, th, order - 1)
    unigrams = np.flatnonzero(posteriors.lengths == 1)
    unigrams = unigrams[np.argsort(posteriors.tokens[unigrams, 0], kind="stable")]
    return LMatrix(
        sentence=int(sentence), vocab_size=int(vocab_size), theta=th,
        automaton=RowAutomaton.from_tables(tables, order - 1),
        uni_tokens=posteriors.tokens[unigrams, 0].copy(),
        uni_values=(th[1] * posteriors.values[unigrams]).astype(np.float32),
        hi_indptr=tables.hi_indptr, hi_tokens=tables.hi_tokens,
        hi_values=tables.hi_values.astype(np.float32), posteriors=posteriors, signature=dict(signature or {}))


def compile_kernels() -> None:
    """Compile the posterior, L and acceptor kernels (numba), or load them from numba's cache: what a server does
    once at start, so that its first request does not wait for the compiler (about 30 s without a cache)."""
    from lattices.acceptor import Acceptor
    from lattices.lattice import from_paths

    lattice = from_paths([((5, 6, 7), 0.5), ((5, 7), 1.0)])
    for nbest in (0, 2):
        build_lmatrix(ngram_posteriors(lattice, MAX_ORDER, nbest=nbest), Theta.from_precisions([60, 35, 21, 13]), 8)
    Acceptor.from_lattice(lattice, 1, 2)


# ---------------------------------------------------------------------------------------------- shards
def _offsets(sizes: Iterable[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(list(sizes), dtype=np.int64)]).astype(np.int64)


def save_shard(path: Path, matrices: Sequence[LMatrix], signature: dict[str, Any] | None = None) -> None:
    """Write several sentences' L (and posteriors) into one npz file, atomically."""
    if not matrices:
        raise ValueError("a shard needs at least one sentence")
    vocab = {m.vocab_size for m in matrices}
    orders = {m.posteriors.order for m in matrices}
    if len(vocab) != 1 or len(orders) != 1:
        raise ValueError("the sentences of a shard must share the vocabulary size and the n-gram order")
    order = orders.pop()
    cat = np.concatenate
    row_tokens = cat([m.automaton.history_tokens for m in matrices]).astype(np.int32)
    ngram_tokens = cat([m.posteriors.tokens for m in matrices]).astype(np.int32)
    arrays = {
        "sentences": np.asarray([m.sentence for m in matrices], np.int64),
        "vocab_size": np.asarray(vocab.pop(), np.int64),
        "order": np.asarray(order, np.int64),
        "theta": np.stack([m.theta for m in matrices]),
        "row_offsets": _offsets(m.num_rows for m in matrices),
        "row_tokens": row_tokens,
        "uni_offsets": _offsets(m.uni_tokens.size for m in matrices),
        "uni_tokens": cat([m.uni_tokens for m in matrices]).astype(np.int32),
        "uni_values": cat([m.uni_values for m in matrices]).astype(np.float32),
        "hi_row_sizes": cat([np.diff(m.hi_indptr) for m in matrices]).astype(np.int32),
        "hi_tokens": cat([m.hi_tokens for m in matrices]).astype(np.int32),
        "hi_values": cat([m.hi_values for m in matrices]).astype(np.float32),
        "trans_offsets": _offsets(m.automaton.trans_rows.size for m in matrices),
        "trans_rows": cat([m.automaton.trans_rows for m in matrices]).astype(np.int32),
        "trans_tokens": cat([m.automaton.trans_tokens for m in matrices]).astype(np.int32),
        "trans_next": cat([m.automaton.trans_next for m in matrices]).astype(np.int32),
        "unirow_offsets": _offsets(m.automaton.unigram_tokens.size for m in matrices),
        "unirow_tokens": cat([m.automaton.unigram_tokens for m in matrices]).astype(np.int32),
        "unirow_rows": cat([m.automaton.unigram_rows for m in matrices]).astype(np.int32),
        "ngram_offsets": _offsets(len(m.posteriors) for m in matrices),
        "ngram_tokens": ngram_tokens,
        "ngram_values": cat([m.posteriors.values for m in matrices]).astype(np.float64),
        "margins": np.asarray([m.posteriors.margin for m in matrices], np.float64),
        "signature": np.asarray(json.dumps(signature if signature is not None else matrices[0].signature)),
    }
    with atomic_path(Path(path)) as tmp:
        with tmp.open("wb") as f:
            np.savez(f, **arrays)


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
    """
    from lattices.fst_io import default_alpha, read_lattice, sentence_index
    from lattices.units import TokenMapper, map_lattice
    from pipeline.errors import DataError

    mapper = mapper if mapper is not None else TokenMapper.from_files(codes, vocab)
    vocab_size = len(mapper.vocab)
    matrices = []
    seconds = []
    alphas = set()
    for path in lattice_paths:
        started = time.perf_counter()
        a = alpha if alpha is not None else default_alpha(Path(path))
        if a is None:
            raise DataError(f"{path}: no alpha given and no lattices.json with one beside its lattices/ folder")
        alphas.add(a)
        units = map_lattice(read_lattice(Path(path)), mapper)
        if units.num_states == 0:
            _LOG.warning("%s: no complete path; its L is Theta_0 everywhere", path)
        post = ngram_posteriors(units, order=order, alpha=a, semiring=semiring, nbest=nbest, engine=engine,
                                max_states=max_states)
        if math.isfinite(post.margin):
            _LOG.info("%s: determinised lattice over %d states; pruned to margin %.4g", path, max_states, post.margin)
        matrices.append(build_lmatrix(post, theta, vocab_size, sentence_index(Path(path))))
        seconds.append(time.perf_counter() - started)
    signature = {
        "theta": theta.signature(), "alpha": sorted(alphas)[0] if len(alphas) == 1 else sorted(alphas),
        "semiring": semiring, "nbest": nbest, "order": order, "engine": engine, "max_states": max_states,
        "units": UNIT_CONVENTION,
        "codes": str(codes) if codes else None, "vocab": str(vocab), "vocab_size": vocab_size,
    }
    for m in matrices:
        m.signature = signature
    save_shard(Path(out_path), matrices, signature)
    rows = [m.num_rows for m in matrices]
    return {"sentences": len(matrices), "rows": int(sum(rows)), "max_rows": int(max(rows, default=0)),
            "nnz": int(sum(m.nnz for m in matrices)), "ngrams": int(sum(len(m.posteriors) for m in matrices)),
            "seconds": round(float(sum(seconds)), 3), "signature": signature,
            "pruned": {m.sentence: round(m.posteriors.margin, 6) for m in matrices
                       if math.isfinite(m.posteriors.margin)}}
