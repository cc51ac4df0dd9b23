"""The data folder by name: a recipe's blocks served from a loopback mirror, assembled and checked."""
from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path

import pytest

from pipeline import config as configs
from pipeline.cli.lmbr import main as lmbr
from pipeline.data.fetch import DownloadError, Fetcher
from pipeline.data.recipe import RECIPES, archive_url, assemble, load_recipe, raw_url
from pipeline.data.resolver import DataResolver
from pipeline.errors import DataError
from tests.pipeline.data.conftest import gzipped, lines, tgz

REPO, COMMIT = "someone/corpora", "0123456789abcdef0123456789abcdef01234567"
NEWS = {"de": ["Guten Tag .", "Wie geht's?"], "en": ["Good day .", "How are you?"]}
TED = {"de": ["Danke &amp; tschüss", "nein"], "en": ["Thanks &amp; bye", "no"]}
LABELLED = {"de": ["eins", "zwei", "drei"], "en": ["one", "two", "three"]}
LABELS = ["keep", "drop", "keep"]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def xml(segments: list[str]) -> bytes:
    segs = "".join(f'<seg id="{i}"> {s} </seg>\n' for i, s in enumerate(segments, 1))
    return f'<?xml version="1.0"?>\n<mteval><doc docid="1">\n{segs}</doc></mteval>\n'.encode()


def zlib9(text: bytes) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as packed:
        packed.write(text)
    return buffer.getvalue()


EXPECTED = {lang: "".join(f"{s}\n" for s in NEWS[lang] + ["Danke & tschüss", "nein"] * (lang == "de")
                          + ["Thanks & bye", "no"] * (lang == "en") + ["eins", "drei"] * (lang == "de")
                          + ["one", "three"] * (lang == "en")).encode() for lang in ("de", "en")}


def upstream() -> dict[str, bytes]:
    """{path in the repository: its bytes}."""
    files = {f"news.{lang}": lines(NEWS[lang]).encode() for lang in NEWS}
    files |= {f"ted.{lang}.xml": xml(TED[lang]) for lang in TED}
    files |= {f"tatoeba.{lang}.gz": gzipped(lines(LABELLED[lang])) for lang in LABELLED}
    files["tatoeba.labels"] = lines(LABELS).encode()
    return files


