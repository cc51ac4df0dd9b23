"""Data preparation stages: tokenize a split, truecase, learn and apply BPE, build the NMT vocabularies."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import luigi

from pipeline.data.prepare import prepare_split
from pipeline.data.resolver import DataResolver
from pipeline.io import read_lines, sha256_file, write_lines
from pipeline.text import BpeSegmenter, Truecaser, learn_bpe
from pipeline.vocab import Vocabulary
from tasks.base import PipelineTask


def split_role(task: PipelineTask, split: str) -> str:
    splits = task.config.splits
    return "train" if split == splits.train else "tune" if split == splits.tune else "eval"


def token_lines(path: Path):
    for line in read_lines(path):
        yield line.split()


class SplitTask(PipelineTask):
    """A stage applied to one split of the task's data."""

    split = luigi.Parameter(description="split name from the task config: train, dev, newstest2016, test, ...")

    def label(self) -> str:
        return self.split

    def languages(self) -> tuple[str, str]:
        return self.config.source, self.config.target


class TokenizeSplit(SplitTask):
    """Raw and tokenized text of a split; training data subsampled and cleaned, other sets only cut."""

    stage = "tokenized"

    def reads_corpora(self) -> bool:
        """The training split of a profile whose [data] train_source is "corpora": the task's [[corpora]]."""
        return (split_role(self, self.split) == "train"
                and self.config.data_for(self.profile_config).train_source == "corpora")

    def params(self) -> dict[str, Any]:
        config, profile = self.config, self.profile_config
        role = split_role(self, self.split)
        params = {
            "split": self.split,
            "role": role,
            "pair": config.pair,
            "tokenizers": {lang: config.languages[lang].tokenizer for lang in self.languages()},
            "data": config.data_for(profile).hashed(),
            "seed": profile.seed,
        }
        if self.reads_corpora():
            params["corpora"] = [corpus.key() for corpus in config.corpora]
        if self.split in config.sacrebleu:  # read by sacrebleu's own reader when not in the data folder
            params["sacrebleu"] = config.sacrebleu[self.split]
        return params

    def build(self, out: Path) -> dict[str, Any]:
        resolver = DataResolver.create(self.data_dir, self.cache_dir, profile=self.profile)
        if self.reads_corpora():
            paths = resolver.corpora(self.config)
        else:
            paths = resolver.resolve(self.config, self.split)
        data = self.config.data_for(self.profile_config)
        stats = prepare_split(paths, self.config.languages, split_role(self, self.split), data,
                              self.profile_config.seed, out, workers=self.processes,
                              cache_dir=Path(self.cache_dir) / "tokenizers")
        stats["files"] = {lang: {"path": str(p), "sha256": sha256_file(p)} for lang, p in paths.items()}
        return stats


class TrainTruecaser(PipelineTask):
    """Truecasing models learned on the tokenized training data, for the languages whose script has case."""

    stage = "truecaser"

    def requires(self) -> TokenizeSplit:
        return self.clone(TokenizeSplit, split=self.config.splits.train)

    def cased_languages(self) -> list[str]:
        return [lang for lang in (self.config.source, self.config.target) if self.config.languages[lang].truecase]

    def params(self) -> dict[str, Any]:
        return {"languages": self.cased_languages()}

    def build(self, out: Path) -> dict[str, Any]:
        stats = {}
        for lang in self.cased_languages():
            model = Truecaser.train(token_lines(self.input_dir() / f"tok.{lang}.gz"))
            model.save(out / f"truecase.{lang}.json")
            stats[lang] = "trained"
        return stats


def load_truecaser(truecaser_dir: Path, lang: str) -> Truecaser | None:
    path = truecaser_dir / f"truecase.{lang}.json"
    return Truecaser.load(path) if path.is_file() else None


class TruecaseSplit(SplitTask):
    """Truecased words of a split (the word level of the SMT system and the KenLM model)."""

    stage = "truecased"

    def requires(self) -> dict[str, PipelineTask]:
        return {"text": self.clone(TokenizeSplit), "truecaser": self.clone(TrainTruecaser)}

    def params(self) -> dict[str, Any]:
        return {"split": self.split}

    def build(self, out: Path) -> dict[str, Any]:
        text_dir = self.requires()["text"].artifact_dir()
        truecaser_dir = self.requires()["truecaser"].artifact_dir()
        for lang in self.languages():
            truecaser = load_truecaser(truecaser_dir, lang)
            lines = token_lines(text_dir / f"tok.{lang}.gz")
            words = (truecaser.truecase(t) if truecaser else t for t in lines)
            write_lines(out / f"words.{lang}.gz", (" ".join(w) for w in words))
        return {}


class LearnBPE(PipelineTask):
    """BPE codes learned on the truecased training words: one joint code set, or one per language."""

    stage = "bpe"

    def requires(self) -> TruecaseSplit:
        return self.clone(TruecaseSplit, split=self.config.splits.train)

    def params(self) -> dict[str, Any]:
        bpe = self.profile_config.bpe
        return {"joint": self.config.bpe.joint, "merges": bpe.merges, "min_frequency": bpe.min_frequency}

    def build(self, out: Path) -> dict[str, Any]:
        langs = (self.config.source, self.config.target)
        words = {lang: self.input_dir() / f"words.{lang}.gz" for lang in langs}
        bpe = self.profile_config.bpe
        if self.config.bpe.joint:
            lines = (line for lang in langs for line in read_lines(words[lang]))
            learn_bpe(lines, bpe.merges, out / "codes.joint", min_frequency=bpe.min_frequency)
            for lang in langs:
                shutil.copyfile(out / "codes.joint", out / f"codes.{lang}")
        else:
            for lang in langs:
                learn_bpe(read_lines(words[lang]), bpe.merges, out / f"codes.{lang}", min_frequency=bpe.min_frequency)
        return {}


class ApplyBPE(SplitTask):
    """Subword units of a split: the NMT's input and output units."""

    stage = "subwords"

    def requires(self) -> dict[str, PipelineTask]:
        return {"words": self.clone(TruecaseSplit), "codes": self.clone(LearnBPE)}

    def params(self) -> dict[str, Any]:
        return {"split": self.split}

    def build(self, out: Path) -> dict[str, Any]:
        words_dir = self.requires()["words"].artifact_dir()
        codes_dir = self.requires()["codes"].artifact_dir()
        stats = {}
        for lang in self.languages():
            segmenter = BpeSegmenter(codes_dir / f"codes.{lang}")
            n = write_lines(out / f"bpe.{lang}.gz",
                            (" ".join(segmenter.segment(t)) for t in token_lines(words_dir / f"words.{lang}.gz")))
            stats[f"lines.{lang}"] = n
        return stats


class BuildVocab(PipelineTask):
    """The NMT vocabularies of both languages, from the subword training data."""

    stage = "vocab"

    def requires(self) -> ApplyBPE:
        return self.clone(ApplyBPE, split=self.config.splits.train)

    def build(self, out: Path) -> dict[str, Any]:
        stats = {}
        for lang in (self.config.source, self.config.target):
            vocab = Vocabulary.build(token_lines(self.input_dir() / f"bpe.{lang}.gz"))
            vocab.save(out / f"vocab.{lang}.json")
            stats[f"size.{lang}"] = len(vocab)
        return stats
