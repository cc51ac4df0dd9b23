"""Building a phrase table from a word-aligned corpus with bounded memory, as Moses' extract + score do.

1. Extract every consistent phrase pair (pipeline.smt.extract) into two text files, ``f ||| e ||| a`` and the
   inverse ``e ||| f ||| a'``, and count the word translation table (pipeline.smt.lexical) on the way.
2. Sort both files with the system's ``sort`` (C byte order, bounded memory, temporary files on disk).
3. Direct pass over the sorted pairs grouped by f: c(f, e), c(f) and the most frequent alignment of (f, e).
   Inverse pass grouped by e: c(e); its output is sorted again so that both passes list the pairs (f, e) in
   the same order (``f ||| e ||| `` prefixes compare the same whatever follows, since words never hold ``|||``).
4. Join them line by line: phi(f|e) = c(f,e)/c(e), lex(f|e), phi(e|f) = c(f,e)/c(f), lex(e|f) (lexical weights of
   the most frequent alignment; the first one in sorted order on ties), written to the Moses text table (gzip,
   sorted like Moses' own) and to the fast form.

Memory holds the word translation table and one source phrase's pairs at a time, plus the fast form's arrays.
"""
from __future__ import annotations

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
from pipeline.smt.phrase_table import SEP, FastFormWriter

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
                   inverse: Path) -> tuple[LexicalTable, int, int]:
    """Write the extracted pairs both ways; returns the word translation table, sentences and pairs."""
    lexical = LexicalTable()
    invert = functools.lru_cache(maxsize=1 << 20)(_invert)
    sentences = pairs = 0
    with direct.open("w", encoding="utf-8") as fd, inverse.open("w", encoding="utf-8") as fi:
        for src, tgt, links in zip(source, target, alignments):
            lexical.add(src, tgt, links)
            for f, e, a in extract_pairs(src, tgt, links, max_length):
                fd.write(f"{f}{SEP}{e}{SEP}{a}\n")
                fi.write(f"{e}{SEP}{f}{SEP}{invert(a)}\n")
                pairs += 1
            sentences += 1
    return lexical, sentences, pairs


def direct_counts(sorted_direct: Path, out: Path) -> None:
    """``f ||| e ||| c(f,e) c(f) ||| alignment`` per pair, in the sorted order of the extract."""
    with out.open("w", encoding="utf-8") as o:
        for f, group in itertools.groupby(_lines(sorted_direct), key=lambda x: x[0]):
            by_target: dict[str, list] = {}
            for _, e, a in group:
                entry = by_target.setdefault(e, [0, {}])
                entry[0] += 1
                entry[1][a] = entry[1].get(a, 0) + 1
            c_f = sum(v[0] for v in by_target.values())
            for e, (c_fe, aligns) in by_target.items():
                best = max(aligns.items(), key=lambda kv: kv[1])[0]  # dicts keep the sorted order: first wins ties
                o.write(f"{f}{SEP}{e}{SEP}{c_fe} {c_f}{SEP}{best}\n")


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
                       threads: int = 2) -> dict:
    """Extract, count and score; write the Moses text table (gzip) and the fast form; returns statistics."""
    timings = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="phrases-", dir=tmp_dir) as tmp_name:
        tmp = Path(tmp_name)
        lexical, sentences, extracted = extract_corpus(source, target, alignments, max_length, tmp / "extract",
                                                       tmp / "extract.inv")
        timings["extract"] = time.perf_counter() - started
        for name in ("extract", "extract.inv"):
            sort_file(tmp / name, tmp / f"{name}.sorted", tmp, sort_memory, threads)
            (tmp / name).unlink()
        direct_counts(tmp / "extract.sorted", tmp / "direct")
        inverse_counts(tmp / "extract.inv.sorted", tmp / "inverse")
        sort_file(tmp / "inverse", tmp / "inverse.sorted", tmp, sort_memory, threads)
        timings["count"] = time.perf_counter() - started - timings["extract"]
        pairs, sources = _score(tmp / "direct", tmp / "inverse.sorted", lexical, text_path, fast_path, max_length)
    timings["score"] = time.perf_counter() - started - timings["extract"] - timings["count"]
    log.info("phrase table: %d pairs of %d source phrases from %d sentences in %.1f s", pairs, sources, sentences,
             time.perf_counter() - started)
    return {"sentences": sentences, "extracted_pairs": extracted, "phrase_pairs": pairs, "source_phrases": sources,
            "timings": {k: round(v, 3) for k, v in timings.items()}}


def _score(direct: Path, inverse: Path, lexical: LexicalTable, text_path: Path, fast_path: Path,
           max_length: int) -> tuple[int, int]:
    writer = FastFormWriter(max_length)
    weigher = LexicalWeigher(lexical)
    pairs = sources = 0
    with atomic_path(Path(text_path)) as tmp, gzip_writer(tmp, 3, text=True) as out, \
            direct.open(encoding="utf-8") as direct_lines, inverse.open(encoding="utf-8") as inverse_lines:
        joined = itertools.zip_longest(direct_lines, inverse_lines, fillvalue="")
        for f, group in itertools.groupby(joined, key=lambda lines: lines[0].partition(SEP)[0]):
            f_words = f.split()
            targets, probabilities, text = [], [], []
            for direct_line, inverse_line in group:
                _, e, counts, align = direct_line.rstrip("\n").split(SEP) if direct_line else ("", "", "", "")
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
            out.write("".join(text))
            writer.add_probabilities(f, targets, probabilities)
            pairs += len(targets)
            sources += 1
    writer.save(fast_path)
    return pairs, sources
