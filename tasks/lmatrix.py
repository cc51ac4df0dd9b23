"""LMBR stages: n-gram posteriors and the L matrix of every sentence of a split, and the acceptors of the same
evidence spaces (constrained decoding, lattice MBR), from the PBMT lattices."""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

import luigi

from lattices.acceptor import build_acceptor_shard, load_acceptors
from lattices.evidence import DEFAULT_MAX_STATES
from lattices.lmatrix_shards import build_lmatrix_shard
from lattices.restore import WordRestorer
from lattices.theta import Theta
from lattices.units import TokenMapper
from pipeline.evaluation.bleu import corpus_bleu
from pipeline.io import read_lines
from tasks.base import PipelineTask
from tasks.data import BuildVocab, LearnBPE, TokenizeSplit
from tasks.smt import DecodePBMT
from tasks.variants import VariantTask


#: The [lmbr] settings that shape L (the others belong to decoding and tuning).
LMATRIX_SETTINGS = ("order", "semiring", "nbest", "theta_convention", "theta_t", "engine")
#: Settings that shape L only when they differ from their default, and enter the hash only then: the state bound
#: was added after artifacts had been built, and changes no sentence whose evidence space fits in it.
LMATRIX_SETTINGS_IF_CHANGED = {"max_evidence_states": DEFAULT_MAX_STATES}


