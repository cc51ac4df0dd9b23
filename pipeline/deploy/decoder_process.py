"""A server's decoding in a worker process: its own pool of beam batches, stepped on its own core.

    decoder = ProcessDecoder(system_folder, threads=1)
    decoder.send([(key, prepared), ...])      # the sentences join the worker's pool at its next step
    message = decoder.receive()               # blocks: ("done", [(key, n-best), ...]) as sentences end,
                                              # ("error", [key, ...], exception) for a failed pool, None: it ended
    decoder.close()                           # the worker finishes its pool, then exits

On a CPU, one search stepped with two threads is far from twice as fast as with one (small matrix products, and the
search's own Python between them): 1.42x on this project's machine, against 1.57x for two searches in two
processes of one thread each (benchmarks/decode_processes.py; docs/benchmarks/serving.md), which also keep the search
off the server's interpreter. So the server decodes in N such processes, as Marian's server and
CTranslate2's inter_threads do, each with a pool of its own (pipeline/deploy/decoding_service.py shares the sentences
out). A worker loads the exported system without its PBMT (Translator(decode_only=True)): the sentences come to it
prepared, with their L, acceptors and terms, and go back as n-best lists; the parent finishes them. Between two
steps the worker takes every sentence waiting in its pipe into the pool (a GRU joins the running batch at once,
a Transformer catches up first: batching.step_pool), so each sentence follows the search it would follow alone.
"""
from __future__ import annotations

import multiprocessing
import threading
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pipeline.deploy.translator import Prepared
from pipeline.deploy.workers import ignore_stop_signals, start_worker

__all__ = ["ProcessDecoder"]

TRIM_EVERY_STEPS = 500  # glibc keeps freed memory of the varied step tensors; give it back this often


def _heap_trimmer():
    """A function that returns the freed heap memory to the system (glibc's malloc_trim), or a no-op elsewhere."""
    import ctypes
    import ctypes.util

    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    return lambda: trim(0)


def _picklable(error: Exception) -> Exception:
    import pickle

    try:
        pickle.dumps(error)
        return error
    except Exception:  # noqa: BLE001 - its text instead
        return RuntimeError("".join(traceback.format_exception_only(type(error), error)))


def _serve(connection: Connection, folder: str, threads: int) -> None:
    """The worker's loop: lists of (key, Prepared) in; ("done", ...) or ("error", ...) out; None in: finish, exit."""
    ignore_stop_signals()  # first: until now they were blocked (pipeline/deploy/workers.py)
    import torch

    from pipeline.decode.batching import step_pool
    from pipeline.deploy.system import load_system
    from pipeline.deploy.translator import Translator

    torch.set_num_threads(threads)
    translator = Translator(load_system(Path(folder)), device="cpu", decode_only=True)
    model = translator.decoding_model()
    connection.send(("ready",))
    pool: list[tuple[Any, list]] = []
    closing, steps, trim = False, 0, _heap_trimmer()
    while True:
        while not closing and connection.poll(0 if pool else None):
            try:
                message = connection.recv()
            except EOFError:
                message = None
            if message is None:
                closing = True
                break
            keys = [key for key, _ in message]
            try:
                pool.append((translator.beam_batch([item for _, item in message], model), keys))
            except Exception as e:  # noqa: BLE001 - fails these sentences alone
                connection.send(("error", keys, _picklable(e)))
        if not pool:
            if closing:
                return
            continue
        try:
            with torch.inference_mode():
                ended = step_pool(pool)
        except Exception as e:  # noqa: BLE001 - fails the pool's sentences, and the worker goes on
            keys = [key for _, batch_keys in pool for key in batch_keys if key is not None]  # (None: answered)
            connection.send(("error", keys, _picklable(e)))
            pool.clear()
            continue
        if ended:
            try:
                connection.send(("done", ended))
            except OSError:  # the server has gone: nothing to answer to
                return
        steps += 1
        if steps % TRIM_EVERY_STEPS == 0:
            trim()


class ProcessDecoder:
    """One decoding worker process (see the module docstring); `send` and `receive` may run in two threads."""

    def __init__(self, folder: Path, threads: int = 1) -> None:
        self.folder, self.threads = Path(folder), threads
        self._send_lock = threading.Lock()
        self._process: multiprocessing.process.BaseProcess | None = None
        self._connection: Connection | None = None
        self.start()

    def start(self) -> None:
        """Starts the worker (again, after it died) and waits until it has loaded the system."""
        process, connection = start_worker(_serve, (str(self.folder), self.threads), "lmbr-decode")
        self._process = process  # (a process that died while loading: its pid and exit code stay readable)
        if connection is None:
            raise RuntimeError(f"the decoding process could not load {self.folder} (exit code {process.exitcode})")
        self._connection = connection

    @property
    def exitcode(self) -> int | None:
        return self._process.exitcode if self._process is not None else None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def send(self, entries: list[tuple[int, Prepared]]) -> None:
        """Hands sentences to the worker's pool (raises OSError when the worker has died)."""
        with self._send_lock:
            self._connection.send(entries)

    def receive(self) -> tuple | None:
        """The worker's next message; None when it has ended (closed, or died: see `exitcode`)."""
        try:
            return self._connection.recv()
        except (EOFError, OSError):
            self._process.join(5)
            return None

    def join(self, timeout: float) -> None:
        if self._process is not None:
            self._process.join(timeout)

    def close(self, timeout: float = 30) -> None:
        """Asks the worker to finish its pool and exit; kills it after `timeout` seconds."""
        if self._process is None:
            return
        with self._send_lock:
            try:
                self._connection.send(None)
            except OSError:
                pass
        self._process.join(timeout)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
