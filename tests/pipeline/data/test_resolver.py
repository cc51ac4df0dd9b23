import dataclasses
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from pipeline import config
from pipeline.data.resolver import DataResolver, default_data_dir
from pipeline.errors import DataError
from pipeline.io import read_lines
from tests.conftest import write_pair

SGM_DE = '<srcset setid="newstest2017" srclang="any">\n<doc docid="a">\n<seg id="1">Ein Haus &amp; ein Baum.</seg>\n<seg id="2">Guten Tag!</seg>\n</doc>\n</srcset>\n'
SGM_EN = '<refset setid="newstest2017" srclang="any">\n<doc docid="a">\n<seg id="1">A house &amp; a tree.</seg>\n<seg id="2">Good day!</seg>\n</doc>\n</refset>\n'


def make_archive(folder: Path) -> Path:
    archive = folder / "test.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in (("test/newstest2017-deen-src.de.sgm", SGM_DE), ("test/newstest2017-deen-ref.en.sgm", SGM_EN)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


def task_with_download(archive: Path, checksum: str | None = None) -> config.TaskConfig:
    """ger-eng with its test split from an archive named in [downloads.test] (as KFTT's is) instead of sacrebleu."""
    download = config.DownloadConfig(
        url=archive.as_uri(), checksum=checksum or "md5:" + hashlib.md5(archive.read_bytes()).hexdigest(),
        format="sgm", files={"de": "test/newstest2017-deen-src.de.sgm", "en": "test/newstest2017-deen-ref.en.sgm"})
    return dataclasses.replace(config.load_task("ger-eng"), downloads={"test": download}, sacrebleu={})


def test_data_dir_order(tmp_path):
    assert default_data_dir(tmp_path / "opt", {"MT_DATA_DIR": str(tmp_path / "env")}) == tmp_path / "opt"
    assert default_data_dir(None, {"MT_DATA_DIR": str(tmp_path / "env")}) == tmp_path / "env"
    assert default_data_dir(None, {}) is None  # nothing outside the repository is a default


def test_resolves_files_in_the_data_folder(data_dir, tmp_path):
    resolver = DataResolver.create(data_dir, tmp_path / "cache", env={})
    paths = resolver.resolve(config.load_task("eng-ger"), "newstest2016")
    assert paths == {"en": data_dir / "de-en/newstest2016.en.gz", "de": data_dir / "de-en/newstest2016.de.gz"}
    assert list(paths) == ["en", "de"]  # source first


def test_missing_split_names_split_and_places(data_dir, tmp_path):
    resolver = DataResolver.create(data_dir, tmp_path / "cache", env={"MT_OFFLINE": "1"})
    with pytest.raises(DataError) as e:
        resolver.resolve(config.load_task("ger-eng"), "newstest2014")
    message = str(e.value)
    assert "de-en/newstest2014" in message and "splits.devtest" in message
    assert str(data_dir / "de-en") in message and str(tmp_path / "cache" / "de-en") in message
    assert "block 'WMT newstest2014 de-en' of de-en/newstest2014" in message  # the recipe's, offline
    assert "raw.githubusercontent.com/Helsinki-NLP/OPUS-MT-testsets/" in message

    no_recipe = DataResolver(data_dir, tmp_path / "cache", offline=True, recipes=tmp_path / "no-recipes")
    with pytest.raises(DataError, match="no official download is configured for it"):
        no_recipe.resolve(config.load_task("ger-eng"), "newstest2014")


def test_offline_test_set_is_a_clear_error(data_dir, tmp_path):
    resolver = DataResolver.create(data_dir, tmp_path / "cache", env={"MT_OFFLINE": "1"})
    with pytest.raises(DataError, match=r"split de-en/test .*key 'splits.test'.*offline"):
        resolver.resolve(config.load_task("ger-eng"), "test")


def test_download_extracts_sgm_with_checksum_and_caches(data_dir, tmp_path):
    archive = make_archive(tmp_path)
    task = task_with_download(archive)
    resolver = DataResolver.create(data_dir, tmp_path / "cache", env={})
    paths = resolver.resolve(task, "test")
    assert list(read_lines(paths["de"])) == ["Ein Haus & ein Baum.", "Guten Tag!"]
    assert list(read_lines(paths["en"])) == ["A house & a tree.", "Good day!"]
    assert paths["de"].parent == tmp_path / "cache" / "de-en"
    archive.unlink()  # the second call must not download again
    assert resolver.resolve(task, "test") == paths


def test_checksum_mismatch_is_an_error_and_leaves_nothing(data_dir, tmp_path):
    archive = make_archive(tmp_path)
    task = task_with_download(archive, checksum="md5:" + "0" * 32)
    resolver = DataResolver.create(data_dir, tmp_path / "cache", env={})
    with pytest.raises(DataError, match="test.tgz has md5 [0-9a-f]{32}, but 0{32} is expected"):
        resolver.resolve(task, "test")
    assert not list((tmp_path / "cache").rglob("*.gz")) and not list((tmp_path / "cache").rglob("test.tgz"))


def test_data_folder_wins_over_download(data_dir, tmp_path):
    write_pair(data_dir, "test", [("A house.", "Ein Haus.")])
    task = task_with_download(tmp_path / "missing.tgz", checksum="md5:" + "0" * 32)
    paths = DataResolver.create(data_dir, tmp_path / "cache", env={}).resolve(task, "test")
    assert paths["de"] == data_dir / "de-en/test.de.gz"
