"""The translation systems of Table 1 and the Luigi task that translates a split for each.

A translation task is a SplitTask whose artifact holds `translation.<target>` (detokenized text, one line per source
line of the split) and whose signature stats may hold `timings` (seconds per phase). A new system is one line in
:func:`translation_tasks`. Imports run one way: this module imports the decoding stages, never the reverse.
"""
from __future__ import annotations

from tasks.data import SplitTask
from tasks.decode import DecodeFNMT, DecodeLNMT, DecodeLTNMT, DecodeTNMT
from tasks.smt import DecodePBMT

PAPER_SYSTEMS = ("PBMT", "FNMT", "LNMT", "TNMT", "LTNMT")


def translation_tasks() -> dict[str, type[SplitTask]]:
    """The systems built in this version, by name."""
    return {"PBMT": DecodePBMT, "FNMT": DecodeFNMT, "LNMT": DecodeLNMT, "TNMT": DecodeTNMT, "LTNMT": DecodeLTNMT}


def translation_task(system: str) -> type[SplitTask]:
    tasks = translation_tasks()
    if system not in tasks:
        raise KeyError(f"system {system} is not built in this version (built: {', '.join(tasks) or 'none yet'})")
    return tasks[system]
