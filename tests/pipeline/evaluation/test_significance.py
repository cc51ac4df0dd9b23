"""Paired bootstrap resampling and chrF2 (pipeline/evaluation/significance.py) on made-up systems."""
from __future__ import annotations

import random

import pytest

from pipeline.evaluation.significance import chrf2, paired_bootstrap

WORDS = "the a cat dog sat ran on under mat rug today quickly".split()


def corpus(seed: int, n: int = 60) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9))) for _ in range(n)]


def damaged(lines: list[str], every: int, seed: int) -> list[str]:
    """Every `every`-th sentence loses its second half."""
    return [" ".join(line.split()[: len(line.split()) // 2]) if k % every == 0 else line
            for k, line in enumerate(lines)]


def test_a_much_better_system_is_significant_and_a_nearly_equal_one_is_not():
    references = corpus(1)
    baseline = damaged(references, 1, 2)  # every sentence halved
    better = damaged(references, 5, 3)  # one in five
    nearly = [references[0]] + baseline[1:]  # one sentence of sixty repaired
    records = paired_bootstrap(("base", baseline), [("better", better), ("nearly", nearly)], references, "en",
                               samples=300)
    by = {(r["system"], r["metric"]): r for r in records}
    assert set(by) == {(s, m) for s in ("better", "nearly") for m in ("BLEU", "chrF2")}
    assert by["better", "BLEU"]["p_value"] < 0.05 and by["better", "BLEU"]["score"] > by["better", "BLEU"][
        "baseline_score"]
    assert by["nearly", "BLEU"]["p_value"] > 0.05 and by["nearly", "chrF2"]["p_value"] > 0.05
    assert by["better", "chrF2"]["score"] == pytest.approx(chrf2(better, references), abs=1e-3)
    assert by["better", "BLEU"]["ci"] > 0 and "bs:300" in by["better", "BLEU"]["signature"]
    again = paired_bootstrap(("base", baseline), [("better", better), ("nearly", nearly)], references, "en",
                             samples=300)
    assert again == records  # seeded resamples



def test_a_system_equal_to_its_baseline_is_not_significant():
    """sacrebleu counts resampled differences strictly above the observed one, so a system scored against itself
    would get p 1/(samples + 1); no difference is never a significant one."""
    references = corpus(4)
    baseline = damaged(references, 2, 5)
    records = paired_bootstrap(("base", baseline), [("same", list(baseline))], references, "en", samples=200)
    assert [(r["metric"], r["score"] == r["baseline_score"], r["p_value"]) for r in records] == [
        ("BLEU", True, 1.0), ("chrF2", True, 1.0)]

def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="sys: 2 hypotheses but 3 references"):
        paired_bootstrap(("base", ["a", "b", "c"]), [("sys", ["a", "b"])], ["a", "b", "c"], "en")
    assert paired_bootstrap(("base", ["a"]), [], ["a"], "en") == []
