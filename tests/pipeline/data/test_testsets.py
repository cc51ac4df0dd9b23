"""Official test sets through sacrebleu's data sets: fetched from a loopback mirror, verified, written as text."""
from __future__ import annotations

import hashlib

import pytest
from sacrebleu.dataset import DATASETS

from pipeline import config
from pipeline.data.fetch import Fetcher
from pipeline.data.resolver import DataResolver
from pipeline.data.testsets import fetch_test_set
from pipeline.errors import DataError
from pipeline.io import read_lines
from tests.pipeline.data.conftest import tgz

SRC = '<srcset setid="newstest2017" srclang="any">\n<doc docid="a" genre="news" origlang="de">\n' \
      '<seg id="1">Ein Haus  und ein Baum. </seg>\n<seg id="2">Guten Tag!</seg>\n</doc>\n</srcset>\n'
REF = '<refset setid="newstest2017" srclang="any">\n<doc docid="a" genre="news" origlang="de">\n' \
      '<seg id="1">A house and a tree.</seg>\n<seg id="2">Good day!</seg>\n</doc>\n</refset>\n'


@pytest.fixture
def wmt17(mirror, monkeypatch):
    """sacrebleu's wmt17 archive, made here with the de-en files at sacrebleu's paths, on the mirror; sacrebleu's
    md5 of it replaced by this archive's (returned)."""
    dataset = DATASETS["wmt17"]
    src, ref = dataset.langpairs["de-en"]
    data = tgz({src: SRC, ref: REF, "test/newstest2017-csen-src.cs.sgm": "<srcset/>\n"})
    mirror.put(dataset.data[0], data)
    md5 = hashlib.md5(data).hexdigest()
    monkeypatch.setattr(dataset, "md5", [md5])
    return md5


def test_a_sacrebleu_test_set_is_fetched_through_the_mirror_verified_and_read_by_sacrebleu(wmt17, mirror, tmp_path):
    outputs = {"de": tmp_path / "out" / "test.de.gz", "en": tmp_path / "out" / "test.en.gz"}
    fetcher = Fetcher(tmp_path / "cache", mirror=mirror.url)
    fetch_test_set("wmt17", "de", "en", outputs, fetcher)
    assert list(read_lines(outputs["de"])) == ["Ein Haus und ein Baum.", "Guten Tag!"]  # sacrebleu's own cleaning
    assert list(read_lines(outputs["en"])) == ["A house and a tree.", "Good day!"]
    assert mirror.requests == ["/data.statmt.org/wmt17/translation-task/test.tgz"]
    assert fetcher.place(DATASETS["wmt17"].data[0]).is_file()
    assert (tmp_path / "cache" / "sacrebleu" / "wmt17" / "wmt17.de-en.src").is_file()  # sacrebleu's layout, ours


def test_sacrebleu_md5_is_checked(mirror, tmp_path):
    dataset = DATASETS["wmt17"]
    mirror.put(dataset.data[0], tgz({path: SRC for path in dataset.langpairs["de-en"]}))  # not the real archive
    outputs = {"de": tmp_path / "test.de.gz", "en": tmp_path / "test.en.gz"}
    with pytest.raises(DataError, match=rf"sacrebleu test set wmt17 \(de-en\): .*test.tgz has md5 [0-9a-f]{{32}}, but "
                                        rf"{dataset.md5[0]} is expected"):
        fetch_test_set("wmt17", "de", "en", outputs, Fetcher(tmp_path / "cache", mirror=mirror.url))
    assert not outputs["de"].exists()


def test_the_resolver_fetches_a_missing_test_split_through_sacrebleu(wmt17, mirror, data_dir, tmp_path):
    resolver = DataResolver.create(data_dir, tmp_path / "cache", env={"MT_DOWNLOAD_MIRROR": mirror.url})
    paths = resolver.resolve(config.load_task("ger-eng"), "test")
    assert paths == {"de": tmp_path / "cache/de-en/test.de.gz", "en": tmp_path / "cache/de-en/test.en.gz"}
    assert list(read_lines(paths["en"])) == ["A house and a tree.", "Good day!"]
    offline = DataResolver.create(None, tmp_path / "other-cache", env={"MT_OFFLINE": "1"})
    with pytest.raises(DataError, match=r"split de-en/test .*offline .*place the file test.tgz by hand in .*"
                                        r"data.statmt.org/wmt17/translation-task"):
        offline.resolve(config.load_task("ger-eng"), "test")
