"""The translation systems of Table 1 and the Luigi task that translates a split for each.

A translation task is a SplitTask whose artifact holds `translation.<target>` (detokenized text, one line per source
line of the split) and whose signature stats may hold `timings` (seconds per phase). A new system is one line in
:func:`translation_tasks`. Imports run one way: this module imports the decoding stages, never the reverse.
"""
from __future__ import annotations

from tasks.data import SplitTask
from tasks.decode import (DecodeFNMT, DecodeFNMTLattice, DecodeLNMT, DecodeLNMTLattice, DecodeLPNMT,
                          DecodeLPNMTLattice, DecodeLTNMT, DecodeLTNMTLattice, DecodePNMT, DecodePNMTLattice,
                          DecodeTNMT, DecodeTNMTLattice)
from tasks.mbr import DecodeLatticeMBR
from tasks.sample_mbr import DecodeLTNMTMixture, DecodeLTNMTSamples, DecodeSampleMBR, DecodeUnionMBR
from tasks.smt import DecodePBMT

PAPER_SYSTEMS = ("PBMT", "FNMT", "LNMT", "TNMT", "LTNMT")
#: Lattice rescoring (the paper's section 4.2, after Stahlberg et al. 2016) and lattice MBR (Tromble et al. 2008).
LATTICE_SYSTEMS = ("FNMT-lat", "LNMT-lat", "TNMT-lat", "LTNMT-lat", "MBR")
#: Beyond the paper: MBR over the Transformer's own epsilon samples (Eikema and Aziz 2020; Freitag et al. 2023), and
#: the lattice's evidence beside the samples'.
SAMPLE_SYSTEMS = ("TNMT-MBR", "LTNMT-smp", "LTNMT-mix", "MBR-union")
ALL_SYSTEMS = PAPER_SYSTEMS + LATTICE_SYSTEMS + SAMPLE_SYSTEMS
#: The rows of a pretrained `transformers` model (the task config's [pretrained] model, or reproduce-table
#: --pretrained-model), built beside ALL_SYSTEMS only when a model is named.
PRETRAINED_SYSTEMS = ("PNMT", "LPNMT", "PNMT-lat", "LPNMT-lat")
#: Every row a table may have, in the tables' order.
TABLE_SYSTEMS = ALL_SYSTEMS + PRETRAINED_SYSTEMS
#: The systems Table 2 decodes as research and accelerated variants.
VARIANT_SYSTEMS = ("FNMT", "LNMT", "TNMT", "LTNMT")
#: The pure NMT system whose models each NMT-containing system decodes with.
NMT_MODELS_OF = {**{s: "FNMT" for s in ("FNMT", "LNMT", "FNMT-lat", "LNMT-lat")},
                 **{s: "TNMT" for s in ("TNMT", "LTNMT", "TNMT-lat", "LTNMT-lat", *SAMPLE_SYSTEMS)},
                 **{s: "PNMT" for s in PRETRAINED_SYSTEMS}}
