"""The bootstrap of a grid's choice against corpus BLEU computed on each resample's sentences themselves."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.evaluation.bleu import corpus_bleu
from pipeline.evaluation.choice_bootstrap import bleu_of_statistics, choice_shares, sentence_statistics

REFERENCES = ["the cat sat on the mat .", "a dog barked at the postman today .", "it rained all day long .",
              "she reads a book every night .", "the train was late again .", "we walked along the river .",
              "he bought fresh bread this morning .", "the children played in the park .",
              "my phone battery is empty .", "they painted the house blue ."]
POINTS = [
    ["the cat sat on a mat .", "a dog barked at a postman .", "it rained all day .", "she reads books at night .",
     "the train is late again .", "we walked by the river .", "he bought bread this morning .",
     "children played in the park .", "my phone is empty .", "they painted a blue house ."],
    ["a cat sat on the mat .", "the dog barked at the postman today .", "it was raining all day long .",
     "she reads one book each night .", "the train was late .", "we walk along the river .",
     "he buys fresh bread in the morning .", "the kids played in a park .", "the battery of my phone is empty .",
     "they painted the house in blue ."],
    ["cat mat .", "dog postman .", "rain .", "book night .", "train late .", "river walk .", "bread morning .",
     "children park .", "phone empty .", "house blue ."],
]


def test_summed_statistics_give_sacrebleus_corpus_bleu():
    for outputs in POINTS:
        statistics = sentence_statistics(outputs, REFERENCES, "en")
        assert statistics.shape == (len(REFERENCES), 10)
        assert bleu_of_statistics(statistics.sum(axis=0), "en") == pytest.approx(
            corpus_bleu(outputs, REFERENCES, "en").score, abs=1e-9)


def test_each_resample_chooses_as_corpus_bleu_on_its_own_sentences_would():
    """The oracle draws the same resamples, builds each one's sentence lists and scores them with corpus_bleu."""
    samples, seed = 60, 7
    shares, as_is = choice_shares(POINTS, REFERENCES, "en", samples=samples, seed=seed)
    rng, counts = np.random.default_rng(seed), [0] * len(POINTS)
    for _ in range(samples):
        drawn = rng.integers(0, len(REFERENCES), size=len(REFERENCES))
        scores = [corpus_bleu([outputs[i] for i in drawn], [REFERENCES[i] for i in drawn], "en").score
                  for outputs in POINTS]
        counts[scores.index(max(scores))] += 1
    assert shares == [count / samples for count in counts]
    whole = [corpus_bleu(outputs, REFERENCES, "en").score for outputs in POINTS]
    assert as_is == whole.index(max(whole))
    assert shares[2] == 0.0 and 0 < shares[0] < 1  # the keywords never win; the two others share the choices


def test_a_point_equal_to_the_references_is_always_chosen_and_ties_go_to_the_first():
    shares, as_is = choice_shares([POINTS[0], REFERENCES, REFERENCES], REFERENCES, "en", samples=20)
    assert shares == [0.0, 1.0, 0.0] and as_is == 1
    with pytest.raises(ValueError, match="3 hypotheses but 10 references"):
        choice_shares([POINTS[0][:3]], REFERENCES, "en")
