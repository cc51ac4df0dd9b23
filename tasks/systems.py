"""The translation systems of Table 1 and the Luigi task that translates a split for each.

A translation task is a SplitTask whose artifact holds `translation.<target>` (detokenized text, one line per source
line of the split) and whose signature stats may hold `timings` (seconds per phase). A new system is one line in
:func:`translation_tasks`. Imports run one way: this module imports the decoding stages, never the reverse.
"""
from __future__ import annotations

from tasks.data import SplitTask
from tasks.decode import (DecodeFNMT, DecodeFNMTLattice, DecodeLNMT, DecodeLNMTLattice, DecodeLTNMT,
                          DecodeLTNMTLattice, DecodeTNMT, DecodeTNMTLattice)
from tasks.mbr import DecodeLatticeMBR
from tasks.smt import DecodePBMT

PAPER_SYSTEMS = ("PBMT", "FNMT", "LNMT", "TNMT", "LTNMT")
#: Lattice rescoring (the paper's section 4.2, after Stahlberg et al. 2016) and lattice MBR (Tromble et al. 2008).
LATTICE_SYSTEMS = ("FNMT-lat", "LNMT-lat", "TNMT-lat", "LTNMT-lat", "MBR")
ALL_SYSTEMS = PAPER_SYSTEMS + LATTICE_SYSTEMS
#: The systems Table 2 decodes as research and accelerated variants.
VARIANT_SYSTEMS = ("FNMT", "LNMT", "TNMT", "LTNMT")
#: The pure NMT system whose models each NMT-containing system decodes with.
NMT_MODELS_OF = {**{s: "FNMT" for s in ("FNMT", "LNMT", "FNMT-lat", "LNMT-lat")},
                 **{s: "TNMT" for s in ("TNMT", "LTNMT", "TNMT-lat", "LTNMT-lat")}}
#: What each row of Table 1 is (the report's legend).
SYSTEM_NOTES = {
    "PBMT": "phrase-based decoder with a KenLM 5-gram, MERT-tuned; writes the lattices",
    "FNMT": "ensemble of GRU attention models", "TNMT": "averaged Transformer",
    "LNMT": "FNMT with LMBR: the L of the PBMT lattice added at every step (Iglesias et al. 2018); with [lmbr] "
            "grid_search, the search is anchored where the tuning set chose it (each sentence also searched inside "
            "its PBMT lattice, the better hypothesis under the same objective kept)",
    "LTNMT": "TNMT with LMBR, as LNMT",
    "FNMT-lat": "FNMT rescoring the PBMT lattice (Stahlberg et al. 2016): the search kept in its strings, scored by "
                "the NMT plus mu times the lattice's own PBMT score (mu tuned on the tuning set)",
    "LNMT-lat": "LNMT rescoring the PBMT lattice: lambda log P_NMT + L + mu times the PBMT score, in its strings",
    "TNMT-lat": "TNMT rescoring the PBMT lattice, as FNMT-lat",
    "LTNMT-lat": "LTNMT rescoring the PBMT lattice, as LNMT-lat",
    "MBR": "lattice MBR: the PBMT lattice's string of highest expected linear gain under L, no NMT (Tromble et al. "
           "2008; theta's p and r tuned on the tuning set)",
}
#: The baselines each system is compared with by paired bootstrap resampling.
# Every hybrid against PBMT and its own NMT system; every NMT-containing hybrid also against lattice MBR, which uses
# the lattice alone: "does the NMT add anything to the lattice?"; the NMT systems against PBMT.
BASELINES = {"FNMT": ("PBMT",), "TNMT": ("PBMT",), "LNMT": ("PBMT", "FNMT", "MBR"), "LTNMT": ("PBMT", "TNMT", "MBR"), "FNMT-lat": ("PBMT", "FNMT", "MBR"),
             "LNMT-lat": ("PBMT", "FNMT", "MBR"), "TNMT-lat": ("PBMT", "TNMT", "MBR"),
             "LTNMT-lat": ("PBMT", "TNMT", "MBR"), "MBR": ("PBMT",)}


def translation_tasks() -> dict[str, type[SplitTask]]:
    """The systems built in this version, by name."""
    return {"PBMT": DecodePBMT, "FNMT": DecodeFNMT, "LNMT": DecodeLNMT, "TNMT": DecodeTNMT, "LTNMT": DecodeLTNMT,
            "FNMT-lat": DecodeFNMTLattice, "LNMT-lat": DecodeLNMTLattice, "TNMT-lat": DecodeTNMTLattice,
            "LTNMT-lat": DecodeLTNMTLattice, "MBR": DecodeLatticeMBR}


def translation_task(system: str) -> type[SplitTask]:
    tasks = translation_tasks()
    if system not in tasks:
        raise KeyError(f"system {system} is not built in this version (built: {', '.join(tasks) or 'none yet'})")
    return tasks[system]


def comparisons(systems: tuple[str, ...] | list[str]) -> dict[str, list[str]]:
    """{baseline: the systems compared with it}: every chosen hybrid against PBMT and against its NMT system, every
    NMT-containing hybrid against lattice MBR, and the NMT systems against PBMT (BASELINES)."""
    pairs: dict[str, list[str]] = {}
    for system in ALL_SYSTEMS:
        if system in systems:
            for baseline in BASELINES.get(system, ()):
                if baseline in systems:
                    pairs.setdefault(baseline, []).append(system)
    return pairs
