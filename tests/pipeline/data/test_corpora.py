"""Training corpora by name: mtdata ids fetched from a loopback mirror, verified, concatenated and traced."""
from __future__ import annotations

import shutil

import pytest
from mtdata.iso.bcp47 import BCP47Tag, bcp47

from pipeline import config
from pipeline.config import CorpusConfig
from pipeline.data.corpora import SOURCES_HEADER, build_training_corpus, corpus_folder, mtdata_entry
from pipeline.data.fetch import Fetcher
from pipeline.errors import DataError
from pipeline.io import read_lines
from tests.pipeline.data.conftest import digest, gzipped, lines, tgz, zipped

EUROPARL = "Statmt-europarl_wmt13-7-deu-eng"
NEWS_COMMENTARY = "Statmt-news_commentary-14-deu-eng"
RAPID = "Tilde-rapid-2016-deu-eng"
KFTT = "Phontron-kftt_train-1-eng-jpn"
PAIRS = {
    EUROPARL: [("Wiederaufnahme der Sitzungsperiode", "Resumption of the session"), ("Guten Tag.", "Good day.")],
    NEWS_COMMENTARY: [("Der Euro  steigt.", "The euro rises."), ("", "An orphan line."), (" Nein. ", "No.")],
    RAPID: [("Die Kommission & der Rat", "The Commission & the Council"), ("Brüssel", "Brussels")],
}


def tmx(pairs: list[tuple[str, str]]) -> str:
    units = "".join(f'<tu><tuv xml:lang="de"><seg>{de.replace("&", "&amp;")}</seg></tuv>'
                    f'<tuv xml:lang="en"><seg>{en.replace("&", "&amp;")}</seg></tuv></tu>\n' for de, en in pairs)
    return f'<?xml version="1.0" encoding="utf-8"?>\n<tmx version="1.4"><header/><body>\n{units}</body></tmx>\n'


def serve_deen(mirror, cache) -> list[CorpusConfig]:
    """The three de-en corpora on the mirror, in their real formats: a tgz of a Moses-style pair (and another pair
    that is not read), a gzipped TSV, a zipped TMX; returned with their checksums."""
    europarl = mtdata_entry(EUROPARL, cache)
    de, en = europarl.in_paths
    files = {
        EUROPARL: tgz({de: lines([d for d, _ in PAIRS[EUROPARL]]), en: lines([e for _, e in PAIRS[EUROPARL]]),
                       "training/europarl-v7.fr-en.fr": "Bonjour\n"}),
        NEWS_COMMENTARY: gzipped(lines([f"{d}\t{e}" for d, e in PAIRS[NEWS_COMMENTARY]])),
        RAPID: zipped({"rapid2016.de-en.tmx": tmx(PAIRS[RAPID]), "README": "about\n"}),
    }
    corpora = []
    for corpus_id, data in files.items():
        mirror.put(mtdata_entry(corpus_id, cache).url, data)
        corpora.append(CorpusConfig(id=corpus_id, name=f"corpus {corpus_id.split('-')[1]}", checksum=digest(data)))
    return corpora


def test_corpora_from_the_mirror_are_verified_concatenated_and_traced_to_their_ids(mirror, tmp_path):
    cache = tmp_path / "cache"
    corpora = serve_deen(mirror, cache)
    fetcher = Fetcher(cache, mirror=mirror.url)
    paths = build_training_corpus("de-en", ("de", "en"), corpora, fetcher)
    assert list(paths) == ["de", "en"] and paths["de"] == corpus_folder(cache, "de-en", corpora) / "de-en/train.de.gz"
    assert list(zip(read_lines(paths["de"]), read_lines(paths["en"]))) == [
        ("Wiederaufnahme der Sitzungsperiode", "Resumption of the session"), ("Guten Tag.", "Good day."),
        ("Der Euro  steigt.", "The euro rises."), ("Nein.", "No."),
        ("Die Kommission & der Rat", "The Commission & the Council"), ("Brüssel", "Brussels")]
    assert paths["de"].read_bytes()[4:8] == b"\0\0\0\0"  # gzip without a time in its header
    rows = [line.split("\t") for line in read_lines(paths["de"].parent / "train.sources.tsv")]
    assert tuple(rows[0]) == SOURCES_HEADER
    traced = [(r[0], r[1], r[2], r[4], r[5], r[6], r[8]) for r in rows[1:]]
    assert traced == [
        ("1", "2", "2", EUROPARL, mtdata_entry(EUROPARL, cache).url, corpora[0].checksum, "0"),
        ("3", "4", "2", NEWS_COMMENTARY, mtdata_entry(NEWS_COMMENTARY, cache).url, corpora[1].checksum, "1"),
        ("5", "6", "2", RAPID, mtdata_entry(RAPID, cache).url, corpora[2].checksum, "0")]
    assert rows[1][7] == ";".join(mtdata_entry(EUROPARL, cache).in_paths) and rows[1][3] == "corpus europarl_wmt13"
    assert sorted(mirror.requests) == sorted("/" + mtdata_entry(i, cache).url.split("://")[1] for i in PAIRS)
    mirror.requests.clear()
    assert build_training_corpus("de-en", ("de", "en"), corpora, fetcher) == paths  # built once, then reused
    assert mirror.requests == []


