"""Translation-task configs (`configs/tasks/<name>.toml`): languages, data splits, tokenizers, BPE and LM order,
as frozen dataclasses, and the checks that need more than one key."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.config.toml_tables import build_dataclass
from pipeline.errors import ConfigError

if TYPE_CHECKING:
    from pipeline.config.profile_settings import DataProfile, GruProfile, Profile, TransformerProfile

TOKENIZERS = ("moses", "jieba", "mecab")
CHECKSUM_ALGORITHMS = ("md5", "sha1", "sha256")
ARCHIVE_FORMATS = ("sgm", "text")


@dataclass(frozen=True)
class LanguageConfig:
    tokenizer: str  # one of TOKENIZERS
    truecase: bool  # only where the script has case


@dataclass(frozen=True)
class SplitsConfig:
    train: str
    tune: str  # tuning: MERT, the LMBR grid, NMT validation
    devtest: tuple[str, ...]  # development test sets; the first is the default evaluation set
    test: str  # the official test set of the paper's table (withheld from development: fetched by name only when a run asks for it)


@dataclass(frozen=True)
class DownloadConfig:
    """Where the official files of a split come from when they are not in the data folder."""

    url: str
    checksum: str  # "<algorithm>:<hex digest>" of the downloaded archive
    format: str  # "sgm" (WMT SGML, text of <seg> elements) or "text" (one segment a line)
    files: dict[str, str]  # language -> path of the member inside the archive
    official: str = ""  # human-readable name of the data set


@dataclass(frozen=True)
class CorpusConfig:
    """A training corpus by name (pipeline/data/corpora.py): an mtdata id and the checksum of its file, or the URLs
    of its two line-aligned gzip text files (one segment a line) and their checksums."""

    name: str  # human-readable name, for messages and train.sources.tsv
    id: str = ""  # mtdata dataset id, <group>-<name>-<version>-<lang1>-<lang2> (`mtdata list -id`)
    checksum: str = ""  # "<algorithm>:<hex digest>" of the fetched file; "" until a first fetch prints its sha256
    files: dict[str, str] = field(default_factory=dict)  # {language: URL of a gzip text file}, instead of an id
    checksums: dict[str, str] = field(default_factory=dict)  # {language: checksum of that file, "" until known}

    def key(self) -> list:
        """What identifies the corpus's data in artifact hashes (an mtdata corpus: [id, checksum], as before)."""
        if self.id:
            return [self.id, self.checksum]
        return [sorted(self.files.items()), sorted(self.checksums.items())]


@dataclass(frozen=True)
class BpeTaskConfig:
    joint: bool  # one code set for both languages (same script) or one per language


@dataclass(frozen=True)
class LmTaskConfig:
    order: int


@dataclass(frozen=True)
class PretrainedTaskConfig:
    """A `transformers` translation model for the task's systems with a pretrained NMT (pipeline/nmt/pretrained.py).

    model: a hub name ("Helsinki-NLP/opus-mt-de-en": found in the Hugging Face cache, or fetched where the hub is
    reachable), or a model folder: a path starting with "/", "./", "../" or "~" (a relative one is relative to the
    checkout); "" for none.
    """

    model: str = ""
    # BuildPretrainedLMatrix fails above these shares: lattice words the model cannot spell (an <unk> piece), and
    # checked lattice paths whose units differ from the tokenizer's encoding of their text
    max_unknown_rate: float = 0.01
    max_mismatch_rate: float = 0.05

    def location(self, checkout: Path) -> str | Path | None:
        """The model as load_pretrained and model_folder take it: a folder's Path, a hub name, or None."""
        if not self.model:
            return None
        if self.model.startswith(("/", "~")):
            return Path(self.model).expanduser()
        if self.model.startswith(("./", "../")):
            return (Path(checkout) / self.model).resolve()
        return self.model


