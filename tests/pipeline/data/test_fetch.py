"""The fetcher: a URL's place in the cache, the mirror, reuse, and the errors that say what to do."""
from __future__ import annotations

import pytest

from pipeline.data.fetch import DownloadError, Fetcher
from tests.pipeline.data.conftest import digest

URL = "https://data.example.org/corpora/v1/pair.tgz"


def test_the_cache_and_the_mirror_follow_the_url(tmp_path):
    fetcher = Fetcher(tmp_path, mirror="http://127.0.0.1:9/mirror/")
    assert fetcher.place(URL) == tmp_path / "downloads/data.example.org/corpora/v1/pair.tgz"
    assert fetcher.source(URL) == "http://127.0.0.1:9/mirror/data.example.org/corpora/v1/pair.tgz"
    assert Fetcher(tmp_path).source(URL) == URL
    assert fetcher.source("file:///tmp/pair.tgz") == "file:///tmp/pair.tgz"  # only http(s) goes to the mirror
    with pytest.raises(DownloadError, match="not a URL of a file"):
        fetcher.place("https://data.example.org/")


def test_a_file_is_fetched_once_verified_and_reused(mirror, tmp_path):
    mirror.put(URL, b"archive")
    fetcher = Fetcher(tmp_path / "cache", mirror=mirror.url)
    path = fetcher.fetch(URL, digest(b"archive", "md5"), "the pair corpus")
    assert path.read_bytes() == b"archive" and fetcher.fetch(URL, digest(b"archive"), "the pair corpus") == path
    assert mirror.requests == ["/data.example.org/corpora/v1/pair.tgz"]


def test_a_wrong_file_in_the_cache_is_an_error_not_a_silent_refetch(tmp_path):
    fetcher = Fetcher(tmp_path, offline=True)
    fetcher.place(URL).parent.mkdir(parents=True)
    fetcher.place(URL).write_bytes(b"something else")
    with pytest.raises(DownloadError, match=rf"the pair corpus: .*pair.tgz has sha256 {digest(b'something else')[7:]}, "
                                            rf"but {'0' * 64} is expected; the file is not used: remove it"):
        fetcher.fetch(URL, "sha256:" + "0" * 64, "the pair corpus")


def test_the_network_is_not_used_by_tests(tmp_path):
    with pytest.raises(DownloadError, match="tests may not use the network"):
        Fetcher(tmp_path, timeout=5).fetch("http://192.0.2.1/pair.tgz", "", "a corpus")