def write_recipe(folder: Path, files: dict[str, bytes], text_sha: dict | None = None, news_lines: int = 2) -> Path:
    text_sha = text_sha or {lang: sha(EXPECTED[lang]) for lang in EXPECTED}

    def pair_of(stem: str) -> str:
        return (f'paths = {{ de = "{stem.format(lang="de")}", en = "{stem.format(lang="en")}" }}\n'
                f'sha256 = {{ de = "{sha(files[stem.format(lang="de")])}", en = "{sha(files[stem.format(lang="en")])}" }}\n')

    block = f'\n[[files.blocks]]\nrepository = "{REPO}"\ncommit = "{COMMIT}"\n'
    recipe = (
        'pair = "de-en"\nlanguages = ["de", "en"]\n\n[[files]]\nsplit = "train"\nlines = 6\ngzip = "zlib"\n'
        f'sha256 = {{ de = "{sha(zlib9(EXPECTED["de"]))}", en = "{sha(zlib9(EXPECTED["en"]))}" }}\n'
        f'text_sha256 = {{ de = "{text_sha["de"]}", en = "{text_sha["en"]}" }}\nsources_table = true\n'
        + block + f'name = "news"\nformat = "text"\nlines = {news_lines}\n' + pair_of("news.{lang}")
        + block + 'name = "ted"\nformat = "iwslt-xml"\nlines = 2\n' + pair_of("ted.{lang}.xml")
        + block + 'name = "tatoeba"\nformat = "gzip-text"\nlines = 2\n' + pair_of("tatoeba.{lang}.gz")
        + f'keep_where = {{ labels = "tatoeba.labels", sha256 = "{sha(files["tatoeba.labels"])}", equals = "keep" }}\n'
    )
    if news_lines != 2:
        recipe = recipe.replace("lines = 6", f"lines = {4 + news_lines}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "de-en.toml").write_text(recipe)
    return folder


@pytest.fixture
def served(mirror):
    files = upstream()
    for path, data in files.items():
        mirror.put(raw_url(REPO, COMMIT, path), data)
    return mirror, files


def test_blocks_are_fetched_read_and_concatenated_into_the_recipes_text(served, tmp_path):
    mirror, files = served
    recipe = load_recipe("de-en", write_recipe(tmp_path / "recipes", files))["train"]
    out = assemble(recipe, ("de", "en"), Fetcher(tmp_path / "cache", mirror=mirror.url), tmp_path / "cache")
    for lang in ("de", "en"):
        assert gzip.decompress(out[lang].read_bytes()) == EXPECTED[lang]
        assert out[lang].read_bytes() == zlib9(EXPECTED[lang])  # the recorded compressor: the published bytes
    table = (tmp_path / "cache" / "de-en" / "train.sources.tsv").read_text().splitlines()
    assert table[1:] == [f"1\t2\t2\tnews\t{REPO}\t{COMMIT}\tnews.de;news.en",
                         f"3\t4\t2\tted\t{REPO}\t{COMMIT}\tted.de.xml;ted.en.xml",
                         f"5\t6\t2\ttatoeba\t{REPO}\t{COMMIT}\ttatoeba.de.gz;tatoeba.en.gz;tatoeba.labels"]
    requests = len(mirror.requests)
    assemble(recipe, ("de", "en"), Fetcher(tmp_path / "cache", offline=True), tmp_path / "cache")  # already there
    assert len(mirror.requests) == requests


def test_offline_the_error_names_every_block_its_url_and_the_file_to_place(served, tmp_path):
    _, files = served
    recipe = load_recipe("de-en", write_recipe(tmp_path / "recipes", files))["train"]
    with pytest.raises(DownloadError) as e:
        assemble(recipe, ("de", "en"), Fetcher(tmp_path / "cache", offline=True), tmp_path / "cache")
    message = str(e.value)
    for name, path in (("news", "news.de"), ("ted", "ted.en.xml"), ("tatoeba", "tatoeba.labels")):
        assert f"block '{name}' of de-en/train" in message
        assert raw_url(REPO, COMMIT, path) in message
    assert f"place the file tatoeba.labels by hand in {tmp_path / 'cache' / 'downloads'}" in message
    assert not (tmp_path / "cache" / "de-en" / "train.de.gz").exists()


def test_a_changed_upstream_file_or_text_is_refused_and_nothing_is_written(served, tmp_path):
    mirror, files = served
    recipe = load_recipe("de-en", write_recipe(tmp_path / "r1", files, {"de": "0" * 64, "en": "0" * 64}))["train"]
    with pytest.raises(DataError, match=r"de-en/train\.de: the assembled text has sha256 .* expects 0{64}"):
        assemble(recipe, ("de", "en"), Fetcher(tmp_path / "cache", mirror=mirror.url), tmp_path / "cache")
    assert not list((tmp_path / "cache" / "de-en").glob("train.*.gz"))

    recipe = load_recipe("de-en", write_recipe(tmp_path / "r2", files, news_lines=3))["train"]
    with pytest.raises(DataError, match=r"block 'news' of de-en/train .*news\.de\): 2 de segments, .* expects 3"):
        assemble(recipe, ("de", "en"), Fetcher(tmp_path / "c2", mirror=mirror.url), tmp_path / "c2")

    mirror.put(raw_url(REPO, COMMIT, "news.en"), b"changed\n")
    recipe = load_recipe("de-en", write_recipe(tmp_path / "r3", files))["train"]
    with pytest.raises(DownloadError, match=r"block 'news' .*news\.en.* but .* is expected"):
        assemble(recipe, ("de", "en"), Fetcher(tmp_path / "c3", mirror=mirror.url), tmp_path / "c3")


def test_kftt_training_articles_are_read_from_the_commits_archive(mirror, tmp_path):
    article = ('<art><tit><j>題</j><e type="check">Title</e></tit><par><sen id="1"><j>雪舟 は|画家</j>'
               '<e type="trans">draft</e><e type="check"> first </e><e type="check">{en}</e></sen></par>'
               '<copyright>broken & not < well-formed</copyright></art>')
    archive = tgz({f"corpus-{COMMIT}/wiki/BDS/BDS0000{i}.xml": article.format(en=f"art {i}") for i in (1, 2, 3, 4, 5)}
                  | {f"corpus-{COMMIT}/wiki/BLD/BLD00010.xml": article.format(en="building")})
    mirror.put(archive_url(REPO, COMMIT), archive)
    text = {"ja": "雪舟は画家\n" * 3, "en": "art 1\nart 5\nbuilding\n"}
    kftt = (f'pair = "ja-en"\nlanguages = ["ja", "en"]\n[[files]]\nsplit = "train"\nlines = 3\ngzip = "zlib"\n'
            f'sha256 = {{ ja = "{"0" * 64}", en = "{"0" * 64}" }}\n'
            f'text_sha256 = {{ ja = "{sha(text["ja"].encode())}", en = "{sha(text["en"].encode())}" }}\n'
            'sources_table = false\n'
            + "".join(f'[[files.blocks]]\nname = "{c}"\nrepository = "{REPO}"\ncommit = "{COMMIT}"\n'
                      f'format = "kftt-xml"\nlines = {n}\ndirectory = "wiki/{c}"\n' for c, n in (("BDS", 2), ("BLD", 1))))
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "ja-en.toml").write_text(kftt)
    recipe = load_recipe("ja-en", tmp_path / "recipes")["train"]
    out = assemble(recipe, ("en", "ja"), Fetcher(tmp_path / "cache", mirror=mirror.url), tmp_path / "cache")
    assert {lang: gzip.decompress(p.read_bytes()).decode() for lang, p in out.items()} == text
    assert sum("codeload.github.com" in r for r in mirror.requests) == 1  # one archive for both folders