#: What each row of Table 1 is (the report's legend).
SYSTEM_NOTES = {
    "PBMT": "phrase-based decoder with a KenLM 5-gram, MERT-tuned; writes the lattices",
    "FNMT": "GRU attention NMT (the ensemble of one model per seed where the profile trains several)",
    "TNMT": "averaged Transformer",
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
    "TNMT-MBR": "MBR over TNMT's own epsilon samples ([mbr] samples, epsilon 0.02): the sample of highest expected "
                "utility (chrF or sentence BLEU, chosen on the tuning set) against all the samples (Eikema and Aziz "
                "2020; Freitag et al. 2023); no PBMT",
    "LTNMT-smp": "TNMT with LMBR whose n-gram posteriors are those of its own samples (the sample set as the "
                 "evidence space) instead of the PBMT lattice's; LTNMT's tuned p, r and gain form, its own tuned lambda, free search",
    "LTNMT-mix": "LTNMT-smp with the posteriors w x the lattice's + (1 - w) x the samples' (w chosen on the tuning "
                 "set; w = 1 is LTNMT's evidence, w = 0 LTNMT-smp's)",
    "MBR-union": "MBR selection as TNMT-MBR over the PBMT's n-best and TNMT's samples together, the samples as "
                 "pseudo-references",
    "PNMT": "the pretrained transformers model of [pretrained] model (MarianMT, M2M100/NLLB) alone, through the "
            "same batched beam search",
    "LPNMT": "PNMT with LMBR: the L of the PBMT lattice in the model's SentencePiece units added at every step "
             "(lambda from [lmbr] grid_pretrained_lambda, p, r, gain form and search tuned as LNMT's)",
    "PNMT-lat": "PNMT rescoring the PBMT lattice, as FNMT-lat (mu tuned on the tuning set)",
    "LPNMT-lat": "LPNMT rescoring the PBMT lattice, as LNMT-lat",
}
#: The baselines each system is compared with by paired bootstrap resampling.
# Every hybrid against PBMT and its own NMT system; every NMT-containing hybrid also against lattice MBR, which uses
# the lattice alone: "does the NMT add anything to the lattice?"; the NMT systems against PBMT.
BASELINES = {"FNMT": ("PBMT",), "TNMT": ("PBMT",), "LNMT": ("PBMT", "FNMT", "MBR"), "LTNMT": ("PBMT", "TNMT", "MBR"), "FNMT-lat": ("PBMT", "FNMT", "MBR"),
             "LNMT-lat": ("PBMT", "FNMT", "MBR"), "TNMT-lat": ("PBMT", "TNMT", "MBR"),
             "LTNMT-lat": ("PBMT", "TNMT", "MBR"), "MBR": ("PBMT",), "PNMT": ("PBMT",),
             "LPNMT": ("PBMT", "PNMT", "MBR"), "PNMT-lat": ("PBMT", "PNMT", "MBR"),
             "LPNMT-lat": ("PBMT", "PNMT", "MBR"),
             # does the lattice's evidence add to the NMT's own? each sample row against TNMT, LTNMT, lattice MBR
             # and NMT-MBR; the mixture and the union also against the samples alone
             "TNMT-MBR": ("PBMT", "TNMT", "LTNMT", "MBR"), "LTNMT-smp": ("TNMT", "LTNMT", "MBR", "TNMT-MBR"),
             "LTNMT-mix": ("TNMT", "LTNMT", "MBR", "TNMT-MBR", "LTNMT-smp"),
             "MBR-union": ("TNMT", "LTNMT", "MBR", "TNMT-MBR")}


def translation_tasks() -> dict[str, type[SplitTask]]:
    """The systems built in this version, by name."""
    return {"PBMT": DecodePBMT, "FNMT": DecodeFNMT, "LNMT": DecodeLNMT, "TNMT": DecodeTNMT, "LTNMT": DecodeLTNMT,
            "FNMT-lat": DecodeFNMTLattice, "LNMT-lat": DecodeLNMTLattice, "TNMT-lat": DecodeTNMTLattice,
            "LTNMT-lat": DecodeLTNMTLattice, "MBR": DecodeLatticeMBR, "PNMT": DecodePNMT, "LPNMT": DecodeLPNMT,
            "PNMT-lat": DecodePNMTLattice, "LPNMT-lat": DecodeLPNMTLattice, "TNMT-MBR": DecodeSampleMBR,
            "LTNMT-smp": DecodeLTNMTSamples, "LTNMT-mix": DecodeLTNMTMixture, "MBR-union": DecodeUnionMBR}


def translation_task(system: str) -> type[SplitTask]:
    tasks = translation_tasks()
    if system not in tasks:
        raise KeyError(f"system {system} is not built in this version (built: {', '.join(tasks) or 'none yet'})")
    return tasks[system]


def comparisons(systems: tuple[str, ...] | list[str]) -> dict[str, list[str]]:
    """{baseline: the systems compared with it}: every chosen hybrid against PBMT and against its NMT system, every
    NMT-containing hybrid against lattice MBR, and the NMT systems against PBMT (BASELINES)."""
    pairs: dict[str, list[str]] = {}
    for system in TABLE_SYSTEMS:
        if system in systems:
            for baseline in BASELINES.get(system, ()):
                if baseline in systems:
                    pairs.setdefault(baseline, []).append(system)
    return pairs
