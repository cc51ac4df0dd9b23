"""The paper's finding, task by task, from Table 1 and the paired bootstrap: is the NMT above the PBMT, does LMBR
improve the NMT (LNMT - FNMT, LTNMT - TNMT), and does the NMT add anything to the lattice (the best NMT-containing
hybrid against lattice MBR, which reads the same lattice and uses no NMT)? And beyond the paper, where the sample
rows were built: does the lattice's evidence add to the NMT's own samples' (LMBR over the mixed posteriors against
LMBR over the samples' alone; MBR over the PBMT n-best and the samples against MBR over the samples alone; the
mixture against sampling MBR)?

Iglesias et al. (2018) report NMT above PBMT by 2.5-7 BLEU and LMBR adding 0.2-1.3 BLEU to it. A difference counts
as significant when the paired bootstrap's p-value (sacrebleu, 1000 resamples: pipeline/evaluation/significance.py)
is below 0.05; its sign says which way. The best hybrid is picked on the reported split itself, so its row alone
overstates the evidence a little (the best of six); significance.csv holds every hybrid's own test against MBR.

The paper's regime, task by task: its Transformer NMT is at or above the PBMT (by 6-11 BLEU) and LMBR still adds to
it (LTNMT above TNMT). LMBR lifting a weak NMT to its lattice's level is a different finding, so `regime_table` says
for each task whether the regime holds and, where it does not, which half fails.
"""
from __future__ import annotations

from typing import Any, Sequence

# The NMT-containing hybrids of Table 1: each decodes with an NMT system's models and the PBMT lattice.
NMT_HYBRIDS = ("LNMT", "LTNMT", "FNMT-lat", "LNMT-lat", "TNMT-lat", "LTNMT-lat")
LATTICE_OVER_SAMPLES = "the lattice beside the NMT's samples"
# (question, system, baseline) in the report's order; the best hybrid is found per task.
QUESTIONS = (("NMT vs PBMT", "FNMT", "PBMT"), ("NMT vs PBMT", "TNMT", "PBMT"),
             ("LMBR on the NMT", "LNMT", "FNMT"), ("LMBR on the NMT", "LTNMT", "TNMT"),
             # beyond the paper: does the lattice's evidence add to the NMT's own samples'?
             (LATTICE_OVER_SAMPLES, "LTNMT-mix", "LTNMT-smp"),
             (LATTICE_OVER_SAMPLES, "MBR-union", "TNMT-MBR"), (LATTICE_OVER_SAMPLES, "LTNMT-mix", "TNMT-MBR"))
BEST_HYBRID = "the NMT's gain over the lattice (best NMT hybrid vs lattice MBR)"
SIGNIFICANT = 0.05
HEADER = ["task", "question", "system", "baseline", "system BLEU", "baseline BLEU", "difference", "p-value",
          "verdict"]


def _bleu_p_values(significance: Sequence[dict[str, Any]]) -> dict[tuple[str, str, str], float]:
    """{(task, system, baseline): p-value} of CompareSystems' BLEU records."""
    return {(r["task"], r["system"], r["baseline"]): r["p_value"] for r in significance if r["metric"] == "BLEU"}


def _verdict(difference: float, p_value: float | None) -> str:
    if p_value is None:
        return "higher" if difference > 0 else "lower" if difference < 0 else "equal"
    if p_value >= SIGNIFICANT:
        return "not significant"
    return "significantly higher" if difference > 0 else "significantly lower"


def finding_table(scores: dict[tuple[str, str], float], significance: Sequence[dict[str, Any]],
                  tasks: Sequence[str]) -> tuple[list[str], list[list]]:
    """Rows of the comparisons whose two systems both have a BLEU score. `scores`: {(task, system): BLEU} of
    Table 1; `significance`: CompareSystems' records (task, system, baseline, metric, p_value); a pair that was not
    tested has no p-value."""
    p_values = _bleu_p_values(significance)
    rows = []
    for task in tasks:
        questions = list(QUESTIONS)
        hybrids = [s for s in NMT_HYBRIDS if (task, s) in scores]
        if hybrids:
            questions.append((BEST_HYBRID, max(hybrids, key=lambda s: scores[task, s]), "MBR"))
        for question, system, baseline in questions:
            if (task, system) not in scores or (task, baseline) not in scores:
                continue
            difference = round(scores[task, system] - scores[task, baseline], 2)
            p_value = p_values.get((task, system, baseline))
            rows.append([task, question, system, baseline, scores[task, system], scores[task, baseline], difference,
                         None if p_value is None else f"{p_value:.3f}", _verdict(difference, p_value)])
    return HEADER, rows


REGIME_HEADER = ["task", "TNMT", "PBMT", "TNMT - PBMT", "LTNMT", "LTNMT - TNMT", "p-value", "the paper's regime"]


def _regime_verdict(nmt_margin: float, lmbr_gain: float, p_value: float | None) -> str:
    failures = ["TNMT below PBMT"] if nmt_margin < 0 else []
    if lmbr_gain > 0 and p_value is None:
        failures.append("LTNMT against TNMT not tested")
    elif lmbr_gain <= 0 or p_value >= SIGNIFICANT:
        failures.append("LMBR adds nothing significant to TNMT")
    return "holds" if not failures else "does not hold: " + "; ".join(failures)


def regime_table(scores: dict[tuple[str, str], float], significance: Sequence[dict[str, Any]],
                 tasks: Sequence[str]) -> tuple[list[str], list[list]]:
    """One row per task with TNMT, PBMT and LTNMT scores: does the paper's regime hold there (TNMT at or above
    PBMT, and LTNMT above TNMT with paired-bootstrap p < 0.05)? Arguments as finding_table's."""
    p_values = _bleu_p_values(significance)
    rows = []
    for task in tasks:
        if not all((task, system) in scores for system in ("TNMT", "PBMT", "LTNMT")):
            continue
        nmt, pbmt, hybrid = scores[task, "TNMT"], scores[task, "PBMT"], scores[task, "LTNMT"]
        margin, gain = round(nmt - pbmt, 2), round(hybrid - nmt, 2)
        p_value = p_values.get((task, "LTNMT", "TNMT"))
        rows.append([task, nmt, pbmt, margin, hybrid, gain, None if p_value is None else f"{p_value:.3f}",
                     _regime_verdict(margin, gain, p_value)])
    return REGIME_HEADER, rows