def test_a_corpus_in_the_other_language_order_is_turned_to_the_pair(mirror, tmp_path):
    cache = tmp_path / "cache"
    entry = mtdata_entry(KFTT, cache)  # eng-jpn, for the ja-en folder of jpn-eng
    en, ja = entry.in_paths
    data = tgz({en: "Kyoto is a city.\n", ja: "京都は都市である。\n"})
    mirror.put(entry.url, data)
    corpora = [CorpusConfig(id=KFTT, name="KFTT", checksum=digest(data, "sha1"))]
    paths = build_training_corpus("ja-en", ("ja", "en"), corpora, Fetcher(cache, mirror=mirror.url))
    assert list(read_lines(paths["ja"])) == ["京都は都市である。"] and list(read_lines(paths["en"])) == ["Kyoto is a city."]


def test_a_wrong_checksum_is_an_error_naming_the_corpus_its_id_the_file_and_both_digests(mirror, tmp_path):
    cache = tmp_path / "cache"
    corpora = serve_deen(mirror, cache)
    corpora[1] = CorpusConfig(id=NEWS_COMMENTARY, name="News Commentary v14", checksum="sha256:" + "0" * 64)
    with pytest.raises(DataError) as e:
        build_training_corpus("de-en", ("de", "en"), corpora, Fetcher(cache, mirror=mirror.url))
    message = str(e.value)
    actual = digest((mirror.root / mtdata_entry(NEWS_COMMENTARY, cache).url.split("://")[1]).read_bytes())
    assert f"News Commentary v14 (mtdata id {NEWS_COMMENTARY})" in message
    assert "news-commentary-v14.de-en.tsv.gz" in message and actual.split(":")[1] in message and "0" * 64 in message
    assert not list((cache / "corpora").rglob("train.*"))  # nothing concatenated
    assert not Fetcher(cache).place(mtdata_entry(NEWS_COMMENTARY, cache).url).exists()  # the download was discarded


def test_a_missing_file_names_the_corpus_its_id_and_the_folder_to_place_it_in_which_is_then_used(mirror, tmp_path):
    cache = tmp_path / "cache"
    corpora = serve_deen(mirror, cache)
    served = {i: mirror.root / mtdata_entry(i, cache).url.split("://")[1] for i in PAIRS}
    moved = {i: served[i].rename(tmp_path / served[i].name) for i in (EUROPARL, RAPID)}  # the mirror lacks two: 404
    fetcher = Fetcher(cache, mirror=mirror.url)
    with pytest.raises(DataError) as e:
        build_training_corpus("de-en", ("de", "en"), corpora, fetcher, record_in="configs/tasks/ger-eng.toml")
    message = str(e.value)
    for corpus_id in (EUROPARL, RAPID):  # every failed corpus is named, in one error
        place = fetcher.place(mtdata_entry(corpus_id, cache).url)
        assert f"(mtdata id {corpus_id})" in message and "404" in message
        assert f"place the file {place.name} by hand in {place.parent}" in message
    assert NEWS_COMMENTARY not in message
    for corpus_id, path in moved.items():  # placed by hand: used after its checksum, not fetched
        path.rename(fetcher.place(mtdata_entry(corpus_id, cache).url))
    mirror.requests.clear()
    paths = build_training_corpus("de-en", ("de", "en"), corpora, fetcher)
    assert len(list(read_lines(paths["en"]))) == 6 and mirror.requests == []


def test_offline_a_corpus_must_be_placed_by_hand(tmp_path):
    cache = tmp_path / "cache"
    entry = mtdata_entry(KFTT, cache)
    corpora = [CorpusConfig(id=KFTT, name="KFTT 1.0 kyoto-train", checksum="sha1:" + "1" * 40)]
    with pytest.raises(DataError, match=r"KFTT 1.0 kyoto-train \(mtdata id Phontron-kftt_train-1-eng-jpn\): offline .*"
                                        r"place the file kftt-data-1.0.tar.gz by hand in .*www.phontron.com"):
        build_training_corpus("ja-en", ("ja", "en"), corpora, Fetcher(cache, offline=True))
    assert entry.url.endswith("kftt-data-1.0.tar.gz")


