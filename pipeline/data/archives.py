"""Members out of a tar or zip archive: only the ones asked for, each pattern matching exactly one member."""
from __future__ import annotations

import fnmatch
import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Sequence

from pipeline.errors import DataError


def extract_members(archive: Path, patterns: Sequence[str], dest: Path, *, keep_paths: bool = False) -> list[Path]:
    """Extract the member matching each pattern (a name or a glob) into `dest`; return their paths in pattern
    order. With keep_paths the member's path inside the archive is kept under `dest`, else each file is named
    `<index>-<base name>`. A pattern matching no member, or several, raises DataError naming the archive."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            names = [n for n in z.namelist() if not n.endswith("/")]
            chosen = _match(archive, names, patterns)
            return [_write(z.open(name), name, i, dest, keep_paths) for i, name in enumerate(chosen)]
    found: dict[str, list[tuple[str, Path]]] = {pattern: [] for pattern in patterns}
    try:
        with tarfile.open(archive, "r|*") as tar:  # one pass over the (compressed) stream
            for member in tar:
                hits = [p for p in patterns if member.isfile() and _matches(member.name, p)]
                if hits:
                    path = _write(tar.extractfile(member), member.name, patterns.index(hits[0]), dest, keep_paths)
                    for pattern in hits:
                        found[pattern].append((member.name, path))
    except tarfile.TarError as e:
        raise DataError(f"{archive}: neither a zip nor a readable tar archive ({e})") from e
    for pattern, hits in found.items():
        _check(archive, pattern, [name for name, _ in hits])
    return [found[pattern][0][1] for pattern in patterns]


def _matches(name: str, pattern: str) -> bool:
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def _check(archive: Path, pattern: str, found: list[str]) -> None:
    if len(found) != 1:
        what = "no member matches" if not found else f"{len(found)} members ({', '.join(found[:5])}) match"
        raise DataError(f"{archive}: {what} {pattern!r}; expected exactly one")


def _match(archive: Path, names: list[str], patterns: Sequence[str]) -> list[str]:
    chosen = []
    for pattern in patterns:
        found = [n for n in names if _matches(n, pattern)]
        _check(archive, pattern, found)
        chosen.append(found[0])
    return chosen


def _write(data, name: str, index: int, dest: Path, keep_paths: bool) -> Path:
    inner = PurePosixPath(name)
    if inner.is_absolute() or ".." in inner.parts:
        raise DataError(f"archive member {name!r} points outside its folder")
    path = dest.joinpath(*inner.parts) if keep_paths else dest / f"{index}-{inner.name}"
    path.parent.mkdir(parents=True, exist_ok=True)
    with data, path.open("wb") as out:
        shutil.copyfileobj(data, out, 1 << 20)
    return path
