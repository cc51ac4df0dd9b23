"""Tests for pipeline.text.processor: the whole forward and reverse path of a language."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.text import BpeSegmenter, TextProcessor, Truecaser, get_tokenizer, learn_bpe

TRAIN = [
    "The cat sat on the mat.",
    "The dog's owner said: \"We love the dog.\"",
    "Yesterday the cat and the dog walked to the well-known park in Paris.",
    "It cost $25 & the owner paid 3.5% more than in 2019.",
    "The cats and dogs of Paris are famous.",
] * 3
SENTENCES = [
    "The cat sat on the mat.",
    "The dog walked to the park.",
    'The owner said: "We love Paris."',
    "Yesterday the well-known cat paid $25 & more.",
    "The zebra's unseen cousins visited Copenhagen in 2024.",
]


@pytest.fixture(scope="module")
def english(tmp_path_factory: pytest.TempPathFactory) -> TextProcessor:
    tokenizer = get_tokenizer("moses", "en")
    tokenized = [tokenizer.tokenize(line) for line in TRAIN]
    truecaser = Truecaser.train(tokenized)
    codes = tmp_path_factory.mktemp("processor") / "en.bpe"
    learn_bpe((" ".join(truecaser.truecase(tokens)) for tokens in tokenized), 60, codes)
    return TextProcessor(tokenizer, truecaser, BpeSegmenter(codes))


@pytest.mark.parametrize("sentence", SENTENCES)
def test_english_round_trip(english: TextProcessor, sentence: str) -> None:
    words = english.words(sentence)
    subwords = english.subwords(words)
    assert english.postprocess(subwords) == sentence
    assert english.postprocess(words, subword=False) == sentence


def test_words_are_truecased_and_escaped(english: TextProcessor) -> None:
    assert english.words('The cat said: "Hi" & left.') == [
        "the", "cat", "said", ":", "&quot;", "Hi", "&quot;", "&amp;", "left", "."]


def test_subwords_split_rare_words(english: TextProcessor) -> None:
    words = english.words("The zebra's unseen cousins visited Copenhagen.")
    subwords = english.subwords(words)
    assert len(subwords) > len(words)
    assert any(token.endswith("@@") for token in subwords)


def test_japanese_round_trip_without_truecaser_or_bpe(tmp_path: Path) -> None:
    processor = TextProcessor(get_tokenizer("mecab", "ja"), None, None)
    sentence = "京都大学（Kyoto University）は1897年に設立された。"
    words = processor.words(sentence)
    assert processor.subwords(words) == words
    assert processor.postprocess(words) == sentence


def test_chinese_round_trip_with_bpe(tmp_path: Path, jieba_cache: Path) -> None:
    tokenizer = get_tokenizer("jieba", "zh", cache_dir=jieba_cache)
    train = ["我们在北京学习中文。", "北京是中国的首都。", "我买了一部iPhone 8。"] * 3
    codes = tmp_path / "zh.bpe"
    learn_bpe((" ".join(tokenizer.tokenize(line)) for line in train), 20, codes)
    processor = TextProcessor(tokenizer, None, BpeSegmenter(codes))
    for sentence in ["我们在北京买了一部iPhone 8。", "上海是中国最大的城市。"]:
        assert processor.postprocess(processor.subwords(processor.words(sentence))) == sentence
