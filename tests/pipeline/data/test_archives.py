"""Members out of tar and zip archives: only those asked for, one member per pattern."""
from __future__ import annotations

import pytest

from pipeline.data.archives import extract_members
from pipeline.errors import DataError
from tests.pipeline.data.conftest import tgz, zipped


@pytest.mark.parametrize("pack", [tgz, zipped])
def test_members_by_name_or_glob_in_pattern_order(pack, tmp_path):
    archive = tmp_path / "a.archive"
    archive.write_bytes(pack({"d/x.en": "en\n", "d/x.de": "de\n", "d/x.fr": "fr\n"}))
    first, second = extract_members(archive, ["*.de", "d/x.en"], tmp_path / "out")
    assert (first.read_text(), second.read_text()) == ("de\n", "en\n")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["0-x.de", "1-x.en"]  # nothing else unpacked
    kept = extract_members(archive, ["d/x.fr"], tmp_path / "kept", keep_paths=True)
    assert kept == [tmp_path / "kept/d/x.fr"]


@pytest.mark.parametrize("pack", [tgz, zipped])
def test_a_pattern_must_match_exactly_one_member(pack, tmp_path):
    archive = tmp_path / "a.archive"
    archive.write_bytes(pack({"x.en": "en\n", "y.en": "en\n"}))
    with pytest.raises(DataError, match=r"a.archive: 2 members \(x.en, y.en\) match '\*.en'"):
        extract_members(archive, ["*.en"], tmp_path / "out")
    with pytest.raises(DataError, match=r"no member matches 'x.de'"):
        extract_members(archive, ["x.de"], tmp_path / "out")


def test_a_member_outside_its_folder_is_refused(tmp_path):
    archive = tmp_path / "a.tgz"
    archive.write_bytes(tgz({"../evil": "x\n"}))
    with pytest.raises(DataError, match="points outside its folder"):
        extract_members(archive, ["*evil"], tmp_path / "out", keep_paths=True)
