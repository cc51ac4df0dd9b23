"""Find the files of a split: the data folder, then the profile's bundled data, then the download cache, then the
pair's data recipe, then the official download.

The data folder is the `--data-dir` option, else $MT_DATA_DIR (unset: none); its layout is
`<pair>/<split>.<lang>.gz`. The bundled data (`data/<profile>/` in the repository, pipeline/data/bundle.py) and the
cache have the same layout; a bundled file is checked against the bundle's SHA256SUMS before it is read. A split
in none of them is assembled into the cache by the pair's recipe (data/recipe/<pair>.toml, pipeline/data/recipe.py:
the data folder by name, from public repositories at pinned commits) when the recipe has it, else fetched:
through sacrebleu's own data set when the task config names one (`[sacrebleu]`), else from the official archive
of `[downloads.<split>]`. A split found nowhere is an error that names the split and every place looked. The
training corpora by name (`[[corpora]]`, pipeline/data/corpora.py) are built into the cache by `corpora()`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from pipeline.config import TaskConfig
from pipeline.data.bundle import bundle_dir, verify_bundle
from pipeline.data.corpora import build_training_corpus
from pipeline.data.download import extract_split, fetch_archive
from pipeline.data.fetch import MIRROR_ENV, OFFLINE_ENV, DownloadError, Fetcher
from pipeline.data.recipe import RECIPES, assemble, load_recipe
from pipeline.data.testsets import fetch_test_set
from pipeline.errors import DataError

CHECKOUT = Path(__file__).resolve().parents[2]
DATA_DIR_ENV = "MT_DATA_DIR"


def default_data_dir(option: str | os.PathLike | None, env: Mapping[str, str] = os.environ) -> Path | None:
    """The data folder: the option, else $MT_DATA_DIR, else none."""
    if option:
        return Path(option)
    if env.get(DATA_DIR_ENV):
        return Path(env[DATA_DIR_ENV])
    return None


@dataclass(frozen=True)
class DataResolver:
    data_dir: Path | None
    cache_dir: Path
    offline: bool = False
    mirror: str = ""  # base URL that replaces the original hosts ($MT_DOWNLOAD_MIRROR)
    bundle: Path | None = None  # the profile's data inside the repository (data/<profile>), if it has one
    recipes: Path = RECIPES  # the data recipes (data/recipe/<pair>.toml)

    @classmethod
    def create(cls, data_dir: str | os.PathLike | None, cache_dir: str | os.PathLike,
               env: Mapping[str, str] = os.environ, profile: str = "") -> "DataResolver":
        """`profile`: the profile whose bundled data (data/<profile>) is looked in after the data folder."""
        offline = env.get(OFFLINE_ENV, "") not in ("", "0")
        return cls(default_data_dir(data_dir, env), Path(cache_dir), offline, env.get(MIRROR_ENV, ""),
                   bundle_dir(profile) if profile else None)

    def fetcher(self) -> Fetcher:
        return Fetcher(self.cache_dir, mirror=self.mirror, offline=self.offline)

    def corpora(self, task: TaskConfig) -> dict[str, Path]:
        """{language: path} of the training corpus concatenated from the task's [[corpora]] (source first)."""
        return build_training_corpus(task.pair, (task.source, task.target), task.corpora, self.fetcher(),
                                     record_in=str(task.path))

    def resolve(self, task: TaskConfig, split: str) -> dict[str, Path]:
        """{language: path} of the source and target files of `split`."""
        langs = (task.source, task.target)
        looked = []
        for folder in (self.data_dir, self.bundle, self.cache_dir):
            if folder is None:
                continue
            paths = {lang: folder / task.pair / f"{split}.{lang}.gz" for lang in langs}
            if all(p.is_file() for p in paths.values()):
                if folder == self.bundle:
                    verify_bundle(folder, [p.relative_to(folder).as_posix() for p in paths.values()])
                return paths
            looked.append(str(folder / task.pair / f"{split}.{{{','.join(langs)}}}.gz"))
        paths = {lang: self.cache_dir / task.pair / f"{split}.{lang}.gz" for lang in langs}
        reason = "no official download is configured for it"
        try:
            recipe = load_recipe(task.pair, self.recipes).get(split)
            if recipe is not None:
                return assemble(recipe, langs, self.fetcher(), self.cache_dir)
            if split in task.sacrebleu:
                fetch_test_set(task.sacrebleu[split], task.source, task.target, paths, self.fetcher())
                return paths
            if split in task.downloads:
                extract_split(fetch_archive(task.downloads[split], self.fetcher()), task.downloads[split], paths)
                return paths
        except DownloadError as e:
            reason = str(e)
        key = task.split_key(split)
        raise DataError(
            f"split {task.pair}/{split} ({task.path}, key '{key}') was not found; looked in: "
            + "; ".join(looked or ["no data folder is set and the profile has no bundled data"])
            + f"; {reason}. Pass --data-dir or set ${DATA_DIR_ENV} to a folder holding {task.pair}/{split}.<lang>.gz."
        )
