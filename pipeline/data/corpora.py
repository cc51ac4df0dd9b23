"""Training corpora by name: mtdata ids or file URLs fetched into the download cache, verified, concatenated with
provenance.

A task config lists its training corpora as mtdata dataset ids (`[[corpora]]`: id, name, checksum), or, for what
mtdata does not index (WMT16's back-translated news), as the URLs of two line-aligned gzip text files (`files` and
`checksums`, one per language), read line by line and cleaned the same way. mtdata's index
gives each id's URL, file format, the members to read inside an archive and the language order; the Fetcher
fetches the file (through a mirror when one is set) and checks it against the config's checksum; mtdata's own
readers (plain-text pairs, TSV, TMX) read the segment pairs, which are cleaned as mtdata cleans a training part
(stripped; tabs and line breaks inside a segment become spaces; a pair with an empty side is dropped). The corpora
are concatenated in config order into a data folder inside the cache, written atomically and then reused:

    <cache>/corpora/<key>/<pair>/train.<lang>.gz       one segment a line, gzip without time or file name
    <cache>/corpora/<key>/<pair>/train.sources.tsv     the line range of each corpus (SOURCES_HEADER)

<key> is a hash of the pair, the ids, their checksums and mtdata's version. mtdata builds its index on first use
(about 20 s, 140 MB, no network) in $MTDATA, by default `<cache>/mtdata`.
"""
from __future__ import annotations

import itertools
import logging
import os
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

from pipeline.config import CorpusConfig
from pipeline.data.archives import extract_members
from pipeline.data.fetch import DownloadError, Fetcher
from pipeline.errors import DataError
from pipeline.io import atomic_dir, exclusive, gzip_writer, read_lines, write_text
from pipeline.signature import param_hash

if TYPE_CHECKING:
    from mtdata.entry import Entry

log = logging.getLogger(__name__)
SOURCES_HEADER = ("first_line", "last_line", "n_lines", "block", "mtdata_id", "url", "checksum", "paths", "dropped")
UNSUPPORTED_FORMATS = ("opus_xces", "hfds")


def mtdata_entry(corpus_id: str, cache_dir: Path) -> "Entry":
    """The entry of `corpus_id` in mtdata's index (DataError when the id is malformed or unknown)."""
    os.environ.setdefault("MTDATA", str(Path(cache_dir).resolve() / "mtdata"))  # read by mtdata when imported
    Path(os.environ["MTDATA"]).mkdir(parents=True, exist_ok=True)  # mtdata creates only its last folder
    from mtdata.entry import DatasetId
    from mtdata.index import INDEX

    try:
        did = DatasetId.parse(corpus_id)
    except Exception as e:  # mtdata raises Exception and AssertionError
        raise DataError(f"{corpus_id!r} is not an mtdata id (<group>-<name>-<version>-<lang1>-<lang2>): {e}") from e
    entry = INDEX.entries.get(did)
    if entry is None or str(did) != corpus_id:
        known = f" (did you mean {did}?)" if entry is not None else ""
        raise DataError(f"{corpus_id}: not in the index of mtdata {version('mtdata')}{known}; "
                        f"`mtdata list -id -l {did.lang_str}` lists the ids of the pair")
    return entry


def corpus_folder(cache_dir: Path, pair: str, corpora: Sequence[CorpusConfig]) -> Path:
    """The data folder that holds `<pair>/train.<lang>.gz` concatenated from `corpora`."""
    key = param_hash({"pair": pair, "corpora": [c.key() for c in corpora], "mtdata": version("mtdata")})
    return Path(cache_dir) / "corpora" / key


def build_training_corpus(pair: str, langs: tuple[str, str], corpora: Sequence[CorpusConfig], fetcher: Fetcher,
                          *, record_in: str = "") -> dict[str, Path]:
    """{lang: train.<lang>.gz} of the concatenated corpora (source language first), built if not there yet.

    Every corpus is fetched and verified before anything is read; the errors of all corpora come together (each
    naming the corpus, its mtdata id, and the folder to place its file in by hand). `record_in` names the config
    file, for the messages."""
    if not corpora:
        raise DataError(f"{record_in or 'the task config'} lists no training corpora ([[corpora]] with an mtdata id)")
    folder = corpus_folder(fetcher.cache_dir, pair, corpora)
    outputs = {lang: folder / pair / f"train.{lang}.gz" for lang in langs}
    with exclusive(folder):
        if not (folder / pair / "train.sources.tsv").is_file():
            fetched = _fetch_all(corpora, fetcher, record_in)
            with atomic_dir(folder) as tmp:
                _concatenate(fetched, langs, tmp / pair)
    return outputs


