from pipeline.vocab import SPECIALS, Vocabulary


def test_specials_first_then_by_frequency(tmp_path):
    vocab = Vocabulary.build([["b", "a", "b"], ["c", "b", "a", "</s>"]])
    assert vocab.tokens == SPECIALS + ("b", "a", "c")
    assert vocab.encode(["a", "zzz"]) == [5, vocab.unk_id]
    assert vocab.decode([vocab.bos_id, 4, vocab.eos_id]) == ["<s>", "b", "</s>"]
    vocab.save(tmp_path / "v.json")
    assert Vocabulary.load(tmp_path / "v.json") == vocab


def test_max_size_and_min_count():
    vocab = Vocabulary.build([["a", "a", "b", "b", "c"]], max_size=len(SPECIALS) + 1)
    assert vocab.tokens[len(SPECIALS):] == ("a",)
    assert "c" not in Vocabulary.build([["a", "a", "c"]], min_count=2)
