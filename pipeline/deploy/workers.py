"""The server's worker processes (preparer.py, decoder_process.py): how one starts, which signals it leaves to the
server, and how it never outlives it.

A worker is spawned (the server already runs threads), loads the exported system and says it is ready over its
pipe. The server alone decides when its workers stop, however the stop is asked for:

- SIGINT and SIGTERM are ignored in a worker. Ctrl-C reaches the terminal's whole process group, and so does a
  SIGTERM to the group (systemd's default KillMode=control-group, supervisors that stop a group); the server,
  which gets the signal too, stops taking requests, finishes or fails what it accepted within its shutdown time,
  and closes its workers through their pipes. A worker that died of the signal would otherwise be an error, and
  the server would start it again.
- They are kept from a worker from before it is spawned: the spawning thread blocks them around the spawn, so the
  new process starts with them blocked (a signal mask survives fork and exec), and a signal that comes while it
  starts up (the interpreter, the imports, torch) stays pending until the worker ignores them, which discards it.
  Blocked rather than ignored in the server: a restart spawns from one of its threads, where no handler can be
  changed, and a signal to the server still reaches it through its main thread.
- A worker exits when it is told to (None on its pipe) or when its pipe closes (the server has gone, even by
  SIGKILL). At the interpreter's exit the server closes every worker's pipe and waits for it (then kills it),
  before multiprocessing's own exit handler, which would SIGTERM (ignored) and wait forever."""
from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import signal
import weakref
from multiprocessing.connection import Connection
from typing import Callable, Iterator

__all__ = ["ignore_stop_signals", "start_worker", "stop_signals_blocked", "stop_worker"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def ignore_stop_signals() -> None:
    """In a worker process, first thing: SIGINT and SIGTERM are ignored (one pending since its start is discarded),
    then no longer blocked (see the module docstring)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


@contextlib.contextmanager
def stop_signals_blocked() -> Iterator[None]:
    """SIGINT and SIGTERM blocked in the calling thread (any thread), then its mask as it was: a process spawned
    meanwhile starts with them blocked."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def stop_worker(process: multiprocessing.process.BaseProcess, connection: Connection | None,
                timeout: float = 10.0) -> None:
    """Asks a worker to finish and exit (None on its pipe, then the pipe closed); kills it after `timeout` s."""
    if connection is not None:
        try:
            connection.send(None)
        except (OSError, ValueError):
            pass
        connection.close()
    if process.pid is None:
        return
    process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join(5)


def _stop_at_exit(process_ref: weakref.ref, connection: Connection) -> None:
    process = process_ref()
    if process is not None and process.is_alive():
        stop_worker(process, None if connection.closed else connection, timeout=5)


def start_worker(target: Callable, args: tuple, name: str) -> tuple[multiprocessing.process.BaseProcess,
                                                                    Connection | None]:
    """Spawns target(connection, *args) as a daemon process, SIGINT and SIGTERM blocked until it ignores them
    (target calls ignore_stop_signals first), and waits for its first message ("ready"). Returns the process and
    this end of its pipe; the pipe is None when the worker ended before it was ready (it could not load the system;
    the process has been joined, see its exitcode)."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=target, args=(theirs, *args), name=name, daemon=True)
    with stop_signals_blocked():
        process.start()
    theirs.close()
    try:
        ours.recv()
    except EOFError:
        process.join(5)
        return process, None
    atexit.register(_stop_at_exit, weakref.ref(process), ours)
    return process, ours
