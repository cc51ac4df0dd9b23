"""The compiled stack search: pbmt_search.cpp, built by `make install` into ``_pbmt_search.so``, called by ctypes.

It is ``Decoder._search`` followed by ``Decoder._graph`` in C++ against KenLM's own model, step for step and bit
for bit (the same arcs, in the same order, with the same scores), several times faster. The Python search stays
the reference and the fallback: for a sentence of more than ``max_words`` words, and where the library was not
built. The model is loaded a second time in C++ from the file the ``kenlm.Model`` was read from; a KenLM binary
is memory-mapped, so both share the same pages.
"""
from __future__ import annotations

import ctypes
import functools
from pathlib import Path

import kenlm
import numpy as np

from pipeline.smt.options import Options
from pipeline.smt.reordering import WeightedReordering

LIBRARY = Path(__file__).with_name("_pbmt_search.so")
COMPILED_SOURCES = ("pbmt_search.cpp",)  # built into LIBRARY; the stage fingerprints (tasks/versions.py) hash them

_I32 = ctypes.POINTER(ctypes.c_int32)
_ERROR_SIZE = 512


@functools.cache
def load_library() -> ctypes.CDLL | None:
    """The built library with its signatures declared, or None when `make install` has not built it."""
    if not LIBRARY.exists():
        return None
    lib = ctypes.CDLL(str(LIBRARY))
    p = ctypes.c_void_p
    lib.pbmt_max_words.restype = ctypes.c_int
    lib.pbmt_load.restype = p
    lib.pbmt_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
    lib.pbmt_free.argtypes = [p]
    lib.pbmt_vocab.argtypes = [p, ctypes.c_char_p, _I32, ctypes.c_int32, p]
    lib.pbmt_search.restype = p
    lib.pbmt_search.argtypes = [p, ctypes.c_int32] + [p] * 14 + [ctypes.c_int32, ctypes.c_int32, p, p, p,
                                                                  ctypes.c_char_p, ctypes.c_int]
    lib.pbmt_result_states.restype = ctypes.c_int32
    lib.pbmt_result_states.argtypes = [p]
    lib.pbmt_result_arcs.restype = ctypes.c_int64
    lib.pbmt_result_arcs.argtypes = [p]
    lib.pbmt_result_stats.argtypes = [p, p]
    lib.pbmt_result_copy.argtypes = [p] * 6
    lib.pbmt_result_orientations.argtypes = [p] * 4
    lib.pbmt_result_free.argtypes = [p]
    return lib


def _pointer(array: np.ndarray) -> int:
    return array.ctypes.data


