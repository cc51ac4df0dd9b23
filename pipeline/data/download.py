"""Download an official archive once into a cache, verify its checksum, extract one split as gzip text."""
from __future__ import annotations

import hashlib
import html
import logging
import re
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

from pipeline.config import DownloadConfig
from pipeline.errors import DataError
from pipeline.io import atomic_path, write_lines

log = logging.getLogger(__name__)
_SEG = re.compile(r"<seg[^>]*>(.*?)</seg>", re.IGNORECASE)


class DownloadError(DataError):
    """The official file could not be fetched (offline, refused, or a checksum mismatch)."""


def file_digest(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_archive(download: DownloadConfig, cache_dir: Path, timeout: float = 60.0) -> Path:
    """The verified archive in `cache_dir/downloads`, downloaded first if it is not there."""
    algorithm, _, expected = download.checksum.partition(":")
    target = cache_dir / "downloads" / download.url.rstrip("/").rsplit("/", 1)[-1]
    if target.is_file() and file_digest(target, algorithm) == expected:
        return target
    log.info("downloading %s to %s", download.url, target)
    with atomic_path(target) as tmp:
        try:
            with urllib.request.urlopen(download.url, timeout=timeout) as response, tmp.open("wb") as out:
                for block in iter(lambda: response.read(1 << 20), b""):
                    out.write(block)
        except (urllib.error.URLError, OSError) as e:
            raise DownloadError(f"could not download {download.url}: {e}") from e
        actual = file_digest(tmp, algorithm)
        if actual != expected:
            raise DownloadError(f"{download.url}: {algorithm} checksum {actual} does not match the expected {expected}")
    return target


def extract_split(archive: Path, download: DownloadConfig, outputs: dict[str, Path]) -> None:
    """Write each language's member of `archive` to outputs[lang] as one segment a line (gzip)."""
    with tarfile.open(archive) as tar:
        for lang, output in outputs.items():
            member = download.files[lang]
            try:
                data = tar.extractfile(member)
            except KeyError:
                raise DownloadError(f"{archive}: has no member {member!r}") from None
            if data is None:
                raise DownloadError(f"{archive}: member {member!r} is not a file")
            text = data.read().decode("utf-8")
            if download.format == "sgm":
                lines = [html.unescape(seg).strip() for seg in _SEG.findall(text)]
            else:
                lines = text.split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
            write_lines(output, lines)