class BuildLMatrix(VariantTask):
    """Posteriors (orders 1-4) and L per sentence, in NMT target units, sharded over `processes` workers.

    Theta comes from the PBMT's BLEU precisions on the task's tuning set (ALGORITHMS.md section 3); LNMT and LTNMT
    decode with these posteriors under the theta TuneLMBR chose (pipeline/decode/lmbr_tuning.ReweightedStore).
    """

    stage = "lmatrix"
    parallel, memory_mb = True, 2000

    sentences = luigi.IntParameter(default=0, description="the first N sentences of the split (0: all)")
    alpha = luigi.FloatParameter(default=0.0, description="path scale of the posteriors (0: the lattices' own, "
                                                          "[pbmt] alpha)")
    evidence = luigi.IntParameter(default=-1, description="evidence space: 0 the full lattice, K the K best strings "
                                                          "(-1: the variant's, else [lmbr] nbest)")

    def requires(self) -> dict[str, PipelineTask]:
        required = {
            "lattices": self.clone(DecodePBMT),
            "codes": self.clone(LearnBPE),
            "vocab": self.clone(BuildVocab),
            # theta: the PBMT's BLEU precisions on the tuning set (the variant's PBMT limits)
            "tune_translation": self.clone(DecodePBMT, split=self.config.splits.tune),
            "tune_references": self.clone(TokenizeSplit, split=self.config.splits.tune),
        }
        return required

    def params(self) -> dict[str, Any]:
        settings = self.profile_config.lmbr.__dict__
        lmbr = {k: v for k, v in settings.items()
                if k in LMATRIX_SETTINGS or LMATRIX_SETTINGS_IF_CHANGED.get(k, v) != v}
        # the variant acts only through nbest (and the lattices): a variant that keeps them shares the artifact
        first = {"sentences": self.sentences} if self.sentences else {}
        scale = {"alpha": self.alpha} if self.alpha else {}
        return {"split": self.split, **lmbr, "nbest": self.nbest(), **first, **scale}

    def label(self) -> str:
        label = f"{self.split}-alpha{self.alpha:g}" if self.alpha else self.split
        return f"{label}-{self.evidence}best" if self.evidence > 0 else f"{label}-full" if self.evidence == 0 else label

    def path_scale(self) -> float | None:
        """alpha of the posteriors: the parameter, or None: the lattices' own."""
        return self.alpha or None

    def nbest(self) -> int:
        return evidence_nbest(self)

    def shard_job(self, paths: list[Path], theta: Theta, out_path: Path) -> tuple[Callable[..., dict], tuple]:
        """(function, arguments) that write the posteriors and L of the lattice files `paths` into `out_path`."""
        lmbr, target, inputs = self.profile_config.lmbr, self.config.target, self.requires()
        return build_lmatrix_shard, (paths, inputs["codes"].artifact_dir() / f"codes.{target}",
                                     inputs["vocab"].artifact_dir() / f"vocab.{target}.json", theta,
                                     self.path_scale(), lmbr.semiring, self.nbest(), out_path, lmbr.order,
                                     lmbr.engine, lmbr.max_evidence_states)

    def theta(self) -> Theta:
        """From the PBMT's cased BLEU precisions on the tuning set."""
        lmbr, target, inputs = self.profile_config.lmbr, self.config.target, self.requires()
        hypotheses = list(read_lines(inputs["tune_translation"].artifact_dir() / f"translation.{target}"))
        references = list(read_lines(inputs["tune_references"].artifact_dir() / f"raw.{target}.gz"))
        bleu = corpus_bleu(hypotheses, references, target)
        return Theta.from_precisions(bleu.precisions, lmbr.theta_convention, lmbr.theta_t)

    def build(self, out: Path) -> dict[str, Any]:
        lmbr, inputs = self.profile_config.lmbr, self.requires()
        lattice_dir = inputs["lattices"].artifact_dir() / "lattices"
        paths = sorted(lattice_dir.glob("*.fst"), key=lambda p: int(p.stem))
        if self.sentences:
            paths = paths[:self.sentences]
        workers = max(1, min(self.processes, len(paths)))
        shards = [paths[k::workers] for k in range(workers)]
        theta = self.theta()
        results = run_shard_jobs([self.shard_job(shard, theta, out / f"shard-{k}.npz")
                                  for k, shard in enumerate(shards) if shard])
        return {
            "sentences": sum(r["sentences"] for r in results),
            "rows": sum(r["rows"] for r in results),
            "max_rows": max((r["max_rows"] for r in results), default=0),
            "nnz": sum(r["nnz"] for r in results),
            "shards": len(results),
            "timings": {"posteriors_and_l": round(sum(r["seconds"] for r in results), 3)},
            "max_evidence_states": lmbr.max_evidence_states,
            "pruned": dict(sorted((s, m) for r in results for s, m in r["pruned"].items())),
            "theta": self.theta().signature(),
            "alpha": results[0]["signature"]["alpha"] if results else self.path_scale(),
            **self.shard_statistics(results),
        }

    def shard_statistics(self, results: list[dict[str, Any]]) -> dict[str, Any]:
        """More statistics from the shards' own (a subclass's; none here), checked before the artifact is kept."""
        return {}


def lmatrix_for(task: PipelineTask, alpha: float, nbest: int = -1, stage: type[BuildLMatrix] | None = None,
                **overrides: Any) -> BuildLMatrix:
    """BuildLMatrix (or the `stage` that replaces it: a pretrained model's units) of the task's split (and variant)
    under path scale alpha and over the evidence space `nbest` (-1: the variant's or profile's); the lattices' own
    alpha ([pbmt] alpha) and the profile's evidence space are the default artifact, shared with every task that
    tunes neither."""
    own, stage = task.profile_config.pbmt.alpha, stage or BuildLMatrix
    default = task.clone(stage, alpha=0.0 if alpha == own else float(alpha), **overrides)
    if nbest < 0 or nbest == evidence_nbest(default):
        return default
    return default.clone(stage, evidence=int(nbest))


def run_shard_jobs(jobs: list[tuple[Callable[..., dict], tuple]]) -> list[dict]:
    """The results of the (function, arguments) jobs, in order: in worker processes when there are several."""
    if len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=len(jobs)) as pool:
            return [future.result() for future in [pool.submit(fn, *args) for fn, args in jobs]]
    return [fn(*args) for fn, args in jobs]