def _fetch_all(corpora: Sequence[CorpusConfig], fetcher: Fetcher, record_in: str) -> list[tuple]:
    """(corpus, its mtdata entry or None, the fetched file or {language: file}) of every corpus."""
    fetched, errors = [], []
    for i, corpus in enumerate(corpora):
        what = f"training corpus {corpus.name} (mtdata id {corpus.id})" if corpus.id else f"training corpus {corpus.name}"
        try:
            if not corpus.id:
                files = {}
                for lang, url in corpus.files.items():
                    where = f"{record_in} (corpora[{i}].checksums.{lang})" if record_in else ""
                    files[lang] = fetcher.fetch(url, corpus.checksums.get(lang, ""), f"{what}, {lang} file",
                                                record_in=where)
                fetched.append((corpus, None, files))
                continue
            entry = mtdata_entry(corpus.id, fetcher.cache_dir)
            if isinstance(entry.url, (list, tuple)) or entry.in_ext in UNSUPPORTED_FORMATS:
                raise DataError(f"{what}: its mtdata entry ({entry.in_ext or entry.ext}, {entry.url}) is not a single "
                                "archive or file, which is all this pipeline reads")
            where = f"{record_in} ([[corpora]] id = \"{corpus.id}\")" if record_in else ""
            fetched.append((corpus, entry, fetcher.fetch(entry.url, corpus.checksum, what, record_in=where)))
        except DownloadError as e:
            errors.append(str(e))
    if errors:
        raise DownloadError("\n".join(errors))
    return fetched


def _concatenate(fetched: list[tuple], langs: tuple[str, str], out: Path) -> None:
    out.mkdir(parents=True)
    rows, line = [], 0
    with gzip_writer(out / f"train.{langs[0]}.gz") as first, gzip_writer(out / f"train.{langs[1]}.gz") as second:
        for corpus, entry, path in fetched:
            n = dropped = 0
            with tempfile.TemporaryDirectory(dir=out) as work:
                pairs = read_pairs(entry, path, langs, Path(work)) if entry else read_file_pairs(path, langs)
                for a, b in pairs:
                    a, b = _clean(a), _clean(b)
                    if not a or not b:
                        dropped += 1
                        continue
                    first.write(a.encode("utf-8") + b"\n")
                    second.write(b.encode("utf-8") + b"\n")
                    n += 1
            if n == 0:
                raise DataError(f"training corpus {corpus.name} ({corpus.id or 'files'}): {path} holds no segment pairs")
            log.info("%s (%s): %d pairs, lines %d-%d; %d with an empty side dropped",
                     corpus.name, corpus.id or "files", n, line + 1, line + n, dropped)
            if entry:
                rows.append((line + 1, line + n, n, corpus.name, corpus.id, entry.url, corpus.checksum,
                             ";".join(entry.in_paths or []), dropped))
            else:
                rows.append((line + 1, line + n, n, corpus.name, "-", ";".join(corpus.files[lang] for lang in langs),
                             ";".join(corpus.checksums.get(lang, "") for lang in langs), "-", dropped))
            line += n
    write_text(out / "train.sources.tsv", "".join("\t".join(map(str, row)) + "\n" for row in [SOURCES_HEADER, *rows]))


def _clean(segment: str) -> str:
    return segment.strip().replace("\t", " ").replace("\r", " ").replace("\n", " ")


def read_file_pairs(files: dict[str, Path], langs: tuple[str, str]) -> Iterator[tuple[str, str]]:
    """The segment pairs of two line-aligned gzip text files ({language: file}), in the order of `langs`."""
    first, second = (read_lines(files[lang]) for lang in langs)
    for n, pair in enumerate(itertools.zip_longest(first, second), 1):
        if None in pair:
            short = files[langs[pair.index(None)]]
            raise DataError(f"{short}: ends at line {n - 1}, before the {langs[pair.index(None) - 1]} side's "
                            f"{files[langs[pair.index(None) - 1]]} (the two files must have the same lines)")
        yield pair


def read_pairs(entry: "Entry", path: Path, langs: tuple[str, str], work: Path) -> Iterator[tuple[str, str]]:
    """The segment pairs of the fetched file of `entry`, in the order of `langs`, read by mtdata's parsers."""
    from mtdata.iso.bcp47 import BCP47Tag, bcp47
    from mtdata.parser import Parser

    compatible, swap = BCP47Tag.check_compat_swap((bcp47(langs[0]), bcp47(langs[1])), entry.did.langs)
    if not compatible:
        raise DataError(f"{entry.did}: a corpus of {entry.did.lang_str}, not of {'-'.join(langs)}")
    paths = extract_members(path, entry.in_paths, work) if entry.is_archive else [path]
    try:
        for record in Parser(paths, ext=entry.in_ext or entry.ext, ent=entry).read_segs(show_pbar=False):
            if len(record) >= 2:
                yield (record[1], record[0]) if swap else (record[0], record[1])
    except DataError:
        raise
    except Exception as e:  # mtdata's readers raise Exception and AssertionError
        raise DataError(f"{entry.did}: {path} could not be read: {e}") from e
