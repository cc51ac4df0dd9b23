
import pytest

from pipeline.data.corpus import clean_pairs, read_parallel, subsample
from pipeline.errors import DataError
from tests.conftest import write_gz


def test_line_count_mismatch_names_both_files_and_counts(tmp_path):
    src = write_gz(tmp_path / "a.de.gz", ["eins", "zwei", "drei"])
    tgt = write_gz(tmp_path / "a.en.gz", ["one", "two"])
    with pytest.raises(DataError) as e:
        read_parallel(src, tgt)
    assert f"{src} has 3 lines but {tgt} has 2 lines" in str(e.value)


def test_invalid_utf8_names_the_line(tmp_path):
    src = write_gz(tmp_path / "a.de.gz", "eins\nzwei\ndr\xc3\x28i\n".encode("latin-1"))
    tgt = write_gz(tmp_path / "a.en.gz", ["one", "two", "three"])
    with pytest.raises(DataError, match=r"a.de.gz, line 3: invalid UTF-8 \(byte 0xc3"):
        read_parallel(src, tgt)


def test_unicode_line_separators_do_not_split_lines(tmp_path):
    src = write_gz(tmp_path / "a.de.gz", ["ein\u2028zwei", "drei\rvier", "fünf\x85"])
    tgt = write_gz(tmp_path / "a.en.gz", ["one", "two", "three"])
    source, target = read_parallel(src, tgt)
    assert source == ["ein\u2028zwei", "drei\rvier", "fünf\x85"] and len(target) == 3


def test_subsample_is_seeded_sorted_and_complete_when_small():
    a, b = subsample(1000, 50, seed=7), subsample(1000, 50, seed=7)
    assert a == b and a == sorted(a) and len(set(a)) == 50
    assert subsample(1000, 50, seed=8) != a
    assert subsample(10, 50, seed=7) == list(range(10)) and subsample(10, 0, seed=7) == list(range(10))


def test_clean_counts_each_reason_once():
    source = [["a"], [], ["a"] * 5, ["a"] * 100, ["a", "b"]]
    target = [["b"], ["x"], ["b"], ["b"] * 3, ["c", "d"]]
    keep, stats = clean_pairs(source, target, min_tokens=1, max_tokens=80, max_ratio=3.0)
    assert keep == [0, 4]
    assert stats.to_dict() == {"input_pairs": 5, "kept_pairs": 2, "empty": 1, "too_short": 0, "too_long": 1,
                               "bad_ratio": 1}
