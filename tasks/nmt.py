"""NMT stages: train a GRU or Transformer model, average its last checkpoints, define the FNMT/TNMT systems
(ensembles of one model per seed), shrink the FNMT ensemble into one model, and export a Transformer to CTranslate2.

Training resumes after a kill: PipelineTask builds its artifact in a temporary folder renamed at the end, so the
resumable state (checkpoints with optimizer, scheduler, batch position and random states; metrics.csv) lives in a
stable side folder `<work_dir>/<profile>/<task>/nmt-train-state/<artifact name>/`, removed once the artifact is in
place. The artifact keeps the last K checkpoints (weights only), the vocabularies, the metrics and the config.
"""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import luigi

from pipeline.config import GruProfile, TransformerProfile
from pipeline.io import write_json
from pipeline.errors import PipelineError
from pipeline.nmt.average import average_checkpoints, average_last
from pipeline.nmt.checkpoint import checkpoint_name, checkpoint_update, load_checkpoint, save_checkpoint
from pipeline.nmt.distributed import Ranks
from pipeline.nmt.launch import TrainingJob, launch, ranks_per_node, run_job, slurm_nodes
from pipeline.nmt.models import ARCHITECTURES, limit_vocabulary, model_config
from pipeline.nmt.precision import training_precision
from pipeline.nmt.shrink import shrink
from pipeline.nmt.system import load_system, system_members, write_system
from pipeline.nmt.train import TrainingResult, default_device
from pipeline.nmt.travelling_job import PackedJob, adopt, pack
from pipeline.nmt.unfold import unfold
from pipeline.vocab import Vocabulary
from tasks.base import AtSnapshot, PipelineTask
from tasks.data import ApplyBPE, BuildVocab, TokenizeSplit, TrainTruecaser
from tasks.distill import DistillPBMT, teacher_targets

NMT_SYSTEMS = {"FNMT": "gru", "TNMT": "transformer"}  # the paper's pure NMT systems and their architecture


class NmtModelTask(PipelineTask):
    """A stage about one model: an architecture and a seed."""

    architecture = luigi.ChoiceParameter(choices=tuple(ARCHITECTURES), description="gru or transformer")
    seed = luigi.IntParameter(description="random seed of the model (one of the profile's nmt.<arch>.training.seeds)")

    def label(self) -> str:
        return f"{self.architecture}-seed{self.seed}"

    def arch_profile(self) -> GruProfile | TransformerProfile:
        return self.config.nmt_for(self.profile_config, self.architecture)