def evidence_nbest(task: VariantTask) -> int:
    """The evidence space of a split stage (0: the full lattice): its own `evidence` when it has one, else the
    variant's, else the profile's."""
    chosen = getattr(task, "evidence", -1)
    if chosen >= 0:
        return chosen
    variant = task.variant_config()
    return variant.lmbr_nbest if variant else task.profile_config.lmbr.nbest


class BuildAcceptors(VariantTask):
    """The acceptor of every sentence's evidence space in NMT target units (lattices/acceptor.py): the strings L is
    built from (the full lattice within [lmbr] max_evidence_states, or the variant's n best), for constrained
    decoding and lattice MBR; acceptors-<k>.npz shards, sharded over `processes` workers."""

    stage = "acceptors"
    version = 2  # 2: the lattice's costs, pushed towards the start, with every acceptor
    parallel, memory_mb = True, 2000
    sentences = luigi.IntParameter(default=0, description="the first N sentences of the split (0: all)")

    def requires(self) -> dict[str, PipelineTask]:
        return restorer_inputs(self)

    def params(self) -> dict[str, Any]:
        lmbr = self.profile_config.lmbr
        first = {"sentences": self.sentences} if self.sentences else {}
        return {"split": self.split, "nbest": evidence_nbest(self), "engine": lmbr.engine,
                "max_evidence_states": lmbr.max_evidence_states, **first}

    def build(self, out: Path) -> dict[str, Any]:
        inputs = self.requires()
        paths = sorted((inputs["lattices"].artifact_dir() / "lattices").glob("*.fst"), key=lambda p: int(p.stem))
        paths = paths[:self.sentences] if self.sentences else paths
        workers = max(1, min(self.processes, len(paths)))
        results = run_shard_jobs([self.shard_job(paths[k::workers], out / f"acceptors-{k}.npz")
                                  for k in range(workers)])
        return {"sentences": sum(r["sentences"] for r in results), "states": sum(r["states"] for r in results),
                "arcs": sum(r["arcs"] for r in results),
                "empty": sorted(s for r in results for s in r["empty"])}

    def shard_job(self, paths: list[Path], out_path: Path) -> tuple[Callable[..., dict], tuple]:
        """(function, arguments) that write the acceptors of the lattice files `paths` into `out_path`."""
        target, inputs, lmbr = self.config.target, self.requires(), self.profile_config.lmbr
        return build_acceptor_shard, (paths, inputs["codes"].artifact_dir() / f"codes.{target}",
                                      inputs["vocab"].artifact_dir() / f"vocab.{target}.json", evidence_nbest(self),
                                      out_path, lmbr.engine, lmbr.max_evidence_states)

    def acceptors(self) -> dict:
        """{sentence: Acceptor} of the built artifact."""
        return load_acceptors(sorted(self.artifact_dir().glob("acceptors-*.npz")))

    def word_restorer(self) -> WordRestorer:
        """The words of the acceptors' strings, from the split's word lattices (lattices/restore.py)."""
        return word_restorer(self.requires(), self.config.target)


def restorer_inputs(task: PipelineTask, **overrides: Any) -> dict[str, PipelineTask]:
    """What a WordRestorer of the task's split (or of `overrides`' split) reads: the PBMT's word lattices, the
    target side's BPE codes and vocabulary."""
    return {"lattices": task.clone(DecodePBMT, **overrides), "codes": task.clone(LearnBPE),
            "vocab": task.clone(BuildVocab)}


def word_restorer(inputs: dict[str, PipelineTask], target: str) -> WordRestorer:
    """The WordRestorer of restorer_inputs' built artifacts (lattices/restore.py)."""
    mapper = TokenMapper.from_files(inputs["codes"].artifact_dir() / f"codes.{target}",
                                    inputs["vocab"].artifact_dir() / f"vocab.{target}.json")
    return WordRestorer(inputs["lattices"].artifact_dir() / "lattices", mapper)
