"""A pretrained `transformers` translation model ([pretrained] model of the task config, or reproduce-table
--pretrained-model) as the NMT of the PNMT rows: the model as an artifact (its folder and the sha256 of its files,
so that a changed model rebuilds everything downstream), and the L matrices and acceptors of a split's PBMT lattices
in the model's units (lattices/model_shards.py), the stages that replace BuildLMatrix and BuildAcceptors for it.

The decoding stages (tasks/decode.py: DecodePNMT, DecodeLPNMT, DecodePNMTLattice, DecodeLPNMTLattice) and the tuning
stages (tasks/tuning.py, models="PNMT") take the model through :func:`nmt_system`, the source lines raw (the model
reads them through its own tokenizer), and these stages instead of BuildLMatrix and BuildAcceptors.
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import luigi

from lattices.theta import Theta
from pipeline.data.resolver import CHECKOUT
from pipeline.config import PretrainedTaskConfig
from pipeline.errors import PipelineError
from pipeline.io import read_json, write_json
from pipeline.nmt.pretrained import PretrainedModelError, model_folder
from tasks.base import PipelineTask, _setting
from tasks.data import TrainTruecaser
from tasks.lmatrix import BuildAcceptors, BuildLMatrix
from tasks.nmt import NMTSystem

#: The `models` of the tuning stages (and the NMT of the decoding stages) that name the pretrained model.
PRETRAINED = "PNMT"
#: The file of PretrainedModel's artifact: the model's name, its folder and the sha256 of each of its files.
MODEL_FILE = "model.json"


@functools.lru_cache(maxsize=None)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_digests(folder: Path) -> dict[str, str]:
    """{file name: sha256} of every file of a model folder (hidden files left out; a cache snapshot's links are
    followed to their blobs); each file hashed once per process while its size and time stay."""
    digests = {}
    for path in sorted(p for p in Path(folder).iterdir() if p.is_file() and not p.name.startswith(".")):
        stat = path.stat()
        digests[path.name] = _sha256(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    return digests


class PretrainedModel(PipelineTask):
    """model.json: the pretrained model's name, its folder (a hub name: its snapshot in the Hugging Face cache) and
    the sha256 of each of its files, which enter the hash of this artifact and so of everything built with it. The
    model is loaded once here, which checks its tokenizer and languages against the task."""

    stage = "pretrained-model"
    model = luigi.Parameter(default="", config_path=_setting("pretrained_model"),
                            description="a model folder or hub name for every task (reproduce-table "
                                        "--pretrained-model); '': the task config's [pretrained] model")

    def label(self) -> str:
        return "model"

    def location(self) -> str | Path:
        """The model as model_folder takes it; PretrainedModelError when none is named."""
        named = PretrainedTaskConfig(self.model) if self.model else self.config.pretrained
        location = named.location(CHECKOUT)
        if location is None:
            raise PretrainedModelError(f"{self.config.path}: key 'pretrained.model' names no model, and no "
                                       "--pretrained-model was given: the PNMT systems need one")
        return location

    def folder(self) -> Path:
        """The model's folder (a hub name resolved through pipeline/nmt/pretrained.model_folder: offline, the
        Hugging Face cache only). PretrainedModelError names the model, and the config key that names it."""
        if "_folder" not in self.__dict__:
            location = self.location()
            try:
                self.__dict__["_folder"] = model_folder(location)
            except PretrainedModelError as error:
                where = "--pretrained-model" if self.model else f"{self.config.path}: key 'pretrained.model'"
                raise PretrainedModelError(f"{where}: {error}") from error
        return self.__dict__["_folder"]

    def params(self) -> dict[str, Any]:
        return {"model": str(self.location()), "files": folder_digests(self.folder())}

    def build(self, out: Path) -> dict[str, Any]:
        from pipeline.nmt.pretrained import load_pretrained

        folder, files = self.folder(), folder_digests(self.folder())
        loaded = load_pretrained(folder, self.config.source, self.config.target, local_files_only=True)
        write_json(out / MODEL_FILE, {"model": str(self.location()), "folder": str(folder.resolve()), "files": files})
        return {"files": len(files), "bytes": sum((folder / name).stat().st_size for name in files),
                "model_type": loaded.model.model.config.model_type, "target_vocabulary": len(loaded.vocab),
                # what of its generation_config our search follows and what it does not; undeclared languages
                "generation_followed": loaded.generation.followed, "generation_not_followed":
                loaded.generation.not_followed, "languages_declared": loaded.languages_declared}


def model_dir(task: PipelineTask) -> Path:
    """The model folder of a built PretrainedModel."""
    return Path(read_json(task.artifact_dir() / MODEL_FILE)["folder"])


def nmt_system(task: PipelineTask, models: str) -> PipelineTask:
    """The stage of the NMT that decodes: NMTSystem(FNMT|TNMT), or the pretrained model (PRETRAINED)."""
    return task.clone(PretrainedModel) if models == PRETRAINED else task.clone(NMTSystem, system=models)


@dataclass(frozen=True)
class UnitMapping:
    """What maps a split's word lattices into the model's units, in a form a worker process can take: the model's
    folder, the task's languages, the target tokenizer and the truecaser's folder."""

    folder: str
    source: str
    target: str
    tokenizer: str
    tokenizer_cache: str
    truecaser_dir: str

    def mapper(self):
        """The ModelUnitMapper of lattices/model_shards.model_unit_mapper, with the target language's
        postprocessing (detruecase, detokenize) of the PBMT's words."""
        from lattices.model_shards import model_unit_mapper
        from lattices.model_units import LABEL_OFFSET
        from pipeline.nmt.pretrained import load_pretrained
        from pipeline.text import TextProcessor, get_tokenizer
        from tasks.data import load_truecaser

        vocab = load_pretrained(self.folder, self.source, self.target, local_files_only=True,
                                offset=LABEL_OFFSET).vocab
        processor = TextProcessor(tokenizer=get_tokenizer(self.tokenizer, self.target, Path(self.tokenizer_cache)),
                                  truecaser=load_truecaser(Path(self.truecaser_dir), self.target), bpe=None)
        return model_unit_mapper(vocab, lambda words: processor.postprocess(words, subword=False)), len(vocab)

    def encoder(self) -> Callable[[str], list[int]]:
        """The model's tokenizer on target text: text -> its ids, without special tokens."""
        from pipeline.nmt.pretrained import load_pretrained

        tokenizer = load_pretrained(self.folder, self.source, self.target, local_files_only=True).vocab.tokenizer
        return lambda text: list(tokenizer(text_target=text, add_special_tokens=False)["input_ids"])


