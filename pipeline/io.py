"""Files: strict line reading, atomic writes of files and whole artifact directories.

Every output is written under a temporary name in its final folder and renamed into place, so that a killed
process never leaves a file (or directory) that looks complete. Lines are split on "\\n" only: Python's text
mode would also split on "\\r", U+2028 and friends, and silently break the line alignment of parallel corpora.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import gzip
import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from pipeline.errors import DataError

TMP_MARK = ".tmp-"


def _open_binary(path: Path, mode: str):
    return gzip.open(path, mode) if path.suffix == ".gz" else path.open(mode)


def read_lines(path: Path) -> Iterator[str]:
    """Yield the lines of a (gzipped) UTF-8 file without their "\\n"; invalid UTF-8 raises DataError with the line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    with _open_binary(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(
                    f"{path}, line {number}: invalid UTF-8 (byte 0x{raw[e.start]:02x} at byte offset {e.start})"
                ) from None
            yield text[:-1] if text.endswith("\n") else text


def count_lines(path: Path) -> int:
    """Number of lines (a last line without "\\n" counts)."""
    n = 0
    last = b"\n"
    with _open_binary(Path(path), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; it is renamed to `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + TMP_MARK, dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    tmp_path.chmod(0o644)  # mkstemp makes 0600; outputs are ordinary readable files
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    except OSError as e:
        _raise_if_disk_full(e, path)
        raise
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _raise_if_disk_full(error: OSError, path: Path) -> None:
    """A full disk (or quota) becomes a DataError naming the output; nothing half-written is left behind."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        raise DataError(f"{path}: the disk is full ({error.strerror or error}) while writing it: nothing was "
                        "replaced (an older version, if any, is intact); free space and rerun") from error


@contextlib.contextmanager
def gzip_writer(path: Path, compresslevel: int = 6, text: bool = False) -> Iterator[IO]:
    """A gzip file (binary, or UTF-8 text) whose header carries no time and no file name: the same lines give the
    same bytes in every run."""
    with Path(path).open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                     compresslevel=compresslevel, mtime=0) as packed:
        if text:
            with io.TextIOWrapper(packed, encoding="utf-8") as out:
                yield out
        else:
            yield packed


def write_lines(path: Path, lines: Iterable[str]) -> int:
    """Write lines atomically (gzip, with no timestamp, if the name ends in .gz); returns the number of lines."""
    n = 0
    with atomic_path(Path(path)) as tmp:
        opener = gzip_writer(tmp) if Path(path).suffix == ".gz" else tmp.open("wb")
        with opener as f:
            for line in lines:
                if "\n" in line:
                    raise ValueError(f"{path}: line {n + 1} contains a newline")
                f.write(line.encode("utf-8") + b"\n")
                n += 1
    return n


def write_text(path: Path, text: str) -> None:
    with atomic_path(Path(path)) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


@contextlib.contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """Yield an empty temporary directory beside `path`, renamed to `path` when the block succeeds.

    On failure the temporary directory is removed; an existing `path` is replaced only on success.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=path.name + TMP_MARK, dir=path.parent))
    tmp.chmod(0o755)  # mkdtemp makes 0700
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except OSError as e:
        _raise_if_disk_full(e, path)
        raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `<path>.lock` (flock: released when the holder dies, so a killed builder never
    blocks the next one)."""
    lock = Path(f"{path}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def remove_stale_temporaries(folder: Path, name: str) -> list[Path]:
    """Remove leftovers of killed writers of `name` in `folder` (call only when no writer of `name` runs)."""
    removed = []
    for stale in Path(folder).glob(name + TMP_MARK + "*"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
        removed.append(stale)
    return removed