def test_a_corpus_without_a_checksum_is_fetched_but_not_used_until_its_digest_is_recorded(mirror, tmp_path):
    cache = tmp_path / "cache"
    corpora = serve_deen(mirror, cache)[:1]
    unknown = [CorpusConfig(id=EUROPARL, name="Europarl v7", checksum="")]
    fetcher = Fetcher(cache, mirror=mirror.url)
    with pytest.raises(DataError) as e:
        build_training_corpus("de-en", ("de", "en"), unknown, fetcher, record_in="configs/tasks/ger-eng.toml")
    assert (f'no checksum is recorded in configs/tasks/ger-eng.toml ([[corpora]] id = "{EUROPARL}")' in str(e.value)
            and f'checksum = "{corpora[0].checksum}"' in str(e.value))
    assert fetcher.place(mtdata_entry(EUROPARL, cache).url).is_file()  # kept, but not used:
    assert not list((cache / "corpora").rglob("train.*"))
    mirror.requests.clear()
    build_training_corpus("de-en", ("de", "en"), corpora, fetcher)  # the digest written: the kept file is used
    assert mirror.requests == []


def test_an_id_mtdata_does_not_know_is_an_error(tmp_path):
    with pytest.raises(DataError, match=r"Statmt-europarl-99-deu-eng: not in the index of mtdata"):
        mtdata_entry("Statmt-europarl-99-deu-eng", tmp_path)
    with pytest.raises(DataError, match=r"did you mean Statmt-europarl-7-deu-eng"):
        mtdata_entry("Statmt-europarl-7-de-en", tmp_path)
    with pytest.raises(DataError, match=r"not an mtdata id"):
        mtdata_entry("europarl", tmp_path)


@pytest.mark.parametrize("task", config.available("tasks"))
def test_every_configured_corpus_is_an_mtdata_id_of_the_task_pair_in_a_format_read_here(task, tmp_path):
    loaded = config.load_task(task)
    assert loaded.corpora
    for corpus in [c for c in loaded.corpora if c.id]:  # the others are files by URL (test below)
        entry = mtdata_entry(corpus.id, tmp_path)
        assert isinstance(entry.url, str) and entry.in_ext not in ("opus_xces", "hfds"), corpus.id
        compatible, _ = BCP47Tag.check_compat_swap((bcp47(loaded.source), bcp47(loaded.target)), entry.did.langs)
        assert compatible, corpus.id


BT = "http://data.statmt.org/rsennrich/wmt16_backtranslations/{d}/news.bt.{d}.{lang}.gz"


def test_a_corpus_of_two_files_by_url_is_fetched_cleaned_and_traced(mirror, tmp_path):
    files = {"de": gzipped(lines(["Synthetisch .", "", " Zwei "])), "en": gzipped(lines(["Real .", "Orphan", "Two"]))}
    urls = {lang: BT.format(d="de-en", lang=lang) for lang in files}
    for lang, data in files.items():
        mirror.put(urls[lang], data)
    corpus = CorpusConfig(name="back-translations", files=urls, checksums={k: digest(v) for k, v in files.items()})
    out = build_training_corpus("de-en", ("en", "de"), [corpus], Fetcher(tmp_path, mirror=mirror.url))
    assert list(read_lines(out["de"])) == ["Synthetisch .", "Zwei"] and list(read_lines(out["en"])) == ["Real .", "Two"]
    row = (out["en"].parent / "train.sources.tsv").read_text().splitlines()[1].split("\t")
    assert row == ["1", "2", "2", "back-translations", "-", f"{urls['en']};{urls['de']}",
                   f"{digest(files['en'])};{digest(files['de'])}", "-", "1"]

    short = {"de": gzipped(lines(["eins", "zwei"])), "en": gzipped(lines(["one"]))}
    other = {lang: BT.format(d="en-de", lang=lang) for lang in short}
    for lang, data in short.items():
        mirror.put(other[lang], data)
    uneven = CorpusConfig(name="uneven", files=other, checksums={k: digest(v) for k, v in short.items()})
    with pytest.raises(DataError, match=r"news\.bt\.en-de\.en\.gz: ends at line 1, before the de side's"):
        build_training_corpus("de-en", ("de", "en"), [uneven], Fetcher(tmp_path / "c2", mirror=mirror.url))


def test_the_german_tasks_add_the_back_translations_of_their_own_direction(tmp_path):
    for task, direction in (("ger-eng", "de-en"), ("eng-ger", "en-de")):
        files = [c.files for c in config.load_task(task).corpora if c.files]
        assert files == [{lang: BT.format(d=direction, lang=lang) for lang in ("de", "en")}], task
    folder = tmp_path / "configs"
    shutil.copytree(config.CONFIG_DIR, folder)
    path = folder / "tasks" / "ger-eng.toml"
    path.write_text(path.read_text().replace('checksums = { de = "", en = "" }',
                                             'checksums = { de = "", en = "" }\nid = "Tilde-rapid-2016-deu-eng"'))
    with pytest.raises(config.ConfigError, match=r"corpora\[4\]' must name either an mtdata id or the files"):
        config.load_task("ger-eng", folder)
