"""The data stage with training corpora by name: a profile whose train_source is "corpora" reads the task's
[[corpora]], fetched from a loopback mirror, instead of the data folder's training split."""
from __future__ import annotations

import re

import pytest
from luigi.execution_summary import LuigiStatusCode

from pipeline.config import CONFIG_DIR
from pipeline.data.corpora import mtdata_entry
from pipeline.io import read_lines
from tasks import TokenizeSplit
from tests.pipeline.data.conftest import digest, forbid_network, lines, serve, tgz
from tests.pipeline.test_config import copy_configs
from tests.tasks.helpers import build, shared_params

EUROPARL = "Statmt-europarl_wmt13-7-deu-eng"
PAIRS = [("Wiederaufnahme der Sitzungsperiode .", "Resumption of the session ."), ("Guten Tag !", "Good day !")]


def corpora_configs(folder, checksum: str):
    """The configs with tiny's train_source "corpora" and ger-eng's training corpora cut to Europarl v7."""
    configs = copy_configs(folder)
    profile = configs / "profiles" / "tiny.toml"
    profile.write_text(re.sub(r'^train_source = "folder"', 'train_source = "corpora"', profile.read_text(), flags=re.M))
    task = configs / "tasks" / "ger-eng.toml"
    head = task.read_text().split("[[corpora]]")[0]
    task.write_text(head + f'[[corpora]]\nid = "{EUROPARL}"\nname = "Europarl v7"\nchecksum = "{checksum}"\n')
    return configs


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A loopback mirror, with every other host forbidden: it also runs where the suite runs with MT_OFFLINE=1."""
    forbid_network(monkeypatch)
    monkeypatch.delenv("MT_OFFLINE", raising=False)
    with serve(tmp_path / "mirror") as served:
        yield served


def test_the_training_split_of_a_corpora_profile_comes_from_the_named_corpora(tmp_path, data_dir, mirror,
                                                                             monkeypatch):
    entry = mtdata_entry(EUROPARL, tmp_path / "cache")
    de, en = entry.in_paths
    archive = tgz({de: lines([d for d, _ in PAIRS]), en: lines([e for _, e in PAIRS])})
    mirror.put(entry.url, archive)
    monkeypatch.setenv("MT_DOWNLOAD_MIRROR", mirror.url)
    params = shared_params(tmp_path, data_dir, config_dir=corpora_configs(tmp_path / "configs", digest(archive)))
    train, dev = TokenizeSplit(split="train", **params), TokenizeSplit(split="dev", **params)
    assert build(train, dev).status == LuigiStatusCode.SUCCESS
    assert list(read_lines(train.artifact_dir() / "raw.de.gz")) == [d for d, _ in PAIRS]
    assert list(read_lines(train.artifact_dir() / "raw.en.gz")) == [e for _, e in PAIRS]
    assert train.signature()["params"]["corpora"] == [[EUROPARL, digest(archive)]]
    assert "/corpora/" in train.signature()["stats"]["files"]["de"]["path"]
    assert len(list(read_lines(dev.artifact_dir() / "raw.de.gz"))) == 40  # other splits: the data folder, as before
    folder = TokenizeSplit(split="dev", **{**params, "config_dir": str(CONFIG_DIR)})
    assert folder.artifact_dir().name == dev.artifact_dir().name  # train_source leaves their ids alone
