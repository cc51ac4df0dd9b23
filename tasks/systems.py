"""The translation systems of Table 1 and the Luigi task that translates a split for each.

A translation task is a SplitTask whose artifact holds `translation.<target>` (detokenized text, one line per source
line of the split) and whose signature stats may hold `timings` (seconds per phase). Later stages add their system
here with one line each.
"""
from __future__ import annotations

from typing import Any

import luigi

from pipeline.config import VariantProfile
from tasks.data import SplitTask

PAPER_SYSTEMS = ("PBMT", "FNMT", "LNMT", "TNMT", "LTNMT")


def translation_tasks() -> dict[str, type[SplitTask]]:
    """The systems built in this version, by name."""
    from tasks.decode import DecodeFNMT, DecodeLNMT, DecodeLTNMT, DecodeTNMT
    from tasks.smt import DecodePBMT

    return {"PBMT": DecodePBMT, "FNMT": DecodeFNMT, "LNMT": DecodeLNMT, "TNMT": DecodeTNMT, "LTNMT": DecodeLTNMT}


def translation_task(system: str) -> type[SplitTask]:
    tasks = translation_tasks()
    if system not in tasks:
        raise KeyError(f"system {system} is not built in this version (built: {', '.join(tasks) or 'none yet'})")
    return tasks[system]


class VariantTask(SplitTask):
    """A split's stage that a Table 2 variant (the profile's [variants.<name>]) may change; "" = the profile's."""

    variant = luigi.Parameter(default="", description="Table 2 variant: research, accelerated ('': the profile's)")

    def variant_config(self) -> VariantProfile | None:
        return self.profile_config.variant(self.variant) if self.variant else None

    def label(self) -> str:
        return f"{self.variant}-{self.split}" if self.variant else self.split

    def variant_params(self, **values: Any) -> dict[str, Any]:
        """The parameters a variant changes (nothing at all without one, so that artifact ids stay the same)."""
        return {"variant": self.variant, **values} if self.variant else {}
