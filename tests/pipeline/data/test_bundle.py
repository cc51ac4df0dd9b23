import dataclasses
import random
from pathlib import Path

import pytest

from pipeline import config
from pipeline.data.bundle import (BUNDLE_DIR, CHECKSUMS, bundle_dir, bundle_profile, read_checksums, remap_sources,
                                  split_roles, verify_bundle)
from pipeline.data.corpus import read_parallel
from pipeline.data.prepare import select
from pipeline.data.resolver import DataResolver
from pipeline.errors import DataError
from pipeline.io import count_lines
from tests.conftest import write_deen_folder

SOURCES = "first_line\tlast_line\tn_lines\tblock\trepository\tcommit\tpaths\n" \
          "1\t120\t120\tblock A\towner/a\tc1\ta.de;a.en\n" \
          "121\t121\t1\tblock B\towner/b\tc2\tb.de;b.en\n" \
          "122\t300\t179\tblock C\towner/c\tc3\tc.de;c.en\n"


def small_profile(train_pairs: int = 37, tune: int = 11, eval_: int = 7) -> config.Profile:
    tiny = config.load_profile("tiny")
    return dataclasses.replace(tiny, data=dataclasses.replace(tiny.data, train_pairs=train_pairs,
                                                              tune_sentences=tune, eval_sentences=eval_))


@pytest.fixture
def full_folder(tmp_path: Path) -> Path:
    folder = write_deen_folder(tmp_path / "full")
    (folder / "de-en" / "train.sources.tsv").write_text(SOURCES, encoding="utf-8")
    return folder


def test_remap_sources_counts_the_chosen_lines_of_each_block():
    rows = [{"first_line": "1", "last_line": "4", "block": "a"}, {"first_line": "5", "last_line": "5", "block": "b"},
            {"first_line": "6", "last_line": "10", "block": "c"}]
    rows = [{**r, "n_lines": "", "repository": "r", "commit": "c", "paths": "p"} for r in rows]
    rng = random.Random(3)
    for _ in range(50):
        chosen = sorted(rng.sample(range(10), rng.randint(0, 10)))
        out = remap_sources(rows, chosen)
        expected = [(r["block"], sum(int(r["first_line"]) - 1 <= i <= int(r["last_line"]) - 1 for i in chosen))
                    for r in rows]
        assert [(o[3], int(o[2])) for o in out] == [e for e in expected if e[1]]
        assert [int(o[0]) for o in out] == [1 + sum(int(p[2]) for p in out[:k]) for k in range(len(out))]
        assert all(int(o[1]) - int(o[0]) + 1 == int(o[2]) for o in out)


def test_bundle_holds_exactly_the_lines_the_profile_reads(full_folder, tmp_path):
    profile = small_profile()
    tasks = [config.load_task("ger-eng"), config.load_task("eng-ger")]  # one pair, both directions
    into = tmp_path / "bundle"
    bundle_profile(profile, tasks, full_folder, into)
    for split, role in split_roles(tasks[0]).items():
        full = read_parallel(full_folder / "de-en" / f"{split}.de.gz", full_folder / "de-en" / f"{split}.en.gz")
        chosen = select(role, len(full[0]), profile.data, profile.seed)
        bundled = read_parallel(into / "de-en" / f"{split}.de.gz", into / "de-en" / f"{split}.en.gz")
        assert bundled == ([full[0][i] for i in chosen], [full[1][i] for i in chosen])
        # read again by the pipeline, the bundle selects every line, in order: the same text as the full folder
        assert select(role, len(bundled[0]), profile.data, profile.seed) == list(range(len(bundled[0])))
    assert count_lines(into / "de-en" / "train.de.gz") == 37
    assert count_lines(into / "de-en" / "dev.de.gz") == 11 and count_lines(into / "de-en" / "newstest2016.de.gz") == 7
    blocks = (into / "de-en" / "train.sources.tsv").read_text().splitlines()[1:]
    assert sum(int(b.split("\t")[2]) for b in blocks) == 37
    assert set(read_checksums(into)) == {"de-en/train.de.gz", "de-en/train.en.gz", "de-en/dev.de.gz",
                                         "de-en/dev.en.gz", "de-en/newstest2016.de.gz", "de-en/newstest2016.en.gz",
                                         "de-en/train.sources.tsv"}
    verify_bundle(into)


def test_a_changed_bundle_file_is_an_error_naming_it(full_folder, tmp_path):
    into = tmp_path / "bundle"
    bundle_profile(small_profile(), [config.load_task("ger-eng")], full_folder, into)
    (into / "de-en" / "dev.en.gz").write_bytes(b"not the bundled data")
    with pytest.raises(DataError, match=r"de-en/dev.en.gz: sha256 .* differs"):
        verify_bundle(into)
    resolver = DataResolver(None, tmp_path / "cache", offline=True, bundle=into)
    with pytest.raises(DataError, match="dev.en.gz"):
        resolver.resolve(config.load_task("ger-eng"), "dev")
    (into / CHECKSUMS).write_text("abc  de-en/dev.en.gz\n")
    with pytest.raises(DataError, match=r"SHA256SUMS, line 1"):
        read_checksums(into)


def test_resolver_reads_the_data_folder_first_then_the_bundle(full_folder, tmp_path):
    into = tmp_path / "bundle"
    task = config.load_task("ger-eng")
    bundle_profile(small_profile(), [task], full_folder, into)
    bundled = DataResolver(None, tmp_path / "cache", offline=True, bundle=into).resolve(task, "train")
    assert bundled == {"de": into / "de-en/train.de.gz", "en": into / "de-en/train.en.gz"}
    chosen = DataResolver(full_folder, tmp_path / "cache", offline=True, bundle=into).resolve(task, "train")
    assert chosen["de"] == full_folder / "de-en/train.de.gz"


def test_bundle_refuses_two_directions_that_select_differently(full_folder, tmp_path):
    profile = small_profile()
    ger_eng, eng_ger = config.load_task("ger-eng"), config.load_task("eng-ger")
    eng_ger = dataclasses.replace(eng_ger, train_pairs={profile.name: 5})  # a cap for one direction only
    with pytest.raises(DataError, match="cannot serve both"):
        bundle_profile(profile, [ger_eng, eng_ger], full_folder, tmp_path / "bundle")


# -- the repository's own bundle: the tiny profile runs from a clone with no data folder -----------------------------

def test_the_tiny_profile_has_its_data_in_the_repository():
    folder = bundle_dir("tiny")
    assert folder == BUNDLE_DIR / "tiny"
    verify_bundle(folder)
    assert bundle_dir("medium") is None  # the medium profile's data comes by name (or from a data folder)


@pytest.mark.parametrize("name", config.available("tasks"))
def test_every_task_of_the_tiny_profile_resolves_offline_from_the_bundle(name, tmp_path):
    profile, task = config.load_profile("tiny"), config.load_task(name)
    resolver = DataResolver.create(None, tmp_path / "cache", env={"MT_OFFLINE": "1"}, profile="tiny")
    data = task.data_for(profile)
    for split, role in split_roles(task).items():
        paths = resolver.resolve(task, split)
        assert all(p.parent == BUNDLE_DIR / "tiny" / task.pair for p in paths.values())
        lines = count_lines(paths[task.source])
        limit = {"train": data.train_pairs, "tune": data.tune_sentences, "eval": data.eval_sentences}[role]
        assert lines == limit  # the profile's whole selection (every source set is longer than it)
