"""Translator.prepare in a worker process: a server's PBMT search, posteriors and L run beside its decoding thread.

    preparer = ProcessPreparer(system_folder, batch_lines=64)
    prepared, spent = preparer.prepare_timed(lines, terms, first_line=1)   # as Translator.prepare_timed
    preparer.close()

The PBMT search, the lattices' posteriors and L are Python-heavy; in the server's own interpreter they hold its lock
against the decoding thread. A worker process (spawned: the server already runs threads) loads the same exported
system and prepares whole batches; the prepared sentences (numpy-backed L, acceptors and word lattices) come back
pickled. An error inside the worker comes back as that error, for the requests of that call alone; a worker that
dies (killed, out of memory) is an error for its call, and the next call starts a new one.
"""
from __future__ import annotations

import multiprocessing
import threading
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Sequence

from pipeline.deploy.terms import Terminology
from pipeline.deploy.translator import Prepared
from pipeline.deploy.workers import ignore_stop_signals, start_worker

__all__ = ["ProcessPreparer", "WorkerDied"]


class WorkerDied(RuntimeError):
    """The preparing process ended without answering (killed, or out of memory)."""


def _serve(connection: Connection, folder: str, batch_lines: int, threads: int) -> None:
    """The worker's loop: (lines, terms, first_line) in, ("ok", prepared, seconds) or ("error", exception) out."""
    ignore_stop_signals()  # first: until now they were blocked (pipeline/deploy/workers.py)
    import torch

    from pipeline.deploy.system import load_system
    from pipeline.deploy.translator import Translator

    torch.set_num_threads(threads)
    translator = Translator(load_system(Path(folder)), batch_lines=batch_lines, device="cpu")
    connection.send(("ready",))
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        lines, terms, first_line = message
        try:
            connection.send(("ok", *translator.prepare_timed(lines, terms, first_line)))
        except Exception as e:  # noqa: BLE001 - handed back to the caller, which fails those requests alone
            try:
                connection.send(("error", e))
            except Exception:  # an exception that cannot be pickled: its text
                connection.send(("error", RuntimeError("".join(traceback.format_exception_only(type(e), e)))))


class ProcessPreparer:
    """One worker process preparing batches for one caller thread at a time (see the module docstring)."""

    def __init__(self, folder: Path, batch_lines: int = 64, threads: int = 1) -> None:
        self.folder, self.batch_lines, self.threads = Path(folder), batch_lines, threads
        self._lock = threading.Lock()
        self._process: multiprocessing.process.BaseProcess | None = None
        self._connection: Connection | None = None
        self.restarts = True  # False once the server shuts down: a dead worker is then not started again
        self._start()

    def _start(self) -> None:
        self._process, self._connection = start_worker(_serve, (str(self.folder), self.batch_lines, self.threads),
                                                       "lmbr-prepare")
        if self._connection is None:
            raise WorkerDied(f"the preparing process could not load {self.folder} (exit code "
                             f"{self._process.exitcode})")

    def prepare_timed(self, lines: Sequence[str], terms: Sequence[Terminology | None] | None,
                      first_line: int) -> tuple[list[Prepared], dict[str, float]]:
        """Translator.prepare_timed(lines, terms, first_line) in the worker."""
        with self._lock:
            if self._process is None or not self._process.is_alive():
                if not self.restarts:
                    raise WorkerDied("the preparing process has stopped: the server is shutting down")
                self._start()
            try:
                self._connection.send((list(lines), None if terms is None else list(terms), first_line))
                answer = self._connection.recv()
            except (EOFError, OSError, BrokenPipeError):
                self._process.join(5)
                code = self._process.exitcode
                self._process = None
                raise WorkerDied(f"the preparing process ended while preparing lines {first_line}-"
                                 f"{first_line + len(lines) - 1} (exit code {code})") from None
        if answer[0] == "error":
            raise answer[1]
        return answer[1], answer[2]

    def close(self) -> None:
        """Stops the worker (it finishes the call in progress first)."""
        with self._lock:
            if self._process is not None and self._process.is_alive():
                try:
                    self._connection.send(None)
                except (OSError, BrokenPipeError):
                    pass
                self._process.join(10)
                if self._process.is_alive():
                    self._process.kill()
            self._process = None
