"""The paired bootstrap of a BLEU difference against brute force: every resample's difference is sacrebleu's corpus
BLEU of the drawn sentences, system minus baseline; the interval and p-value follow from them."""
import numpy as np
import pytest

from pipeline.evaluation import corpus_bleu
from pipeline.evaluation.difference_bootstrap import SEED, bleu_difference, resampled_differences

REFERENCES = ["the cat sat on the mat", "a dog barked at the postman", "it rained all day long",
              "we went to the market", "she reads a book every week", "the train was late again"]
GOOD = ["the cat sat on the mat", "a dog barked at the postman", "it rained all day",
        "we went to a market", "she reads a book each week", "the train was late"]
WEAK = ["cat on mat", "the dog barked", "it rained all day long", "we went market",
        "she reads books", "train late again"]


def test_each_resample_is_the_difference_of_sacrebleu_on_the_drawn_sentences():
    observed, differences = resampled_differences(GOOD, WEAK, REFERENCES, "en", samples=20, seed=7)
    assert observed == pytest.approx(corpus_bleu(GOOD, REFERENCES, "en").score
                                     - corpus_bleu(WEAK, REFERENCES, "en").score, abs=1e-9)
    rng = np.random.default_rng(7)
    for difference in differences:
        drawn = rng.integers(0, len(REFERENCES), size=len(REFERENCES))
        pick = lambda texts: [texts[i] for i in drawn]  # noqa: E731
        expected = (corpus_bleu(pick(GOOD), pick(REFERENCES), "en").score
                    - corpus_bleu(pick(WEAK), pick(REFERENCES), "en").score)
        assert difference == pytest.approx(expected, abs=1e-9)


def test_the_interval_and_p_value_come_from_the_resamples():
    result = bleu_difference(GOOD, WEAK, REFERENCES, "en", samples=200)
    _, differences = resampled_differences(GOOD, WEAK, REFERENCES, "en", samples=200, seed=SEED)
    assert (result.low, result.high) == pytest.approx(tuple(np.percentile(differences, [2.5, 97.5])))
    assert result.p_value == pytest.approx(((differences <= 0).sum() + 1) / 201)
    assert result.difference > 0 and result.low > 0 and result.p_value < 0.05  # a clearly better system
    reverse = bleu_difference(WEAK, GOOD, REFERENCES, "en", samples=200)
    assert reverse.difference == pytest.approx(-result.difference) and reverse.high < 0
    assert bleu_difference(GOOD, GOOD, REFERENCES, "en", samples=50).p_value == 1.0
