"""Official test sets through sacrebleu's own data sets (`[sacrebleu] test = "wmt17"` in a task config).

sacrebleu's metadata says where a test set's archive is (its URL and md5) and which files of it hold the source and
the reference of a language pair; sacrebleu's own reader turns them into plain text, the very text that
`sacrebleu -t wmt17 -l de-en` scores against. The archive is fetched by the Fetcher (the download cache, a mirror,
the offline rule, the md5 check) and unpacked into `<cache>/sacrebleu/<name>/raw`, sacrebleu's layout, so that
sacrebleu does no download of its own.
"""
from __future__ import annotations

import copy
import os
from pathlib import Path

from pipeline.data.archives import extract_members
from pipeline.data.fetch import Fetcher
from pipeline.errors import DataError
from pipeline.io import read_lines, write_lines


def fetch_test_set(name: str, source: str, target: str, outputs: dict[str, Path], fetcher: Fetcher) -> None:
    """Write sacrebleu test set `name` of `<source>-<target>` to outputs[source] (its source side) and
    outputs[target] (its first reference), one segment a line (gzip)."""
    from sacrebleu.dataset import DATASETS

    langpair = f"{source}-{target}"
    if name not in DATASETS or langpair not in DATASETS[name].langpairs:
        raise DataError(f"sacrebleu has no test set {name!r} for {langpair}")
    dataset = copy.copy(DATASETS[name])  # the registry's object stays as it is
    dataset._outdir = str(fetcher.cache_dir / "sacrebleu" / name.replace("/", "_"))
    dataset._rawdir = os.path.join(dataset._outdir, "raw")
    if len(dataset.data) != 1:
        raise DataError(f"sacrebleu test set {name} comes in {len(dataset.data)} files; only one archive is supported")
    md5 = (dataset.md5 or [""])[0]
    archive = fetcher.fetch(dataset.data[0], f"md5:{md5}" if md5 else "", f"sacrebleu test set {name} ({langpair})",
                            record_in=f"sacrebleu's metadata of {name}")
    extract_members(archive, dataset.langpairs[langpair], Path(dataset._rawdir), keep_paths=True)
    dataset.maybe_download = lambda: None  # fetched and verified above
    dataset.process_to_text(langpair)  # rewrites the text files (a half-written one from a killed run included)
    write_lines(outputs[source], read_lines(Path(dataset.get_source_file(langpair))))
    write_lines(outputs[target], read_lines(Path(dataset.get_reference_files(langpair)[0])))