@dataclass(frozen=True)
class TaskConfig:
    name: str
    description: str
    source: str
    target: str
    pair: str  # folder in the data directory, shared by both directions (de-en serves ger-eng and eng-ger)
    splits: SplitsConfig
    languages: dict[str, LanguageConfig]
    bpe: BpeTaskConfig
    lm: LmTaskConfig
    downloads: dict[str, DownloadConfig] = field(default_factory=dict)
    sacrebleu: dict[str, str] = field(default_factory=dict)  # split -> sacrebleu test set (its <source>-<target>)
    corpora: tuple[CorpusConfig, ...] = ()  # training corpora by name, read when the profile's train_source says so
    train_pairs: dict[str, int] = field(default_factory=dict)  # profile name -> at most this many training pairs
    # profile name -> architecture (gru, transformer) -> settings of that profile's [nmt.<architecture>] replaced
    # for this task (a table as the profile's, `training` nested; what it leaves out stays the profile's)
    nmt: dict[str, dict[str, dict]] = field(default_factory=dict)
    pretrained: PretrainedTaskConfig = field(default_factory=PretrainedTaskConfig)  # a pretrained NMT, if any
    path: Path = Path()

    def data_for(self, profile: "Profile") -> "DataProfile":
        """The profile's data settings for this task: its train_pairs capped by this task's [train_pairs] entry for
        the profile (the profile's own value when no cap applies, so that other tasks' artifacts keep their ids)."""
        cap = self.train_pairs.get(profile.name, 0)
        data = profile.data
        if cap and (data.train_pairs == 0 or data.train_pairs > cap):
            return dataclasses.replace(data, train_pairs=cap)
        return data

    def nmt_for(self, profile: "Profile", architecture: str) -> "GruProfile | TransformerProfile":
        """The profile's settings of one NMT architecture for this task: the profile's [nmt.<architecture>] with this
        task's [nmt.<profile>.<architecture>] entries in their place (the profile's own settings when the task has
        none, so that other tasks' models keep their ids). ConfigError naming the task file and key for a wrong
        type or an out-of-range value."""
        arch = getattr(profile.nmt, architecture)
        table = self.nmt.get(profile.name, {}).get(architecture)
        if not table:
            return arch
        prefix = f"nmt.{profile.name}.{architecture}"
        merged = build_dataclass(type(arch), _replaced(_as_table(arch), table), self.path, prefix + ".")
        replaced = dataclasses.replace(profile.nmt, **{architecture: merged})
        for key, problem in replaced.problems():
            if key.startswith(architecture + "."):
                raise ConfigError(f"{self.path}: key 'nmt.{profile.name}.{key}' {problem}")
        return merged

    def split_names(self) -> tuple[str, ...]:
        """Every split the config names, train first."""
        names = [self.splits.train, self.splits.tune, *self.splits.devtest, self.splits.test]
        return tuple(dict.fromkeys(names))

    def split_key(self, split: str) -> str:
        """The config key that names `split` (for error messages)."""
        for key in ("train", "tune", "test"):
            if getattr(self.splits, key) == split:
                return f"splits.{key}"
        if split in self.splits.devtest:
            return "splits.devtest"
        raise ConfigError(f"{self.path}: split {split!r} is not named in [splits] "
                          f"(known: {', '.join(self.split_names())})")



def _as_table(settings: object) -> dict:
    """A settings dataclass as the TOML table it was read from (tuples as lists)."""
    def table(value):
        if isinstance(value, dict):
            return {k: table(v) for k, v in value.items()}
        return list(value) if isinstance(value, tuple) else value
    return table(dataclasses.asdict(settings))


def _replaced(table: dict, replacements: dict) -> dict:
    """`table` with the entries of `replacements` in place (nested tables merged key by key)."""
    merged = dict(table)
    for key, value in replacements.items():
        merged[key] = (_replaced(table[key], value) if isinstance(value, dict) and isinstance(table.get(key), dict)
                       else value)
    return merged


