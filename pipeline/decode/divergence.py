"""Where two decodings of the same sentences part: a record, never an abort.

Batched and unbatched search, sorted and unsorted batches, streaming and plain batching follow the same search
(beam_search.py): nothing in a step depends on the other sentences of the batch. Their float32 arithmetic does,
though: an [R, V] matrix product rounds differently from R products of [1, V], a near-tie between two candidates
can go the other way, and the two searches follow different paths from there. Measurements (Figures 2-3,
streaming, benchmarks/batch_invariance.py) therefore record which sentences differ, with both scores and lengths,
instead of failing a run over rounding.

    compare_outputs(reference, other)   reference, other: N n-best lists (best first) of Hypothesis
        -> {"sentences": N, "identical": k, "differing": [{"sentence": i, "reference_score": ..., ...}, ...],
            "max_score_gap": largest |reference_score - other_score| among the differing sentences}
"""
from __future__ import annotations

from typing import Any, Sequence

from pipeline.decode.finalize import Hypothesis

__all__ = ["compare_outputs", "merge_comparisons", "summary_line"]


def _best(hyps: Sequence[Hypothesis]) -> Hypothesis | None:
    return hyps[0] if hyps else None


def _score(h: Hypothesis | None) -> float | None:
    return None if h is None else round(float(h.score), 6)


def compare_outputs(reference: Sequence[Sequence[Hypothesis]],
                    other: Sequence[Sequence[Hypothesis]]) -> dict[str, Any]:
    """The best hypotheses of `other` against those of `reference`, sentence by sentence (same input order)."""
    if len(reference) != len(other):
        raise ValueError(f"{len(reference)} reference sentences but {len(other)} to compare")
    differing = []
    for i, (ref_hyps, hyps) in enumerate(zip(reference, other)):
        a, b = _best(ref_hyps), _best(hyps)
        if (a.tokens if a else None) == (b.tokens if b else None):
            continue
        differing.append({"sentence": i, "reference_score": _score(a), "other_score": _score(b),
                          "reference_length": len(a.tokens) if a else None,
                          "other_length": len(b.tokens) if b else None})
    gaps = [abs(d["reference_score"] - d["other_score"]) for d in differing
            if d["reference_score"] is not None and d["other_score"] is not None]
    return {"sentences": len(reference), "identical": len(reference) - len(differing), "differing": differing,
            "max_score_gap": round(max(gaps), 6) if gaps else 0.0}


def merge_comparisons(comparisons: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Totals over several comparisons (e.g. every row of a figure): sentences, identical, largest gap."""
    return {"comparisons": len(comparisons),
            "sentences": sum(c["sentences"] for c in comparisons),
            "identical": sum(c["identical"] for c in comparisons),
            "max_score_gap": max((c["max_score_gap"] for c in comparisons), default=0.0)}


def summary_line(comparison: dict[str, Any]) -> str:
    """'identical outputs' or 'k of N sentences differ (largest score gap g)'."""
    differ = comparison["sentences"] - comparison["identical"]
    if not differ:
        return "identical outputs"
    return (f"{differ} of {comparison['sentences']} sentences differ "
            f"(largest score gap {comparison['max_score_gap']:.5f})")