class CompiledSearch:
    """The compiled search over one KenLM model (the file of ``lm``)."""

    def __init__(self, path: str) -> None:
        """``path``: a KenLM model file (binary or ARPA); the library must be built (``for_model`` checks)."""
        lib = load_library()
        if lib is None:
            raise FileNotFoundError(f"{LIBRARY} is not built; run `make install`")
        self.lib, self.path = lib, path
        self.max_words = lib.pbmt_max_words()
        error = ctypes.create_string_buffer(_ERROR_SIZE)
        handle = lib.pbmt_load(path.encode(), error, _ERROR_SIZE)
        if not handle:
            raise OSError(f"the compiled PBMT search cannot read the KenLM model {path!r}: "
                          f"{error.value.decode(errors='replace')}")
        self._model = ctypes.c_void_p(handle)

    @classmethod
    def for_model(cls, lm: kenlm.Model) -> "CompiledSearch | None":
        """The compiled search over the file of ``lm``, or None when the library is not built."""
        path = lm.path.decode() if isinstance(lm.path, bytes) else str(lm.path)
        return cls(path) if load_library() is not None else None

    def __del__(self) -> None:
        model = getattr(self, "_model", None)
        if model is not None and model.value:
            self.lib.pbmt_free(model)

    def __reduce__(self) -> tuple:
        return CompiledSearch, (self.path,)  # the C++ model is loaded again from its file

    def search(self, opts: Options, future_table: np.ndarray, w_lm: float, w_d: float, ln10: float, beam: float,
               limit_d: int, stack_limit: int, reordering: WeightedReordering | None = None
               ) -> tuple[tuple[np.ndarray, ...], np.ndarray | None, int, dict] | None:
        """The search graph's arcs as columns (u, v, option, ln LM score, distortion; SearchGraph.arrays), grouped
        by target state in topological order, their orientations with the reordering model (SearchGraph.
        orientations; else None), its number of states and the search statistics; None when no hypothesis
        completes."""
        n = future_table.shape[0]
        spans = [s for spans in opts.by_start for s in spans]
        by_start = np.zeros(n + 1, dtype=np.int32)
        np.cumsum([len(s) for s in opts.by_start], out=by_start[1:])
        entries = [e for s in spans for e in s.entries]
        span_entries = np.zeros(len(spans) + 1, dtype=np.int32)
        np.cumsum([len(s.entries) for s in spans], out=span_entries[1:])
        option, future, score, target = zip(*entries) if entries else ((), (), (), ())
        targets = self._targets(opts)
        word_begin = np.zeros(len(targets) + 1, dtype=np.int32)
        np.cumsum([len(t) for t in targets], out=word_begin[1:])
        words = self._vocab([w for t in targets for w in t])
        arrays = [by_start,
                  np.array([s.end for s in spans], dtype=np.int32),
                  np.array([s.best_future for s in spans], dtype=np.float64),
                  span_entries,
                  np.array(option, dtype=np.int32),
                  np.array(future, dtype=np.float64),
                  np.array(score, dtype=np.float64),
                  np.array(target, dtype=np.int32),
                  word_begin, words]
        table = np.ascontiguousarray(future_table, dtype=np.float64)
        static_score = np.array(opts.static_score, dtype=np.float64)
        weights = np.array([w_lm * ln10, w_lm, w_d, ln10, beam], dtype=np.float64)
        model = [None, None, None]
        if reordering is not None:
            model = [np.array(reordering.backward, dtype=np.float64).reshape(-1, 3),
                     np.array(reordering.forward, dtype=np.float64).reshape(-1, 3),
                     np.array(reordering.forward_class, dtype=np.int32)]
        error = ctypes.create_string_buffer(_ERROR_SIZE)
        result = self.lib.pbmt_search(self._model, n, *map(_pointer, arrays[:10]), len(targets),
                                      _pointer(table), _pointer(static_score), _pointer(weights),
                                      limit_d, stack_limit, *(None if a is None else _pointer(a) for a in model),
                                      error, _ERROR_SIZE)
        if not result:
            raise RuntimeError(f"compiled PBMT search: {error.value.decode(errors='replace')}")
        try:
            num_states = self.lib.pbmt_result_states(result)
            stats_out = np.zeros(2, dtype=np.int64)
            self.lib.pbmt_result_stats(result, _pointer(stats_out))
            stats = {"hypotheses": int(stats_out[0]), "expansions": int(stats_out[1]), "options": len(opts)}
            if num_states == 0:
                return None
            m = self.lib.pbmt_result_arcs(result)
            u, v, o, d = (np.empty(m, dtype=np.int32) for _ in range(4))
            lm = np.empty(m, dtype=np.float64)
            self.lib.pbmt_result_copy(result, _pointer(u), _pointer(v), _pointer(o), _pointer(lm), _pointer(d))
            orientations = None
            if reordering is not None:
                columns = np.empty((3, m), dtype=np.int32)
                self.lib.pbmt_result_orientations(result, *(_pointer(columns[k]) for k in range(3)))
                orientations = np.ascontiguousarray(columns.T, dtype=np.int64)
        finally:
            self.lib.pbmt_result_free(result)
        arrays = (u.astype(np.int64), v.astype(np.int64), o.astype(np.int64), lm, d.astype(np.int64))
        return arrays, orientations, num_states, stats

    @staticmethod
    def _targets(opts: Options) -> list[tuple[str, ...]]:
        """The target phrase of each target id (equal phrases share one)."""
        targets: list[tuple[str, ...] | None] = [None] * (max(opts.target_ids, default=-1) + 1)
        for o, t in enumerate(opts.target_ids):
            if targets[t] is None:
                targets[t] = opts.targets[o]
        return [t if t is not None else () for t in targets]

    def _vocab(self, words: list[str]) -> np.ndarray:
        """KenLM ids of words (0, <unk>, for words the model does not know)."""
        encoded = [w.encode() for w in words]
        lengths = np.array([len(b) for b in encoded], dtype=np.int32)
        out = np.zeros(len(words), dtype=np.uint32)
        self.lib.pbmt_vocab(self._model, b"".join(encoded), lengths.ctypes.data_as(_I32), len(words), _pointer(out))
        return out

