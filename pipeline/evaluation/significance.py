"""Paired bootstrap resampling (Koehn 2004) of systems against a baseline, with sacrebleu's implementation.

For each system and metric (cased BLEU with the target language's tokenizer, and chrF2), sacrebleu resamples the
test sentences 1000 times with replacement (the same resamples for the system and the baseline; seed 12345 unless
SACREBLEU_SEED says otherwise), and reports the system's score, the mean and 95% interval (half-width) of its
resampled scores, and the p-value of the difference to the baseline (the share of resamples whose absolute
difference, centred, exceeds the observed one, plus one, over the resamples plus one; Moses'
bootstrap-hypothesis-difference-significance.pl). A score equal to the baseline's gets p 1.0: sacrebleu's strict
comparison would give a system scored against itself p 1/(samples + 1), a "significant" difference of zero.

    paired_bootstrap(("PBMT", hyps), [("LNMT", hyps2)], references, "en")
        -> [{"system": "LNMT", "baseline": "PBMT", "metric": "BLEU", "score": ..., "baseline_score": ...,
             "mean": ..., "ci": ..., "p_value": ..., "signature": ...}, {... "metric": "chrF2" ...}]
"""
from __future__ import annotations

from typing import Any, Sequence

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from pipeline.evaluation.bleu import bleu_tokenizer

__all__ = ["chrf2", "paired_bootstrap"]

SAMPLES = 1000


def _metrics(target_lang: str) -> dict[str, Any]:
    return {"BLEU": BLEU(tokenize=bleu_tokenizer(target_lang), lowercase=False), "chrF2": CHRF()}


def chrf2(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Corpus chrF2 (sacrebleu's defaults: character 6-grams, beta 2) of detokenized text."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    return float(CHRF().corpus_score(list(hypotheses), [list(references)]).score)


def paired_bootstrap(baseline: tuple[str, Sequence[str]], systems: Sequence[tuple[str, Sequence[str]]],
                     references: Sequence[str], target_lang: str, samples: int = SAMPLES) -> list[dict[str, Any]]:
    """One record per system and metric (see the module docstring); systems in the order given."""
    for name, hyps in [baseline, *systems]:
        if len(hyps) != len(references):
            raise ValueError(f"{name}: {len(hyps)} hypotheses but {len(references)} references")
    if not systems:
        return []
    named = [(baseline[0], list(baseline[1]))] + [(name, list(hyps)) for name, hyps in systems]
    signatures, scores = PairedTest(named, _metrics(target_lang), [list(references)], test_type="bs",
                                    n_samples=samples)()
    records = []
    for metric, results in scores.items():
        if metric == "System":
            continue
        label = "BLEU" if metric.startswith("BLEU") else "chrF2"
        base = results[0]
        for (name, _), result in zip(named[1:], results[1:]):
            records.append({"system": name, "baseline": baseline[0], "metric": label,
                            "score": round(float(result.score), 4), "baseline_score": round(float(base.score), 4),
                            "mean": round(float(result.mean), 4), "ci": round(float(result.ci), 4),
                            "p_value": 1.0 if result.score == base.score else round(float(result.p_value), 4),
                            "signature": str(signatures[metric])})
    return records
