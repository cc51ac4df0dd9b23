"""Building a phrase table from a word-aligned corpus with bounded memory, as Moses' extract + score do.

1. Extract every consistent phrase pair (pipeline.smt.extract) into two text files, ``f ||| e ||| a`` and the
   inverse ``e ||| f ||| a'``, and count the word translation table (pipeline.smt.lexical) on the way.
2. Sort both files with the system's ``sort`` (C byte order, bounded memory, temporary files on disk).
3. Direct pass over the sorted pairs grouped by f: c(f, e), c(f) and the most frequent alignment of (f, e).
   Inverse pass grouped by e: c(e); its output is sorted again so that both passes list the pairs (f, e) in
   the same order (``f ||| e ||| `` prefixes compare the same whatever follows, since words never hold ``|||``).
   With the lexicalised reordering model, each extracted pair carries its two orientation letters and the direct
   pass also counts them per pair and over all pairs (pipeline.smt.reordering).
4. Join them line by line: phi(f|e) = c(f,e)/c(e), lex(f|e), phi(e|f) = c(f,e)/c(f), lex(e|f) (lexical weights of
   the most frequent alignment; the first one in sorted order on ties), written to the Moses text table (gzip,
   sorted like Moses' own) and to the fast form; with the reordering model, its six smoothed probabilities go to
   the fast form's columns 5-10 and to a Moses reordering table (``f ||| e ||| six probabilities``, gzip).

Memory holds the word translation table and one source phrase's pairs at a time, plus the fast form's arrays.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from pipeline.io import atomic_path, gzip_writer
from pipeline.smt.extract import extract_pairs
from pipeline.smt.lexical import LexicalTable, LexicalWeigher
from pipeline.smt.phrase_table import REORDERING_COLUMNS, SEP, TM_COLUMNS, FastFormWriter
from pipeline.smt.reordering import count_orientations, orientation_probabilities, priors

log = logging.getLogger(__name__)


def sort_file(path: Path, out: Path, tmp_dir: Path, memory: str = "1G", threads: int = 2) -> None:
    """``LC_ALL=C sort`` of a text file into ``out``."""
    cmd = ["sort", "-S", memory, "-T", str(tmp_dir), f"--parallel={max(1, threads)}", "-o", str(out), str(path)]
    result = subprocess.run(cmd, env={**os.environ, "LC_ALL": "C"}, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed ({result.returncode}): {result.stderr.strip()[-2000:]}")


def _lines(path: Path) -> Iterator[list[str]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n").split(SEP)


def _invert(alignment: str) -> str:
    """``"i-j ..."`` -> ``"j-i ..."``, sorted (few distinct alignments make most of millions of pairs)."""
    return " ".join(f"{j}-{i}" for j, i in sorted((int(j), int(i)) for i, _, j in
                                                   (p.partition("-") for p in alignment.split())))


def extract_corpus(source: Iterable[Sequence[str]], target: Iterable[Sequence[str]],
                   alignments: Iterable[Sequence[tuple[int, int]]], max_length: int, direct: Path,
                   inverse: Path, reordering: bool = False) -> tuple[LexicalTable, int, int]:
    """Write the extracted pairs both ways (the direct ones with their orientation letters when ``reordering``);
    returns the word translation table, sentences and pairs."""
    lexical = LexicalTable()
    invert = functools.lru_cache(maxsize=1 << 20)(_invert)
    sentences = pairs = 0
    with direct.open("w", encoding="utf-8") as fd, inverse.open("w", encoding="utf-8") as fi:
        for src, tgt, links in zip(source, target, alignments):
            lexical.add(src, tgt, links)
            for f, e, a, *letters in extract_pairs(src, tgt, links, max_length, reordering):
                fd.write(f"{f}{SEP}{e}{SEP}{a}{SEP}{letters[0]}\n" if letters else f"{f}{SEP}{e}{SEP}{a}\n")
                fi.write(f"{e}{SEP}{f}{SEP}{invert(a)}\n")
                pairs += 1
            sentences += 1
    return lexical, sentences, pairs


def direct_counts(sorted_direct: Path, out: Path) -> np.ndarray:
    """``f ||| e ||| c(f,e) c(f) ||| alignment`` per pair, in the sorted order of the extract, followed by
    ``||| six orientation counts`` when the extract has orientation letters; returns the orientation counts over
    all pairs ([6], zeros without them)."""
    totals = np.zeros(REORDERING_COLUMNS, dtype=np.int64)
    with out.open("w", encoding="utf-8") as o:
        for f, group in itertools.groupby(_lines(sorted_direct), key=lambda x: x[0]):
            by_target: dict[str, list] = {}
            for fields in group:  # f, e, alignment[, orientation letters]
                e, a = fields[1], fields[2]
                entry = by_target.setdefault(e, [0, {}, []])
                entry[0] += 1
                entry[1][a] = entry[1].get(a, 0) + 1
                if len(fields) > 3:
                    entry[2].append(fields[3])
            c_f = sum(v[0] for v in by_target.values())
            for e, (c_fe, aligns, letters) in by_target.items():
                best = max(aligns.items(), key=lambda kv: kv[1])[0]  # dicts keep the sorted order: first wins ties
                extra = ""
                if letters:
                    counts = count_orientations(letters)
                    totals += counts
                    extra = SEP + " ".join(map(str, counts.tolist()))
                o.write(f"{f}{SEP}{e}{SEP}{c_fe} {c_f}{SEP}{best}{extra}\n")
    return totals


def inverse_counts(sorted_inverse: Path, out: Path) -> None:
    """``f ||| e ||| c(e)`` per pair (unsorted by f)."""
    with out.open("w", encoding="utf-8") as o:
        for e, group in itertools.groupby(_lines(sorted_inverse), key=lambda x: x[0]):
            counts: dict[str, int] = {}
            for _, f, _ in group:
                counts[f] = counts.get(f, 0) + 1
            c_e = sum(counts.values())
            for f in counts:
                o.write(f"{f}{SEP}{e}{SEP}{c_e}\n")


def build_phrase_table(source: Iterable[Sequence[str]], target: Iterable[Sequence[str]],
                       alignments: Iterable[Sequence[tuple[int, int]]], max_length: int, text_path: Path,
                       fast_path: Path, tmp_dir: Path | None = None, sort_memory: str = "1G",
                       threads: int = 2, reordering_path: Path | None = None) -> dict:
    """Extract, count and score; write the Moses text table (gzip) and the fast form; returns statistics.

    reordering_path: where to write the Moses reordering table; given, the table gets the lexicalised reordering
    model (msd-bidirectional-fe) in its fast form too."""
    reordering = reordering_path is not None
    timings = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="phrases-", dir=tmp_dir) as tmp_name:
        tmp = Path(tmp_name)
        lexical, sentences, extracted = extract_corpus(source, target, alignments, max_length, tmp / "extract",
                                                       tmp / "extract.inv", reordering)
        timings["extract"] = time.perf_counter() - started
        for name in ("extract", "extract.inv"):
            sort_file(tmp / name, tmp / f"{name}.sorted", tmp, sort_memory, threads)
            (tmp / name).unlink()
        totals = direct_counts(tmp / "extract.sorted", tmp / "direct")
        inverse_counts(tmp / "extract.inv.sorted", tmp / "inverse")
        sort_file(tmp / "inverse", tmp / "inverse.sorted", tmp, sort_memory, threads)
        timings["count"] = time.perf_counter() - started - timings["extract"]
        pairs, sources = _score(tmp / "direct", tmp / "inverse.sorted", lexical, text_path, fast_path, max_length,
                                reordering_path, priors(totals))
    timings["score"] = time.perf_counter() - started - timings["extract"] - timings["count"]
    log.info("phrase table: %d pairs of %d source phrases from %d sentences in %.1f s", pairs, sources, sentences,
             time.perf_counter() - started)
    stats = {"sentences": sentences, "extracted_pairs": extracted, "phrase_pairs": pairs, "source_phrases": sources,
             "timings": {k: round(v, 3) for k, v in timings.items()}}
    if reordering:
        stats["orientations"] = dict(zip(("bwd_m", "bwd_s", "bwd_d", "fwd_m", "fwd_s", "fwd_d"), totals.tolist()))
    return stats


def _score(direct: Path, inverse: Path, lexical: LexicalTable, text_path: Path, fast_path: Path,
           max_length: int, reordering_path: Path | None = None,
           prior: np.ndarray | None = None) -> tuple[int, int]:
    columns = TM_COLUMNS + (REORDERING_COLUMNS if reordering_path is not None else 0)
    writer = FastFormWriter(max_length, columns)
    weigher = LexicalWeigher(lexical)
    pairs = sources = 0
    with contextlib.ExitStack() as files:
        tmp = files.enter_context(atomic_path(Path(text_path)))
        out = files.enter_context(gzip_writer(tmp, 3, text=True))
        reordering_out = None
        if reordering_path is not None:
            reordering_tmp = files.enter_context(atomic_path(Path(reordering_path)))
            reordering_out = files.enter_context(gzip_writer(reordering_tmp, 3, text=True))
        direct_lines = files.enter_context(direct.open(encoding="utf-8"))
        inverse_lines = files.enter_context(inverse.open(encoding="utf-8"))
        joined = itertools.zip_longest(direct_lines, inverse_lines, fillvalue="")
        for f, group in itertools.groupby(joined, key=lambda lines: lines[0].partition(SEP)[0]):
            f_words = f.split()
            targets, probabilities, text, reordering_text = [], [], [], []
            for direct_line, inverse_line in group:
                fields = direct_line.rstrip("\n").split(SEP) if direct_line else ("", "", "", "")
                e, counts, align = fields[1], fields[2], fields[3]  # then the orientation counts, if any
                f2, e2, c_e = inverse_line.rstrip("\n").split(SEP) if inverse_line else ("", "", "")
                if e2 != e or f2 != f or not direct_line:
                    raise RuntimeError(f"phrase scoring: the passes disagree at {f!r} ||| {e!r} vs {f2!r} ||| {e2!r}")
                c_fe_text, _, c_f_text = counts.partition(" ")
                c_fe, c_f = int(c_fe_text), int(c_f_text)
                lex_fe, lex_ef = weigher.weights(f_words, e.split(), align)
                values = (c_fe / int(c_e), lex_fe, c_fe / c_f, lex_ef)
                text.append(f"{f}{SEP}{e}{SEP}{'%.6g %.6g %.6g %.6g' % values}{SEP}{align}{SEP}{c_e} {c_f} {c_fe}\n")
                targets.append(e)
                probabilities.extend(values)
                if reordering_out is not None:
                    if len(fields) < 5:
                        raise RuntimeError(f"phrase scoring: no orientation counts for {f!r} ||| {e!r}")
                    oriented = orientation_probabilities(np.array(fields[4].split(), dtype=np.int64), prior)
                    probabilities.extend(oriented)
                    reordering_text.append(f"{f}{SEP}{e}{SEP}{' '.join('%.6g' % p for p in oriented)}\n")
            out.write("".join(text))
            if reordering_out is not None:
                reordering_out.write("".join(reordering_text))
            writer.add_probabilities(f, targets, probabilities)
            pairs += len(targets)
            sources += 1
    writer.save(fast_path)
    return pairs, sources