def _lmatrix_shard(mapping: UnitMapping, paths: list[Path], *settings: Any) -> dict:
    from lattices.model_shards import build_model_lmatrix_shard

    mapper, size = mapping.mapper()
    theta, alpha, semiring, nbest, out_path, order, engine, max_states = settings
    return build_model_lmatrix_shard(paths, mapper, size, theta, alpha, semiring, nbest, out_path, order, engine,
                                     max_states, model=mapping.folder, encode=mapping.encoder())


def _acceptor_shard(mapping: UnitMapping, paths: list[Path], *settings: Any) -> dict:
    from lattices.model_shards import build_model_acceptor_shard

    return build_model_acceptor_shard(paths, mapping.mapper()[0], *settings)


def unit_inputs(task: PipelineTask) -> dict[str, PipelineTask]:
    """What the mapping into the model's units reads besides the lattices: the model and the target truecaser."""
    return {"model": task.clone(PretrainedModel), "truecaser": task.clone(TrainTruecaser)}


def unit_mapping(task: PipelineTask) -> UnitMapping:
    inputs, target = task.requires(), task.config.target
    return UnitMapping(str(model_dir(inputs["model"])), task.config.source, target,
                       task.config.languages[target].tokenizer, str(Path(task.cache_dir) / "tokenizers"),
                       str(inputs["truecaser"].artifact_dir()))


