"""KFTT's training split from its source corpus: the rule, on articles made in the test."""
from __future__ import annotations

import pytest

from pipeline.data.kftt import article_pairs, training_pairs
from pipeline.errors import DataError
from tests.pipeline.data.conftest import tgz

ARTICLE = ('<art><tit><j>題</j><e type="check">Title</e></tit><par>'
           '<sen id="1"><j>雪舟 は|画家 </j><e type="trans">draft</e><e type="check"> first </e>'
           '<e type="check">Sesshu &amp; art</e></sen>'
           '<sen id="2"><j>二</j><e type="trans">only a draft</e></sen></par>'
           '<copyright>not &amp well-formed < at all</copyright></art>')


def test_an_articles_sentences_are_its_japanese_without_spaces_and_its_last_checked_english():
    assert article_pairs(ARTICLE.encode(), "BDS00001.xml") == [("雪舟は画家", "Sesshu & art"), ("二", "")]


def test_broken_xml_outside_the_copyright_is_an_error_naming_the_article():
    with pytest.raises(DataError, match="GNM00155.xml: not well-formed"):
        article_pairs(b"<art><sen><j>x</sen></art>", "GNM00155.xml")


def test_training_pairs_leave_out_the_dev_tune_and_test_articles_and_follow_file_names(tmp_path):
    members = {f"top/wiki/BDS/BDS0000{i}.xml": ARTICLE.replace("Sesshu", f"A{i}") for i in (5, 1, 2, 3, 4)}
    archive = tmp_path / "corpus.tar.gz"
    archive.write_bytes(tgz(members | {"top/wiki/BLD/BLD00001.xml": ARTICLE}))
    pairs = training_pairs(archive, ["wiki/BDS"])
    assert [en for _, en in pairs["wiki/BDS"]] == ["A1 & art", "", "A5 & art", ""]
    with pytest.raises(DataError, match="no article in wiki/XYZ"):
        training_pairs(archive, ["wiki/XYZ"])
