"""Fixtures of the data tests: a loopback HTTP mirror serving files made in the test, and no other network."""
from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import http.server
import io
import os
import socket
import tarfile
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

from pipeline.data.resolver import CHECKOUT

# mtdata builds its index of dataset ids once (about 20 s, no network) and keeps it in $MTDATA: the checkout's
# cache, so that test runs share it.
os.environ.setdefault("MTDATA", str(CHECKOUT / "cache" / "mtdata"))

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass
class Mirror:
    """A folder served over HTTP on loopback: a file at <root>/<host>/<path> is <url>/<host>/<path>."""

    root: Path
    url: str
    requests: list[str] = field(default_factory=list)

    def put(self, original_url: str, data: bytes) -> Path:
        """Serve `data` as the mirror's copy of `original_url`."""
        host_and_path = original_url.split("://", 1)[1]
        path = self.root / host_and_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path


def forbid_network(monkeypatch) -> None:
    """Connections anywhere but loopback fail."""
    connect = socket.socket.connect

    def guarded(sock, address):
        if isinstance(address, tuple) and address[0] not in LOOPBACK:
            raise OSError(f"tests may not use the network (connect to {address[0]})")
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@contextlib.contextmanager
def serve(root: Path) -> Iterator[Mirror]:
    """A loopback HTTP server (port chosen by the system, in a thread, stopped at the end) serving `root`."""
    root.mkdir(parents=True, exist_ok=True)
    served = Mirror(root, "")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):
            served.requests.append(self.path)
            super().do_GET()

        def log_message(self, *args):  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """No data test reaches the internet."""
    forbid_network(monkeypatch)


@pytest.fixture
def mirror(tmp_path):
    with serve(tmp_path / "mirror") as served:
        yield served


def tgz(members: dict[str, str]) -> bytes:
    """A gzipped tar archive of text members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in members.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def zipped(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return buffer.getvalue()


def gzipped(text: str) -> bytes:
    return gzip.compress(text.encode("utf-8"), mtime=0)


def lines(segments: list[str]) -> str:
    return "".join(s + "\n" for s in segments)


def digest(data: bytes, algorithm: str = "sha256") -> str:
    return f"{algorithm}:{hashlib.new(algorithm, data).hexdigest()}"