class BuildPretrainedLMatrix(BuildLMatrix):
    """BuildLMatrix in the pretrained model's units: each lattice mapped by lattices/model_units.py (each word's
    pieces in its left context of the detokenized, detruecased text), its posteriors and L over the model's target
    ids (+ 1); theta from the PBMT's tune-set precisions, as BuildLMatrix."""

    stage = "pretrained-lmatrix"

    def requires(self) -> dict[str, PipelineTask]:
        required = {k: v for k, v in super().requires().items() if k not in ("codes", "vocab")}
        return {**required, **unit_inputs(self)}

    def shard_job(self, paths: list[Path], theta: Theta, out_path: Path) -> tuple[Callable[..., dict], tuple]:
        lmbr = self.profile_config.lmbr
        return _lmatrix_shard, (unit_mapping(self), paths, theta, self.path_scale(), lmbr.semiring, self.nbest(),
                                out_path, lmbr.order, lmbr.engine, lmbr.max_evidence_states)

    def shard_statistics(self, results: list[dict[str, Any]]) -> dict[str, Any]:
        """The mapping's statistics over the shards (lattices/model_shards.mapping_statistics); a PipelineError
        naming the words when more of them than [pretrained] max_unknown_rate have an <unk> piece, or naming some
        texts when more checked paths than max_mismatch_rate differ from the tokenizer's encoding."""
        limits = self.config.pretrained
        words = sum(r["mapped_words"] for r in results)
        unknown = sorted({w for r in results for w in r["unknown_words"]})
        checked, mismatched = sum(r["checked_paths"] for r in results), sum(r["mismatched_paths"] for r in results)
        found = {"mapped_words": words, "unknown_words": unknown[:100], "unknown_word_count": len(unknown),
                 "unknown_word_rate": round(len(unknown) / words, 6) if words else 0.0,
                 "checked_paths": checked, "mismatched_paths": mismatched,
                 "mismatch_rate": round(mismatched / checked, 6) if checked else 0.0}
        where = f"{self.config.path}: [pretrained] model {self.config.pretrained.model}, split {self.split}"
        if found["unknown_word_rate"] > limits.max_unknown_rate:
            shown = ", ".join(repr(w) for w in unknown[:20]) + (", ..." if len(unknown) > 20 else "")
            raise PipelineError(f"{where}: the model cannot spell {len(unknown)} of the {words} words of the PBMT "
                                f"lattices ({found['unknown_word_rate']:.2%}, above max_unknown_rate "
                                f"{limits.max_unknown_rate:.2%}): {shown}; L would reward their <unk> and the "
                                "hybrids' outputs would drop them")
        if found["mismatch_rate"] > limits.max_mismatch_rate:
            examples = "; ".join(repr(t) for r in results for t in r["mismatch_examples"][:1])
            raise PipelineError(f"{where}: {mismatched} of {checked} checked lattice paths map to other units than "
                                f"the model's tokenizer gives ({found['mismatch_rate']:.2%}, above max_mismatch_rate "
                                f"{limits.max_mismatch_rate:.2%}), e.g. {examples}")
        return found


class BuildPretrainedAcceptors(BuildAcceptors):
    """BuildAcceptors in the pretrained model's units (the -lat searches and the anchored search of PNMT)."""

    stage = "pretrained-acceptors"

    def requires(self) -> dict[str, PipelineTask]:
        return {"lattices": super().requires()["lattices"], **unit_inputs(self)}

    def shard_job(self, paths: list[Path], out_path: Path) -> tuple[Callable[..., dict], tuple]:
        from tasks.lmatrix import evidence_nbest

        lmbr = self.profile_config.lmbr
        return _acceptor_shard, (unit_mapping(self), paths, evidence_nbest(self), out_path, lmbr.engine,
                                 lmbr.max_evidence_states)

    def word_restorer(self) -> None:
        """None: the model writes text through its own tokenizer, with no <unk> to take from the lattice."""
        return None


def lmatrix_stage(models: str) -> type[BuildLMatrix]:
    return BuildPretrainedLMatrix if models == PRETRAINED else BuildLMatrix


def acceptor_stage(models: str) -> type[BuildAcceptors]:
    return BuildPretrainedAcceptors if models == PRETRAINED else BuildAcceptors
