"""Tests for the tokenizers: round trips per language, the token contract, the registry, pickling."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from pipeline.text import (
    TOKENIZERS,
    JiebaTokenizer,
    MecabTokenizer,
    MosesTokenizer,
    Tokenizer,
    get_tokenizer,
    join_cjk,
)

ENGLISH = [
    'He said: "It\'s a well-known fact that 3-2 wins."',
    "The company's shares rose 5.3% to $1,250 on Monday - the biggest gain since 2008.",
    'Tom & Jerry | "Cats" <are> [sometimes] friends, aren\'t they?',
    "She didn't go to the U.S. last year; she stayed in New York.",
    "The Jones' house cost US$25,000 and the meeting starts at 21:00 (roughly).",
    'It was the "best of times," said the author, who\'d written it in the \'90s.',
    "Visit https://example.com/a-b/c?d=1 or mail info@example.org for and/or more.",
    "I'm sure we'll see the ex-president's e-mail... won't we?",
    "Temperatures of 21 °C at 5 p.m. for #1 seed R&D <= 10.",
]
GERMAN = [
    "„Das ist ein Test“, sagte der 45-jährige Bürgermeister.",
    "Die Preise stiegen um 3,5 Prozent auf 12.345 Euro – ein Rekord.",
    'Er sagte: "Wir schaffen das!" und ging nach Hause.',
    "Bei McDonald's gibt's das nicht, sagt Müller's Sohn.",
    "Tom & Jerry | <b> [1] sind bekannt, oder?",
    "Die Mercedes-Benz A-Klasse kostet ab 30.000 Euro (ohne Steuern).",
    "Das Spiel endete 2:1 - ein 'historischer' Sieg für die U21-Mannschaft.",
    'Dort wurde 2 Millionen $ Gewinn gemacht, schreibt die "Bild"-Zeitung.',
]
CHINESE = [
    "我买了一部iPhone 8和一台Windows XP电脑。",
    "2019年，GDP增长了6.1%。",
    "他说：“这是一个&测试|<标签>。”",
    "北京时间3月15日，NBA球星LeBron James得了30分。",
    "《人民日报》报道，5G网络已覆盖300个城市。",
]
JAPANESE = [
    "東京は日本の首都です。",
    "私はiPhone 8を買いました！",
    "「ＪＲ西日本」は、2019年に新しいサービスを始めた。",
    "価格は3,000円（税込）です。",
    "A&B社の<製品>は[限定]品です|本当？",
    "京都大学（Kyoto University）はMicrosoft Windowsを使う。",
]


def check_tokens(tokens: list[str]) -> None:
    """The contract: non-empty, no whitespace, nothing the phrase table or KenLM reserve."""
    assert tokens
    for token in tokens:
        assert token and token == token.strip() and len(token.split()) == 1
        assert not set(token) & set("|<>[]\"'"), token


@pytest.mark.parametrize("sentence", ENGLISH)
def test_english_round_trip(moses_en: MosesTokenizer, sentence: str) -> None:
    tokens = moses_en.tokenize(sentence)
    check_tokens(tokens)
    assert moses_en.detokenize(tokens) == sentence


@pytest.mark.parametrize("sentence", GERMAN)
def test_german_round_trip(moses_de: MosesTokenizer, sentence: str) -> None:
    tokens = moses_de.tokenize(sentence)
    check_tokens(tokens)
    assert moses_de.detokenize(tokens) == sentence


@pytest.mark.parametrize("sentence", CHINESE)
def test_chinese_round_trip(jieba_zh: JiebaTokenizer, sentence: str) -> None:
    tokens = jieba_zh.tokenize(sentence)
    check_tokens(tokens)
    assert jieba_zh.detokenize(tokens) == sentence


@pytest.mark.parametrize("sentence", JAPANESE)
def test_japanese_round_trip(mecab_ja: MecabTokenizer, sentence: str) -> None:
    tokens = mecab_ja.tokenize(sentence)
    check_tokens(tokens)
    assert mecab_ja.detokenize(tokens) == sentence


def test_moses_splits_and_restores_dashes(moses_en: MosesTokenizer) -> None:
    tokens = moses_en.tokenize("A well-known 3-2-1 count-down.")
    assert tokens == ["A", "well", "@-@", "known", "3", "@-@", "2", "@-@", "1", "count", "@-@", "down", "."]
    assert moses_en.detokenize(tokens) == "A well-known 3-2-1 count-down."
    assert moses_en.detokenize(["@-@", "x", "@-@"]) == "-x-"


def test_moses_escapes_and_splits(moses_en: MosesTokenizer) -> None:
    expected = ["&quot;", "A", "&#124;", "B", "&quot;", "&amp;", "&lt;", "c", "&gt;"]
    assert moses_en.tokenize('"A|B" & <c>') == expected
    assert moses_en.tokenize("Don't") == ["Don", "&apos;t"]


def test_quotes_closed_from_an_earlier_segment(moses_en: MosesTokenizer) -> None:
    for sentence in ['as well," said Wentzler.', 'She added: "We will see.', "They were 'so talented,' one wrote."]:
        assert moses_en.detokenize(moses_en.tokenize(sentence)) == sentence


def test_normalisation_happens_before_tokenizing(moses_en: MosesTokenizer, mecab_ja: MecabTokenizer) -> None:
    assert moses_en.tokenize(" Hello\tworld\u2028again\r\n") == ["Hello", "world", "again"]
    assert moses_en.tokenize(" \t\n") == []
    assert moses_en.detokenize([]) == ""
    assert mecab_ja.tokenize("東京\u3000タワー") == ["東京", "タワー"]


def test_cjk_join_keeps_spaces_only_between_latin_letters_and_digits() -> None:
    words = ["我", "买", "了", "iPhone", "8", "和", "Windows", "XP", "。"]
    assert join_cjk(words) == "我买了iPhone 8和Windows XP。"
    assert join_cjk(["Café", "Éclair", "和", "ＪＲ", "ＷＥＳＴ"]) == "Café Éclair和ＪＲＷＥＳＴ"
    assert join_cjk(["東京", "は", "、", "3", "月", "(", "JR", ")"]) == "東京は、3月(JR)"


def test_jieba_uses_the_given_cache_folder(jieba_zh: JiebaTokenizer, jieba_cache: Path) -> None:
    jieba_zh.tokenize("你好，世界。")
    assert (jieba_cache / "jieba.cache").is_file()


def test_registry_returns_each_tokenizer(jieba_cache: Path) -> None:
    assert TOKENIZERS == ("moses", "jieba", "mecab")
    assert isinstance(get_tokenizer("moses", "de"), MosesTokenizer)
    assert get_tokenizer("moses", "de").lang == "de"
    jieba = get_tokenizer("jieba", "zh", cache_dir=jieba_cache)
    assert isinstance(jieba, JiebaTokenizer) and jieba.cache_dir == jieba_cache
    assert isinstance(get_tokenizer("mecab", "ja"), MecabTokenizer)
    assert all(isinstance(get_tokenizer(name, "xx", jieba_cache), Tokenizer) for name in TOKENIZERS)


def test_unknown_tokenizer_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown tokenizer 'spacy'") as error:
        get_tokenizer("spacy", "en")
    assert all(name in str(error.value) for name in TOKENIZERS)


@pytest.mark.parametrize(
    ("name", "lang", "sentence"),
    [("moses", "en", ENGLISH[0]), ("jieba", "zh", CHINESE[0]), ("mecab", "ja", JAPANESE[1])],
)
def test_tokenizers_survive_pickling_after_use(name: str, lang: str, sentence: str, jieba_cache: Path) -> None:
    tokenizer = get_tokenizer(name, lang, cache_dir=jieba_cache)
    expected = tokenizer.tokenize(sentence)  # builds the engine, which must not be pickled
    clone = pickle.loads(pickle.dumps(tokenizer))
    assert "_engine" not in clone.__dict__
    assert clone.tokenize(sentence) == expected
    assert clone.detokenize(expected) == sentence
