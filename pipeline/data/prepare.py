"""Prepare one split of a translation task: select, tokenize, clean (training data only), write.

A training corpus is subsampled (seeded) and cleaned: empty, over-long and badly length-ratioed pairs are removed
and counted. A tuning or evaluation set is only cut to its first N lines when the profile says so, and never
filtered: an empty source line stays, so that line alignment with the reference is kept.
"""
from __future__ import annotations

import functools
import logging
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Sequence

from tqdm import tqdm

from pipeline.config import DataProfile, LanguageConfig
from pipeline.data.corpus import clean_pairs, read_parallel, subsample
from pipeline.io import write_lines

log = logging.getLogger(__name__)
ROLES = ("train", "tune", "eval")
CHUNK = 2000


@functools.lru_cache(maxsize=8)
def _tokenizer(name: str, lang: str, cache_dir: Path | None):
    from pipeline.text import get_tokenizer

    return get_tokenizer(name, lang, cache_dir)


def _tokenize_chunk(name: str, lang: str, cache_dir: Path | None, lines: Sequence[str]) -> list[list[str]]:
    tokenizer = _tokenizer(name, lang, cache_dir)
    return [tokenizer.tokenize(line) for line in lines]


def tokenize_lines(lines: Sequence[str], tokenizer: str, lang: str, *, workers: int = 1,
                   cache_dir: Path | None = None, desc: str = "tokenize") -> list[list[str]]:
    """Tokenize lines in `workers` processes (in order), with a progress bar."""
    chunks = [lines[i:i + CHUNK] for i in range(0, len(lines), CHUNK)]
    bar = tqdm(total=len(lines), desc=desc, unit="line", leave=False, disable=None)  # no bar when not a terminal
    result: list[list[str]] = []
    work = functools.partial(_tokenize_chunk, tokenizer, lang, cache_dir)
    if workers <= 1 or len(chunks) <= 1:
        mapped = map(work, chunks)
    else:
        pool = ProcessPoolExecutor(max_workers=workers)
        mapped = pool.map(work, chunks)
    try:
        for chunk in mapped:
            result.extend(chunk)
            bar.update(len(chunk))
    finally:
        bar.close()
        if workers > 1 and len(chunks) > 1:
            pool.shutdown()
    return result


def select(role: str, total: int, data: DataProfile, seed: int) -> list[int]:
    """Indices of the lines a profile uses: a seeded sample of training data, the first N of other sets."""
    if role not in ROLES:
        raise ValueError(f"unknown split role {role!r} (known: {', '.join(ROLES)})")
    if role == "train":
        return subsample(total, data.train_pairs, seed)
    limit = data.tune_sentences if role == "tune" else data.eval_sentences
    return list(range(min(total, limit) if limit else total))


def prepare_split(paths: dict[str, Path], languages: dict[str, LanguageConfig], role: str, data: DataProfile,
                  seed: int, out_dir: Path, *, workers: int = 1, cache_dir: Path | None = None) -> dict:
    """Write raw.<lang>.gz and tok.<lang>.gz for both languages of `paths` into out_dir; return the statistics."""
    (src, src_path), (tgt, tgt_path) = paths.items()
    source, target = read_parallel(src_path, tgt_path)
    stats: dict = {"file_lines": len(source)}
    chosen = select(role, len(source), data, seed)
    source = [source[i] for i in chosen]
    target = [target[i] for i in chosen]
    tokens = {
        lang: tokenize_lines(lines, languages[lang].tokenizer, lang, workers=workers, cache_dir=cache_dir,
                             desc=f"tokenize {role} {lang}")
        for lang, lines in ((src, source), (tgt, target))
    }
    keep = list(range(len(source)))
    if role == "train":
        keep, cleaning = clean_pairs(tokens[src], tokens[tgt], min_tokens=data.min_tokens,
                                     max_tokens=data.max_tokens, max_ratio=data.max_ratio)
        stats["cleaning"] = cleaning.to_dict()
        log.info("cleaning %s: kept %d of %d pairs", src_path, cleaning.kept_pairs, cleaning.input_pairs)
    for lang, raw in ((src, source), (tgt, target)):
        write_lines(out_dir / f"raw.{lang}.gz", (raw[i] for i in keep))
        write_lines(out_dir / f"tok.{lang}.gz", (" ".join(tokens[lang][i]) for i in keep))
        stats[f"tokens.{lang}"] = sum(len(tokens[lang][i]) for i in keep)
    stats["selected_lines"] = len(chosen)
    stats["lines"] = len(keep)
    return stats