def test_the_resolver_assembles_a_split_found_nowhere_else_and_a_data_folder_comes_first(served, tmp_path):
    mirror, files = served
    recipes = write_recipe(tmp_path / "recipes", files)
    task = configs.load_task("ger-eng")
    resolver = DataResolver(None, tmp_path / "cache", mirror=mirror.url, recipes=recipes)
    paths = resolver.resolve(task, "train")
    assert paths == {lang: tmp_path / "cache" / "de-en" / f"train.{lang}.gz" for lang in ("de", "en")}
    assert gzip.decompress(paths["en"].read_bytes()) == EXPECTED["en"]

    local = tmp_path / "data" / "de-en"
    local.mkdir(parents=True)
    for lang in ("de", "en"):
        (local / f"train.{lang}.gz").write_bytes(gzipped("local\n"))
    before = len(mirror.requests)
    found = DataResolver(tmp_path / "data", tmp_path / "empty", mirror=mirror.url, recipes=recipes).resolve(task, "train")
    assert found["de"] == local / "train.de.gz" and len(mirror.requests) == before


def test_the_recipes_give_every_split_the_small_profile_reads():
    for name in configs.available("tasks"):
        task = configs.load_task(name)
        recipe = load_recipe(task.pair, RECIPES)
        for split in (task.splits.train, task.splits.tune, *task.splits.devtest):
            assert split in recipe, f"{name}: {split}"
            assert set(recipe[split].text_sha256) == {task.source, task.target}
    train = load_recipe("ja-en")["train"]
    assert train.lines == 440288 and len(train.blocks) == 15  # KFTT's training split, one block per category


def test_data_fetch_offline_names_the_real_recipes_blocks_and_urls(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MT_OFFLINE", "1")
    monkeypatch.delenv("MT_DATA_DIR", raising=False)
    assert lmbr(["data", "fetch", "--profile", "medium", "--tasks", "chi-eng", "--cache-dir", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert "block 'WMT newstest2018 (zh-en direction)' of zh-en/train" in error
    assert raw_url("Helsinki-NLP/OPUS-MT-testsets", "ac0f19c0be3cb4e0d9450fcb2d7a9847c4bdd180",
                   "testsets/zh-en/newstest2018.zh") in error


def test_data_fetch_prints_where_each_split_was_found(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MT_DATA_DIR", raising=False)
    task = configs.load_task("ger-eng")
    folder = tmp_path / "data" / task.pair
    folder.mkdir(parents=True)
    for split in (task.splits.train, task.splits.tune, *task.splits.devtest):
        for lang in (task.source, task.target):
            (folder / f"{split}.{lang}.gz").write_bytes(gzipped("a\n"))
    assert lmbr(["data", "fetch", "--profile", "medium", "--tasks", "ger-eng", "--data-dir", str(tmp_path / "data"),
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert rows == [["ger-eng", split, str(folder)] for split in ("train", "dev", *task.splits.devtest)]
