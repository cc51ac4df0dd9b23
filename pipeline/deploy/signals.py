"""The server's worker processes leave Ctrl-C to the server: SIGINT reaches the terminal's whole process group, and
the server, which finishes every accepted request with its workers before it closes them through their pipes.
SIGTERM keeps its default, since multiprocessing stops daemon workers with it when their parent exits; under
systemd use KillMode=mixed, so that SIGTERM goes to the server alone."""
from __future__ import annotations

import signal

__all__ = ["ignore_interrupts"]


def ignore_interrupts() -> None:
    """In a worker process: SIGINT is ignored (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