def check_task(config: TaskConfig) -> None:
    """Checks across keys: names, languages, tokenizers, splits, downloads, [sacrebleu] and [[corpora]]."""
    path = config.path
    if config.path.stem != config.name:
        raise ConfigError(f"{path}: key 'name' is {config.name!r} but the file is named {path.stem!r}")
    for lang in (config.source, config.target):
        if lang not in config.languages:
            raise ConfigError(f"{path}: key 'languages.{lang}' is missing (needed for the {lang!r} side)")
    for lang, language in config.languages.items():
        if language.tokenizer not in TOKENIZERS:
            raise ConfigError(
                f"{path}: key 'languages.{lang}.tokenizer' is {language.tokenizer!r} (known: {', '.join(TOKENIZERS)})"
            )
    if not config.splits.devtest:
        raise ConfigError(f"{path}: key 'splits.devtest' must name at least one development test set")
    if config.lm.order < 1:
        raise ConfigError(f"{path}: key 'lm.order' must be at least 1")
    model = config.pretrained.model
    if model and (model != model.strip() or any(c.isspace() for c in model) or
                  (not model.startswith(("/", "./", "../", "~")) and model.count("/") > 1)):
        raise ConfigError(f"{path}: key 'pretrained.model' is {model!r}: a hub name (owner/name) or a folder "
                          "(starting with /, ./, ../ or ~)")
    for split, download in config.downloads.items():
        key = f"downloads.{split}"
        algorithm, _, digest = download.checksum.partition(":")
        if algorithm not in CHECKSUM_ALGORITHMS or not digest:
            raise ConfigError(f"{path}: key '{key}.checksum' must be '<{'|'.join(CHECKSUM_ALGORITHMS)}>:<hex digest>'")
        if download.format not in ARCHIVE_FORMATS:
            raise ConfigError(f"{path}: key '{key}.format' must be one of {', '.join(ARCHIVE_FORMATS)}")
        missing = {config.source, config.target} - set(download.files)
        if missing:
            raise ConfigError(f"{path}: key '{key}.files' lacks the language(s) {', '.join(sorted(missing))}")
    check_named_data(config)


def check_named_data(config: TaskConfig) -> None:
    """[sacrebleu] names test sets sacrebleu has for the task's direction, each split fetched one way only;
    [[corpora]] lists distinct ids with checksums of the right form."""
    path, langpair = config.path, f"{config.source}-{config.target}"
    if config.sacrebleu:
        from sacrebleu.dataset import DATASETS

        for split, name in config.sacrebleu.items():
            config.split_key(split)  # a split named in [splits]
            if split in config.downloads:
                raise ConfigError(f"{path}: split {split!r} is in both [sacrebleu] and [downloads]: keep one")
            if name not in DATASETS or langpair not in DATASETS[name].langpairs:
                raise ConfigError(f"{path}: key 'sacrebleu.{split}': sacrebleu has no test set {name!r} for {langpair}")
    seen = set()
    for i, corpus in enumerate(config.corpora):
        key = f"corpora[{i}]"
        if bool(corpus.id) == bool(corpus.files):
            raise ConfigError(f"{path}: key '{key}' must name either an mtdata id or the files (one URL per language)")
        if corpus.files and set(corpus.files) != {config.source, config.target}:
            raise ConfigError(f"{path}: key '{key}.files' must give one URL for each of {config.source}, {config.target}")
        if set(corpus.checksums) - set(corpus.files):
            raise ConfigError(f"{path}: key '{key}.checksums' names a language that has no file")
        checksums = {f"{key}.checksum": corpus.checksum} | {f"{key}.checksums.{k}": v for k, v in corpus.checksums.items()}
        for where, checksum in checksums.items():
            algorithm, _, digest = checksum.partition(":")
            if checksum and (algorithm not in CHECKSUM_ALGORITHMS or not digest):
                raise ConfigError(f"{path}: key '{where}' must be '' (not known yet) or "
                                  f"'<{'|'.join(CHECKSUM_ALGORITHMS)}>:<hex digest>'")
        identity = corpus.id or corpus.name
        if identity in seen:
            raise ConfigError(f"{path}: key '{key}': {identity} is listed twice")
        seen.add(identity)
