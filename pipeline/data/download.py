"""Official archives named by URL in a task config (`[downloads.<split>]`, for what sacrebleu lacks: KFTT's test
set): fetched once into the download cache and verified (pipeline/data/fetch.py), one split extracted as gzip text."""
from __future__ import annotations

import html
import re
import tarfile
from pathlib import Path

from pipeline.config import DownloadConfig
from pipeline.data.fetch import DownloadError, Fetcher
from pipeline.io import write_lines

__all__ = ["DownloadError", "extract_split", "fetch_archive", "seg_texts"]
_SEG = re.compile(r"<seg[^>]*>(.*?)</seg>", re.IGNORECASE)


def fetch_archive(download: DownloadConfig, fetcher: Fetcher) -> Path:
    """The verified archive in the download cache, fetched first if it is not there."""
    return fetcher.fetch(download.url, download.checksum, download.official or download.url)


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
                lines = seg_texts(text)
            else:
                lines = text.split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
            write_lines(output, lines)


def seg_texts(text: str) -> list[str]:
    """The text of every <seg> of an SGML/XML test set (WMT's sgm, IWSLT's XML): entities unescaped, stripped."""
    return [html.unescape(seg).strip() for seg in _SEG.findall(text)]
