"""Tests of pipeline.evaluation.bleu against BLEU computed by hand."""

from __future__ import annotations

import json
import math

import pytest

from pipeline.evaluation import BLEU_TOKENIZERS, BleuScore, bleu_tokenizer, corpus_bleu


def test_hand_computed_example() -> None:
    # hyp: the cat sat on the mat      ref: the cat is on the mat
    # 1-grams: hyp {the x2, cat, sat, on, mat} vs ref {the x2, cat, is, on, mat}:
    #          clipped matches the x2, cat, on, mat = 5 of 6
    # 2-grams: hyp {the cat, cat sat, sat on, on the, the mat}: the cat, on the, the mat = 3 of 5
    # 3-grams: hyp {the cat sat, cat sat on, sat on the, on the mat}: on the mat = 1 of 4
    # 4-grams: hyp {the cat sat on, cat sat on the, sat on the mat}: none = 0 of 3
    # sacrebleu's default "exp" smoothing (NIST mteval): the k-th order with zero matches gets
    # precision 1 / (2**k * total); here the first zero order, so 1 / (2 * 3).
    # Lengths 6 and 6: BP = 1.  BLEU = 100 * BP * (5/6 * 3/5 * 1/4 * 1/6) ** (1/4) = 37.99...
    expected_precisions = (100 * 5 / 6, 100 * 3 / 5, 100 * 1 / 4, 100 * 1 / (2 * 3))
    expected = 100 * 1.0 * math.exp((math.log(5 / 6) + math.log(3 / 5) + math.log(1 / 4)
                                     + math.log(1 / 6)) / 4)
    s = corpus_bleu(["the cat sat on the mat"], ["the cat is on the mat"], "en")
    assert s.score == pytest.approx(expected, abs=1e-6)
    assert s.score == pytest.approx(37.9918, abs=1e-4)
    for got, want in zip(s.precisions, expected_precisions):
        assert got == pytest.approx(want, abs=1e-6)
    assert len(s.precisions) == 4
    assert (s.brevity_penalty, s.sys_len, s.ref_len) == (1.0, 6, 6)
    assert s.signature == "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"


def test_brevity_penalty() -> None:
    # hyp: the cat is on   ref: the cat is on the mat
    # Every n-gram of the hypothesis is in the reference: precisions 4/4, 3/3, 2/2, 1/1 = 100%.
    # c = 4 < r = 6: BP = exp(1 - r/c) = exp(1 - 6/4) = exp(-0.5) = 0.6065...
    # BLEU = 100 * exp(-0.5) * 1 = 60.653...
    s = corpus_bleu(["the cat is on"], ["the cat is on the mat"], "de")
    assert s.brevity_penalty == pytest.approx(math.exp(1 - 6 / 4), abs=1e-9)
    assert s.brevity_penalty < 1
    assert s.score == pytest.approx(100 * math.exp(-0.5), abs=1e-6)
    assert s.precisions == pytest.approx((100.0, 100.0, 100.0, 100.0), abs=1e-6)
    assert (s.sys_len, s.ref_len) == (4, 6)


def test_corpus_level_sums_counts_over_segments() -> None:
    # The two segments above together: matches/totals are summed per order before dividing.
    # 1-grams (5+4)/(6+4) = 9/10, 2-grams (3+3)/(5+3) = 6/8, 3-grams (1+2)/(4+2) = 3/6,
    # 4-grams (0+1)/(3+1) = 1/4 (no zero order, so no smoothing). c = 10, r = 12:
    # BP = exp(1 - 12/10) = exp(-0.2).  BLEU = 100 * exp(-0.2) * (9/10 * 6/8 * 3/6 * 1/4) ** (1/4)
    expected = 100 * math.exp(-0.2) * (9 / 10 * 6 / 8 * 3 / 6 * 1 / 4) ** 0.25
    s = corpus_bleu(["the cat sat on the mat", "the cat is on"],
                    ["the cat is on the mat", "the cat is on the mat"], "en")
    assert s.score == pytest.approx(expected, abs=1e-6)
    assert s.precisions == pytest.approx((90.0, 75.0, 50.0, 25.0), abs=1e-6)
    assert s.brevity_penalty == pytest.approx(math.exp(-0.2), abs=1e-9)


def test_case_matters() -> None:
    ref = ["The Cat sat on the Mat in Paris"]
    cased = corpus_bleu(["The Cat sat on the Mat in Paris"], ref, "en")
    lowered = corpus_bleu(["the cat sat on the mat in paris"], ref, "en")
    assert cased.score == pytest.approx(100.0)
    assert lowered.score < cased.score
    assert "case:mixed" in cased.signature


def test_japanese_uses_mecab() -> None:
    sentence = "猫はマットの上に座った。"
    s = corpus_bleu([sentence], [sentence], "ja")
    assert "tok:ja-mecab" in s.signature
    assert s.score == pytest.approx(100.0)
    assert s.sys_len > 4  # segmented into words; 13a would see one token in unspaced text


def test_tokenizer_choice() -> None:
    assert bleu_tokenizer("ja") == "ja-mecab" == BLEU_TOKENIZERS["ja"]
    assert bleu_tokenizer("zh") == "zh" and bleu_tokenizer("zh-CN") == "zh"
    assert bleu_tokenizer("en") == bleu_tokenizer("de") == bleu_tokenizer("fr") == "13a"
    assert bleu_tokenizer("JA") == bleu_tokenizer("ja_JP") == "ja-mecab"
    s = corpus_bleu(["我爱北京天安门"], ["我爱北京天安门"], "zh")
    assert "tok:zh" in s.signature and s.score == pytest.approx(100.0)


def test_length_mismatch_names_both_lengths() -> None:
    with pytest.raises(ValueError, match=r"3 hypotheses but 2 references"):
        corpus_bleu(["a", "b", "c"], ["a", "b"], "en")


def test_empty_and_bare_string_rejected() -> None:
    with pytest.raises(ValueError):
        corpus_bleu([], [], "en")
    with pytest.raises(TypeError):
        corpus_bleu("the cat", ["the cat"], "en")


def test_to_dict_is_json() -> None:
    s = corpus_bleu(["the cat sat on the mat"], ["the cat is on the mat"], "en")
    d = json.loads(json.dumps(s.to_dict()))
    assert set(d) == {"score", "precisions", "brevity_penalty", "sys_len", "ref_len", "signature"}
    assert BleuScore(**{**d, "precisions": tuple(d["precisions"])}) == s
    assert str(s).startswith("BLEU = 37.99")
