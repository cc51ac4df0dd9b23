"""The server's worker processes (preparer.py, decoder_process.py): how one starts, and which signals it leaves to
the server.

A worker is spawned (the server already runs threads), loads the exported system and says it is ready over its
pipe. It leaves Ctrl-C to the server: SIGINT reaches the terminal's whole process group, and the server finishes
every accepted request with its workers before it closes them through their pipes. SIGTERM keeps its default, since
multiprocessing stops daemon workers with it when their parent exits; under systemd use KillMode=mixed, so that
SIGTERM goes to the server alone."""
from __future__ import annotations

import multiprocessing
import signal
from multiprocessing.connection import Connection
from typing import Callable

__all__ = ["ignore_interrupts", "start_worker"]


def ignore_interrupts() -> None:
    """In a worker process: SIGINT is ignored (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_worker(target: Callable, args: tuple, name: str) -> tuple[multiprocessing.process.BaseProcess,
                                                                    Connection | None]:
    """Spawns target(connection, *args) as a daemon process and waits for its first message ("ready"). Returns the
    process and this end of its pipe; the pipe is None when the worker ended before it was ready (it could not load
    the system; the process has been joined, see its exitcode)."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=target, args=(theirs, *args), name=name, daemon=True)
    process.start()
    theirs.close()
    try:
        ours.recv()
    except EOFError:
        process.join(5)
        return process, None
    return process, ours
