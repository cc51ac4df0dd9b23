"""A profile's data as a small folder inside the repository: exactly the lines the profile reads, nothing more.

A profile that reads few lines (tiny: 4000 seeded training pairs, the first 200 tuning and the first 150 evaluation
lines of each task) needs no data folder beside the checkout: `data/<profile>/` holds those lines in the data
folder's layout (`<pair>/<split>.<lang>.gz`), written by

    python -m pipeline.data.bundle --profile tiny --data-dir FULL_DATA_FOLDER --into data/tiny

The bundle is built with the same selection the pipeline applies (pipeline/data/prepare.select): the training
pairs are the profile's seeded sample, kept in file order, and the other sets are cut to their first N lines. So
the pipeline, reading the bundle, selects every line again in the same order and tokenizes the same text: its
artifacts and results equal those of a run on the full folder (the stages' ids do not depend on where the data
came from). The bundle's `SHA256SUMS` lists every file, checked before a split is read (`verify_bundle`), and
`<pair>/train.sources.tsv` gives the origin (block, repository, commit, paths) of every training line.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
from pathlib import Path
from typing import Iterable, Sequence

from pipeline.config import CONFIG_DIR, Profile, TaskConfig, available, load_profile, load_task
from pipeline.data.corpus import read_parallel
from pipeline.data.prepare import select
from pipeline.errors import DataError
from pipeline.io import atomic_path, read_lines, write_lines

REPO = CONFIG_DIR.parent
BUNDLE_DIR = REPO / "data"
CHECKSUMS = "SHA256SUMS"
SOURCES_HEADER = ["first_line", "last_line", "n_lines", "block", "repository", "commit", "paths"]


def bundle_dir(profile: str, root: Path = BUNDLE_DIR) -> Path | None:
    """The profile's bundled data folder, if the repository has one."""
    folder = root / profile
    return folder if (folder / CHECKSUMS).is_file() else None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_checksums(folder: Path) -> dict[str, str]:
    """{relative path: sha256} of the bundle's SHA256SUMS (`sha256sum` format)."""
    entries = {}
    for number, line in enumerate((folder / CHECKSUMS).read_text(encoding="utf-8").splitlines(), 1):
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name:
            raise DataError(f"{folder / CHECKSUMS}, line {number}: expected '<sha256>  <path>', got {line!r}")
        entries[name] = digest
    return entries


def verify_bundle(folder: Path, names: Iterable[str] | None = None) -> None:
    """Check the bundle's files (or `names` of them, relative paths) against SHA256SUMS; DataError names the file."""
    sums = read_checksums(folder)
    for name in names if names is not None else sums:
        if name not in sums:
            raise DataError(f"{folder / name}: not listed in {folder / CHECKSUMS}")
        path = folder / name
        if not path.is_file():
            raise DataError(f"{path}: listed in {folder / CHECKSUMS} but missing")
        if _sha256(path) != sums[name]:
            raise DataError(f"{path}: sha256 {_sha256(path)} differs from {sums[name]} in {folder / CHECKSUMS} "
                            f"(the bundled data was changed; restore it with git checkout)")


def split_roles(task: TaskConfig) -> dict[str, str]:
    """{split: role} of the splits a profile run reads: training, tuning and the default evaluation set."""
    return {task.splits.train: "train", task.splits.tune: "tune", task.splits.devtest[0]: "eval"}


def remap_sources(rows: Sequence[dict[str, str]], chosen: Sequence[int]) -> list[list[str]]:
    """The rows of a train.sources.tsv (1-based, inclusive line ranges of blocks) for the chosen lines (0-based,
    sorted) written one after another: each block's range within the new file; blocks with no line are dropped."""
    out, position, i = [], 0, 0
    for row in rows:
        first, last = int(row["first_line"]) - 1, int(row["last_line"]) - 1
        count = 0
        while i < len(chosen) and chosen[i] <= last:
            if chosen[i] >= first:
                count += 1
            i += 1
        if count:
            out.append([str(position + 1), str(position + count), str(count)]
                       + [row[k] for k in SOURCES_HEADER[3:]])
            position += count
    return out


def bundle_profile(profile: Profile, tasks: Sequence[TaskConfig], data_dir: Path, into: Path) -> list[Path]:
    """Write the lines `profile` reads of every task into `into` (see the module docstring); the files written."""
    written: dict[Path, tuple[str, str]] = {}  # path -> (task, split): two tasks of a pair must select alike
    for task in tasks:
        data = task.data_for(profile)
        for split, role in split_roles(task).items():
            langs = (task.source, task.target)
            paths = {lang: data_dir / task.pair / f"{split}.{lang}.gz" for lang in langs}
            source, target = read_parallel(paths[langs[0]], paths[langs[1]])
            chosen = select(role, len(source), data, profile.seed)
            for lang, lines in zip(langs, (source, target)):
                path = into / task.pair / f"{split}.{lang}.gz"
                text = [lines[i] for i in chosen]
                if path in written and path.is_file():
                    if list(read_lines(path)) != text:
                        raise DataError(f"{path}: {task.name} selects other lines than {written[path][0]} "
                                        f"({split}); one bundle file cannot serve both")
                    continue
                write_lines(path, text)
                written[path] = (task.name, split)
            sources = data_dir / task.pair / f"{split}.sources.tsv"
            if role == "train" and sources.is_file():
                with sources.open(encoding="utf-8", newline="") as f:
                    rows = list(csv.DictReader(f, delimiter="\t"))
                with atomic_path(into / task.pair / sources.name) as tmp:
                    tmp.write_text("\t".join(SOURCES_HEADER) + "\n"
                                   + "".join("\t".join(r) + "\n" for r in remap_sources(rows, chosen)),
                                   encoding="utf-8")
                written[into / task.pair / sources.name] = (task.name, split)
    files = sorted(p for p in into.rglob("*") if p.is_file() and p.name != CHECKSUMS
                   and p.suffix in (".gz", ".tsv"))
    with atomic_path(into / CHECKSUMS) as tmp:
        tmp.write_text("".join(f"{_sha256(p)}  {p.relative_to(into).as_posix()}\n" for p in files), encoding="utf-8")
    return files


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write a profile's data (the lines it reads) into a folder.")
    parser.add_argument("--profile", default="tiny")
    parser.add_argument("--tasks", default="all", help="comma-separated task names, or all")
    parser.add_argument("--data-dir", type=Path, required=True, help="the full data folder <pair>/<split>.<lang>.gz")
    parser.add_argument("--into", type=Path, help="default: data/<profile> in the repository")
    args = parser.parse_args(argv)
    names = available("tasks") if args.tasks == "all" else args.tasks.split(",")
    into = args.into or BUNDLE_DIR / args.profile
    files = bundle_profile(load_profile(args.profile), [load_task(n) for n in names], args.data_dir, into)
    print(f"{len(files)} files in {into}; checksums in {into / CHECKSUMS}")


if __name__ == "__main__":
    main()