class TrainNMT(NmtModelTask):
    """One trained model: checkpoints/checkpoint-<update>.pt (the last K), vocab.<lang>.json, metrics.csv."""

    stage = "nmt"
    jobs_dir = luigi.Parameter(default="", significant=False, description=(
        "a folder of travelling training jobs ([TrainNMT] jobs_dir, or reproduce-table --train-jobs): the model is "
        "packed there as a job, trained elsewhere (`lmbr train-jobs train`), and adopted from its checked result "
        "instead of trained in place"))
    # 2: fused Adam, one log-softmax for the loss, the GRU's position-independent products outside the recurrence,
    # the Transformer's fused projections and its attention and activation dropout settings (0 by default)
    version = 2
    batch = True
    parallel, memory_mb = True, 4000

    def uses_gpu(self) -> bool:
        return default_device().type == "cuda"

    def requires(self) -> dict[str, PipelineTask]:
        splits, training = self.config.splits, self.arch_profile().training
        needed = {"train": self.clone(ApplyBPE, split=splits.train), "tune": self.clone(ApplyBPE, split=splits.tune),
                  "vocab": self.clone(BuildVocab), "tune_raw": self.clone(TokenizeSplit, split=splits.tune),
                  "truecaser": self.clone(TrainTruecaser)}
        if training.distillation != "none":
            needed["teacher"] = self.clone(DistillPBMT, split=splits.train, variant=training.distillation_variant)
        return needed

    def params(self) -> dict[str, Any]:
        profile = dataclasses.asdict(self.arch_profile())
        # seeds and average_checkpoints choose models, they do not change one; the ranks and torch.compile change
        # only the order of sums (pipeline/nmt/distributed.py); fp32, the default precision, is left out as before
        for unused in ("seeds", "average_checkpoints", "ranks", "compile"):
            profile["training"].pop(unused)
        if profile["training"]["precision"] == "fp32":
            profile["training"].pop("precision")
        # settings that are off leave the hash of the models trained before they existed
        for recipe in ("source_word_dropout", "target_word_dropout", "decoder_layerdrop"):
            if profile.get(recipe) == 0.0:
                profile.pop(recipe)
        if profile["training"]["snapshot_every"] == 0:  # snapshots keep files, they do not change the model
            profile["training"].pop("snapshot_every")
        if profile["training"]["distillation"] == "none":
            profile["training"].pop("distillation")
            profile["training"].pop("distillation_variant")
        return {"architecture": self.architecture, "seed": self.seed, "model": profile}

    def state_dir(self) -> Path:
        return Path(self.work_dir) / self.profile / self.task_name / "nmt-train-state" / self.artifact_dir().name

    def _vocabularies(self, out: Path) -> dict[str, Vocabulary]:
        folder = self.requires()["vocab"].artifact_dir()
        vocabs = {}
        for lang in (self.config.source, self.config.target):
            full = Vocabulary.load(folder / f"vocab.{lang}.json")
            vocabs[lang] = limit_vocabulary(full, self.arch_profile().vocab_size)
            vocabs[lang].save(out / f"vocab.{lang}.json")
        return vocabs

    def _job(self, config: Any, threads: int) -> TrainingJob:
        """The run as the trainer reads it, in this process or in torchrun's ranks (pipeline/nmt/launch.py)."""
        src, tgt, training = self.config.source, self.config.target, self.arch_profile().training
        needed = self.requires()
        inputs = {name: task.artifact_dir() for name, task in needed.items()}
        truecaser = inputs["truecaser"] / f"truecase.{tgt}.json"
        valid = {"source": str(inputs["tune"] / f"bpe.{src}.gz"), "target": str(inputs["tune"] / f"bpe.{tgt}.gz"),
                 "references": str(inputs["tune_raw"] / f"raw.{tgt}.gz"), "sentences": training.valid_sentences,
                 "target_lang": tgt, "tokenizer": self.config.languages[tgt].tokenizer,
                 "truecaser": str(truecaser) if truecaser.is_file() else "",
                 "tokenizer_cache": str(Path(self.cache_dir).resolve() / "tokenizers")}
        return TrainingJob(model=config.to_dict(), training=dataclasses.asdict(training), seed=self.seed,
                           state_dir=str(self.state_dir().resolve()),
                           vocabularies={"source": f"vocab.{src}.json", "target": f"vocab.{tgt}.json"},
                           train={**{side: str((inputs["train"] / f"bpe.{lang}.gz").resolve())
                                     for side, lang in (("source", src), ("target", tgt))},
                                  **({"teacher": str(teacher_targets(needed["teacher"]).resolve())}
                                     if "teacher" in needed else {})},
                           valid=valid, threads=threads)

    def _train(self, config: Any) -> tuple[TrainingResult, dict[str, Any]]:
        """Train in this process, or under torchrun when the profile or the Slurm job asks for several ranks;
        the result and how it ran."""
        training = self.arch_profile().training
        per_node = ranks_per_node(training.ranks)
        nodes, head, job_id = slurm_nodes()
        device = default_device()
        how = {"device": str(device), "ranks": per_node * nodes,
               "precision": training_precision(training.precision, device)}
        if per_node * nodes > 1:
            result = launch(self._job(config, max(1, self.processes // per_node)), per_node, nodes, head, job_id)
        else:
            result = run_job(self._job(config, max(1, self.processes)), Ranks())
        return result, {**how, "train_pairs": result.train_pairs}

    def job_folder(self) -> Path:
        """The folder of this model's travelling job: <jobs_dir>/<task>-<artifact name>."""
        return Path(self.jobs_dir).resolve() / f"{self.task_name}-{self.artifact_dir().name}"

    def pack_job(self) -> PackedJob:
        """This model's training job packed into job_folder() (kept as it is when it holds the same job)."""
        state_dir = self.state_dir()
        state_dir.mkdir(parents=True, exist_ok=True)
        vocabs = self._vocabularies(state_dir)
        config = model_config(self.architecture, self.arch_profile(), vocabs[self.config.source],
                              vocabs[self.config.target])
        identity = {"task": self.task_name, "profile": self.profile, "architecture": self.architecture,
                    "seed": self.seed, "artifact": self.artifact_dir().name}
        return pack(self._job(config, max(1, self.processes)), state_dir, self.job_folder(), identity)

    def build(self, out: Path) -> dict[str, Any]:
        if self.jobs_dir:  # trained elsewhere: adopted only from exactly this job
            packed = self.pack_job()
            return {**adopt(packed.folder, packed.digest, out),
                    "vocab_sizes": {lang: len(Vocabulary.load(out / f"vocab.{lang}.json"))
                                    for lang in (self.config.source, self.config.target)}}
        src, tgt = self.config.source, self.config.target
        state_dir = self.state_dir()
        state_dir.mkdir(parents=True, exist_ok=True)
        vocabs = self._vocabularies(state_dir)
        config = model_config(self.architecture, self.arch_profile(), vocabs[src], vocabs[tgt])
        result, how = self._train(config)
        for lang in (src, tgt):
            shutil.copyfile(state_dir / f"vocab.{lang}.json", out / f"vocab.{lang}.json")
        (out / "checkpoints").mkdir()
        for path in result.checkpoints:  # weights only: the optimizer state is for resuming, not for decoding
            ckpt = load_checkpoint(path)
            save_checkpoint(out / "checkpoints" / path.name, ckpt.config, ckpt.model,
                            {"source": f"../vocab.{src}.json", "target": f"../vocab.{tgt}.json"},
                            meta={**ckpt.meta, "update": checkpoint_update(path)})
        shutil.copyfile(state_dir / "metrics.csv", out / "metrics.csv")
        write_json(out / "config.json", config.to_dict())
        return {"updates": result.updates, "epochs": result.epoch, "train_seconds": round(result.elapsed, 1),
                "stop_reason": result.stop_reason, "resumed_from": result.resumed_from,
                "target_tokens": result.target_tokens,
                "target_tokens_per_second": round(result.target_tokens / max(result.elapsed, 1e-9), 1),
                "validation": result.validation, "parameters": result.parameters,
                "vocab_sizes": {lang: len(v) for lang, v in vocabs.items()}, **how,
                "checkpoints": [p.name for p in result.checkpoints]}

    def run(self) -> None:
        super().run()
        shutil.rmtree(self.state_dir(), ignore_errors=True)


class AverageCheckpoints(AtSnapshot, NmtModelTask):
    """model.pt: the average of the model's last K checkpoints (K = nmt.<arch>.training.average_checkpoints); at a
    snapshot, the snapshot's checkpoint alone."""

    stage = "nmt-average"

    def requires(self) -> TrainNMT:
        return self.clone(TrainNMT)

    def params(self) -> dict[str, Any]:
        return {"architecture": self.architecture, "seed": self.seed,
                "average_checkpoints": self.arch_profile().training.average_checkpoints}

    def build(self, out: Path) -> dict[str, Any]:
        trained = self.input_dir()
        src, tgt = self.config.source, self.config.target
        for lang in (src, tgt):
            shutil.copyfile(trained / f"vocab.{lang}.json", out / f"vocab.{lang}.json")
        vocabularies = {"source": f"vocab.{src}.json", "target": f"vocab.{tgt}.json"}
        if self.snapshot:
            kept = trained / "checkpoints" / checkpoint_name(self.snapshot)
            if not kept.is_file():
                raise PipelineError(f"{kept}: no checkpoint of update {self.snapshot} kept (the model's "
                                    f"training.snapshot_every is "
                                    f"{self.arch_profile().training.snapshot_every}; 0 keeps none)")
            average_checkpoints([kept], out / "model.pt", vocabularies)
            return {"averaged": [kept.name]}
        averaged = average_last(trained / "checkpoints", self.arch_profile().training.average_checkpoints,
                                out / "model.pt", vocabularies)
        return {"averaged": [p.name for p in averaged]}


class NMTSystem(AtSnapshot, PipelineTask):
    """system.json: the members of FNMT (one GRU per seed) or TNMT (one averaged Transformer per seed)."""

    stage = "nmt-system"
    system = luigi.ChoiceParameter(choices=tuple(NMT_SYSTEMS), description="FNMT or TNMT")

    def label(self) -> str:
        return self.system

    def architecture(self) -> str:
        return NMT_SYSTEMS[self.system]

    def requires(self) -> list[AverageCheckpoints]:
        arch = self.architecture()
        seeds = self.config.nmt_for(self.profile_config, arch).training.seeds
        return [self.clone(AverageCheckpoints, architecture=arch, seed=seed) for seed in seeds]

    def params(self) -> dict[str, Any]:
        return {"system": self.system, "architecture": self.architecture()}

    def build(self, out: Path) -> dict[str, Any]:
        # The member paths point at the final artifact folder (out is renamed there), relative to it.
        final = self.artifact_dir()
        members = [t.artifact_dir() / "model.pt" for t in self.requires()]
        write_system(out / "system.json", self.architecture(), members, relative_to=final)
        return {"members": len(members)}


class ShrinkEnsemble(PipelineTask):
    """model.pt and system.json (one member): the FNMT ensemble unfolded into one network and shrunk without data
    to one member's size (Stahlberg and Byrne 2017; pipeline/nmt/unfold.py and shrink.py), the model of the paper's
    accelerated system."""

    stage = "nmt-shrunken"
    memory_mb = 2000

    def label(self) -> str:
        return "FNMT-shrunken"

    def architecture(self) -> str:
        return "gru"

    def requires(self) -> NMTSystem:
        return self.clone(NMTSystem, system="FNMT")

    def params(self) -> dict[str, Any]:
        gru = self.config.nmt_for(self.profile_config, "gru")
        return {"system": "FNMT", "sizes": [gru.embed_size, gru.hidden_size, gru.attention_size]}

    def build(self, out: Path) -> dict[str, Any]:
        system = self.input_dir() / "system.json"
        ensemble, _, _ = load_system(system)
        members = system_members(system)
        unfolded = unfold(ensemble.models)
        member = ensemble.models[0].config
        small = shrink(unfolded, member.embed_size, member.hidden_size, member.attention_size,
                       member.attention_heads)
        src, tgt = self.config.source, self.config.target
        for lang in (src, tgt):
            shutil.copyfile(members[0].parent / f"vocab.{lang}.json", out / f"vocab.{lang}.json")
        save_checkpoint(out / "model.pt", small.config, small.state_dict(),
                        {"source": f"vocab.{src}.json", "target": f"vocab.{tgt}.json"},
                        meta={"shrunk_from": [str(p) for p in members],
                              "unfolded_parameters": unfolded.num_parameters()})
        write_system(out / "system.json", "gru", [self.artifact_dir() / "model.pt"], relative_to=self.artifact_dir())
        return {"members": len(ensemble), "parameters": {"member": ensemble.models[0].num_parameters(),
                                                         "unfolded": unfolded.num_parameters(),
                                                         "shrunken": small.num_parameters()}}


class ExportCTranslate2(NmtModelTask):
    """ct2/: an averaged Transformer in CTranslate2's format (needs the ctranslate2 package, the `ct2` extra)."""

    stage = "nmt-ct2"
    quantization = luigi.Parameter(default="", description="CTranslate2 weight type (int8, float16, ...); '': as is")

    def requires(self) -> AverageCheckpoints:
        return self.clone(AverageCheckpoints)

    def params(self) -> dict[str, Any]:
        return {"architecture": self.architecture, "seed": self.seed, "quantization": self.quantization}

    def build(self, out: Path) -> dict[str, Any]:
        from pipeline.nmt.export_ct2 import export_checkpoint

        if self.architecture != "transformer":
            raise ValueError("only Transformer models export to CTranslate2")
        export_checkpoint(self.input_dir() / "model.pt", out / "ct2", self.quantization or None)
        return {"files": sorted(p.name for p in (out / "ct2").iterdir())}
