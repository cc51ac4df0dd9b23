"""Fetch a file once into the download cache and verify its checksum: the data stage's one HTTP client.

A file's place in the cache follows its URL: `<cache>/downloads/<host>/<path>`. A mirror (the `mirror` argument,
from $MT_DOWNLOAD_MIRROR) replaces the scheme and host of every http(s) URL: `<mirror>/<host>/<path>`, so the
cache's `downloads/` folder served over HTTP is a mirror. A file already in its place (fetched before, or put
there by hand) is used once its checksum matches. A file with no stable bytes of its own (a GitHub archive of a
commit, which GitHub compresses anew) is fetched with `verified_by` naming what checks its content instead.
Offline, or when the fetch fails, the error names what was wanted, the URL, and the folder and file name to place
it in by hand. A file whose checksum is not known yet is fetched and kept, but not used: the error gives its
digest and where to record it.
"""
from __future__ import annotations

import hashlib
import logging
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pipeline.config import CHECKSUM_ALGORITHMS
from pipeline.errors import DataError
from pipeline.io import atomic_path, exclusive

log = logging.getLogger(__name__)
MIRROR_ENV = "MT_DOWNLOAD_MIRROR"
OFFLINE_ENV = "MT_OFFLINE"


class DownloadError(DataError):
    """A file could not be fetched (offline, refused, missing) or does not match its checksum."""


def file_digest(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def human_size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class Fetcher:
    """Fetches URLs into `cache_dir/downloads`, through `mirror` when set, never when `offline`."""

    cache_dir: Path
    mirror: str = ""
    offline: bool = False
    timeout: float = 60.0

    def place(self, url: str) -> Path:
        """Where the file of `url` lives in the cache."""
        parts = urllib.parse.urlsplit(url)
        relative = Path(parts.netloc or "localhost", *[p for p in parts.path.split("/") if p])
        if ".." in relative.parts or len(relative.parts) < 2:
            raise DownloadError(f"{url}: not a URL of a file")
        return self.cache_dir / "downloads" / relative

    def source(self, url: str) -> str:
        """The URL actually fetched: the mirror's copy of an http(s) URL when a mirror is set."""
        parts = urllib.parse.urlsplit(url)
        if not self.mirror or parts.scheme not in ("http", "https"):
            return url
        return f"{self.mirror.rstrip('/')}/{parts.netloc}{parts.path}"

    def fetch(self, url: str, checksum: str, what: str, *, record_in: str = "", verified_by: str = "") -> Path:
        """The verified file of `url` in the cache, fetched first if it is not there.

        `checksum` is "<algorithm>:<hex digest>", or "" when not known yet; `what` names the file in errors (the
        corpus and its id); `record_in` says where its checksum is written (a config file and key). With no
        checksum and `verified_by` set, the caller checks the content (`verified_by` says how, in the log)."""
        target = self.place(url)
        by_hand = f"place the file {target.name} by hand in {target.parent}"
        with exclusive(target):  # one fetch of a file at a time, across processes
            if not target.is_file():
                if self.offline:
                    raise DownloadError(f"{what}: offline (${OFFLINE_ENV} is set), so {url} was not fetched; {by_hand}")
                self._download(url, target, checksum, what, by_hand)
        if not checksum and verified_by:
            log.info("%s: %s has no checksum of its own; %s", what, target, verified_by)
            return target
        verify(target, checksum, what, record_in, note="the file is not used: remove it to fetch it again, or "
                                                      "place the right file there")
        return target

    def _download(self, url: str, target: Path, checksum: str, what: str, by_hand: str) -> None:
        source = self.source(url)
        log.info("fetching %s: %s -> %s", what, source, target)
        with atomic_path(target) as tmp:
            try:
                with urllib.request.urlopen(source, timeout=self.timeout) as response, tmp.open("wb") as out:
                    for block in iter(lambda: response.read(1 << 20), b""):
                        out.write(block)
            except (urllib.error.URLError, OSError, ValueError) as e:
                raise DownloadError(f"{what}: could not fetch {source}: {e}; {by_hand}") from e
            if checksum:
                verify(tmp, checksum, what, shown=target, note=f"the download from {source} was discarded")
        log.info("fetched %s: %s (%s)", what, target, human_size(target.stat().st_size))


def verify(path: Path, checksum: str, what: str, record_in: str = "", *, shown: Path | None = None,
           note: str = "") -> None:
    """Raise DownloadError unless `path` has `checksum`; with no checksum, the error gives its sha256 and
    where to write it."""
    shown = shown or path
    if not checksum:
        digest = file_digest(path, "sha256")
        where = f" in {record_in}" if record_in else ""
        raise DownloadError(f"{what}: no checksum is recorded{where}, so {shown} is not used unverified; its "
                            f"sha256 is {digest}: if it is the right file, write checksum = \"sha256:{digest}\"{where}"
                            " and rerun")
    algorithm, _, expected = checksum.partition(":")
    if algorithm not in CHECKSUM_ALGORITHMS or not expected:
        raise DownloadError(f"{what}: checksum {checksum!r} is not '<{'|'.join(CHECKSUM_ALGORITHMS)}>:<hex digest>'")
    actual = file_digest(path, algorithm)
    if actual != expected.lower():
        raise DownloadError(f"{what}: {shown} has {algorithm} {actual}, but {expected} is expected"
                            + (f"; {note}" if note else ""))
