import pytest

from pipeline.io import atomic_dir, count_lines, read_lines, remove_stale_temporaries, write_lines


def test_write_and_read_lines_gzip_and_plain(tmp_path):
    for name in ("a.txt", "a.gz"):
        assert write_lines(tmp_path / name, ["x y", "", "ü"]) == 3
        assert list(read_lines(tmp_path / name)) == ["x y", "", "ü"]
        assert count_lines(tmp_path / name) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.gz", "a.txt"]


def test_failed_write_leaves_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.txt"
    write_lines(path, ["old"])

    def lines():
        yield "new"
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        write_lines(path, lines())
    assert list(read_lines(path)) == ["old"]
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_newline_inside_a_line_is_refused(tmp_path):
    with pytest.raises(ValueError, match="line 2 contains a newline"):
        write_lines(tmp_path / "x.txt", ["ok", "a\nb"])
    assert not (tmp_path / "x.txt").exists()


def test_atomic_dir_appears_only_on_success(tmp_path):
    target = tmp_path / "artifact"
    with pytest.raises(RuntimeError):
        with atomic_dir(target) as tmp:
            (tmp / "half").write_text("x")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
    with atomic_dir(target) as tmp:
        (tmp / "done").write_text("x")
    assert [p.name for p in target.iterdir()] == ["done"]


def test_stale_temporaries_are_removed(tmp_path):
    (tmp_path / "artifact.tmp-abc").mkdir()
    (tmp_path / "artifact.tmp-def").write_text("x")
    (tmp_path / "other.tmp-1").write_text("x")
    removed = remove_stale_temporaries(tmp_path, "artifact")
    assert len(removed) == 2 and [p.name for p in tmp_path.iterdir()] == ["other.tmp-1"]
