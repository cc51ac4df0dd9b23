"""ExportSystem: one self-contained folder per system and variant (pipeline/deploy/system.py), for
`lmbr translate --system` and `lmbr serve`.

The folder pins what the system decoded its split with: the tuned lambda, theta, alpha, gain form and mu (read from
the split's decoding task, so they are the choices of this run), the variant's beam and PBMT limits. The split only
names which decoding task to take them from; the folder translates any text. A pretrained model's rows (PNMT, LPNMT,
PNMT-lat, LPNMT-lat) are exported the same way, with the model's files in nmt/pretrained/ and no BPE (the model
reads text through its own tokenizer), in the layout of pipeline/deploy/pretrained_export.py.
"""
from __future__ import annotations

import dataclasses
import platform
import shutil
from pathlib import Path
from typing import Any

import luigi
import torch

from pipeline.deploy.manifest import write_manifest
from pipeline.deploy.pretrained_export import PRETRAINED_DIR
from pipeline.deploy.system import KINDS, PRETRAINED_KINDS, SystemKind
from pipeline.nmt.system import system_members, write_system
from tasks.base import PipelineTask
from tasks.data import BuildVocab, LearnBPE, TrainTruecaser
from tasks.lmatrix import evidence_nbest
from tasks.smt import TABLE_FAST, BuildPhraseTable, DecodePBMT, TrainLM, TunePBMT, decoder_settings
from tasks.systems import translation_task
from tasks.variants import VariantTask


class ExportSystem(VariantTask):
    """<system>/ in the artifact: manifest.json, text/, nmt/ and pbmt/ (what the system uses), every file hashed."""

    stage = "export"
    version = 2  # 2: the search's patience in the manifest
    system = luigi.Parameter(description=f"the system to export: {', '.join([*KINDS, *PRETRAINED_KINDS])}")

    def label(self) -> str:
        return f"{self.system}-{super().label()}"

    def decoding(self) -> PipelineTask:
        """The split's decoding task of the system: what it decoded with is what the folder keeps."""
        return self.clone(translation_task(self.system))

    def kind(self) -> SystemKind:
        kind = KINDS.get(self.system) or PRETRAINED_KINDS.get(self.system)
        if kind is None:
            raise ValueError(f"ExportSystem: {self.system} cannot be exported (exportable: "
                             f"{', '.join([*KINDS, *PRETRAINED_KINDS])})")
        return kind

    def requires(self) -> dict[str, PipelineTask]:
        kind = self.kind()
        required = {"decoding": self.decoding(), "truecaser": self.clone(TrainTruecaser)}
        if not kind.pretrained:  # a pretrained model reads text through its own tokenizer
            required.update(codes=self.clone(LearnBPE), vocab=self.clone(BuildVocab))
        if kind.models:
            required["nmt"] = self.decoding().system_task()  # what it decoded with: a variant's shrunken FNMT
        if kind.needs_lattices:
            required.update(pbmt=self.clone(DecodePBMT), phrases=self.clone(BuildPhraseTable),
                            lm=self.clone(TrainLM), weights=self.clone(TunePBMT))
        return required

    def params(self) -> dict[str, Any]:
        return {"system": self.system, "split": self.split, **self.variant_params()}

    def folder(self) -> Path:
        """The exported system folder (inside the artifact, beside its signature.json)."""
        return self.artifact_dir() / self.system

    def build(self, artifact: Path) -> dict[str, Any]:
        out = artifact / self.system
        out.mkdir()
        inputs, kind = self.requires(), self.kind()
        source, target = self.config.source, self.config.target
        (out / "text").mkdir()
        for lang in (source, target):
            truecaser = inputs["truecaser"].artifact_dir() / f"truecase.{lang}.json"
            if truecaser.is_file():
                shutil.copyfile(truecaser, out / "text" / truecaser.name)
            if not kind.pretrained:
                shutil.copyfile(inputs["codes"].artifact_dir() / f"codes.{lang}", out / "text" / f"codes.{lang}")
        if not kind.pretrained:
            shutil.copyfile(inputs["vocab"].artifact_dir() / f"vocab.{target}.json",
                            out / "text" / f"vocab.{target}.json")
        settings: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        if kind.pretrained:
            extra["pretrained"] = self._copy_pretrained(inputs["nmt"], out / PRETRAINED_DIR)
            settings["decode"] = self._decode_settings(inputs["decoding"])
        elif kind.models:
            self._copy_models(inputs, out / "nmt")
            settings["decode"] = self._decode_settings(inputs["decoding"])
        if kind.needs_lattices:
            (out / "pbmt").mkdir()
            shutil.copyfile(inputs["phrases"].artifact_dir() / TABLE_FAST, out / "pbmt" / TABLE_FAST)
            shutil.copyfile(inputs["lm"].artifact_dir() / "lm.bin", out / "pbmt" / "lm.bin")
            shutil.copyfile(inputs["weights"].artifact_dir() / "weights.json", out / "pbmt" / "weights.json")
            settings["pbmt"] = {"decoder": dataclasses.asdict(decoder_settings(inputs["pbmt"])),
                                "alpha": self.profile_config.pbmt.alpha}
        if kind.lmbr or kind.constrained:
            settings["lmbr"] = self._lmbr_settings(inputs["decoding"])
        languages = {lang: {"tokenizer": self.config.languages[lang].tokenizer,
                            "truecase": (out / "text" / f"truecase.{lang}.json").is_file()}
                     for lang in (source, target)}
        manifest = write_manifest(out, {
            "system": self.system, "task": self.task_name, "profile": self.profile, "variant": self.variant,
            "source": source, "target": target, "languages": languages, "settings": settings, **extra,
            "exported_from": {"split": self.split,
                              "artifacts": {name: str(task.artifact_dir().relative_to(Path(self.work_dir)))
                                            for name, task in inputs.items()}},
            "versions": {"python": platform.python_version(), "torch": torch.__version__,
                         "stage_versions": {"decoding": inputs["decoding"].version}}})
        return {"files": len(manifest["files"]),
                "bytes": sum((out / name).stat().st_size for name in manifest["files"])}

    @staticmethod
    def _copy_pretrained(model: PipelineTask, folder: Path) -> dict[str, str]:
        """The pretrained model's files (PretrainedModel's folder) copied into `folder`; the manifest's
        "pretrained" entry."""
        from tasks.pretrained import model_dir

        source = model_dir(model)
        folder.mkdir(parents=True)
        for file in sorted(p for p in source.iterdir() if p.is_file() and not p.name.startswith(".")):
            shutil.copyfile(file, folder / file.name)  # a cache snapshot's links: their blobs
        return {"model": str(model.location()), "folder": PRETRAINED_DIR}

    def _copy_models(self, inputs: dict[str, PipelineTask], folder: Path) -> None:
        """The system's member checkpoints as nmt/model-<k>.pt with the vocabularies they name, and nmt/system.json
        naming them (a single-model variant keeps the first member only, as it decodes)."""
        folder.mkdir()
        system_file = inputs["nmt"].artifact_dir() / "system.json"
        members = system_members(system_file)
        variant = self.variant_config()
        if variant and variant.single_model:
            members = members[:1]
        copies = []
        for k, member in enumerate(members, 1):
            copies.append(folder / f"model-{k}.pt")
            shutil.copyfile(member, copies[-1])
            for vocab in member.parent.glob("vocab.*.json"):  # a checkpoint names its vocabularies beside it
                if not (folder / vocab.name).exists():
                    shutil.copyfile(vocab, folder / vocab.name)
        write_system(folder / "system.json", inputs["nmt"].architecture(), copies)

    def _decode_settings(self, decoding: PipelineTask) -> dict[str, Any]:
        decode = dataclasses.asdict(self.profile_config.decode)
        decode.pop("grid_length_penalty")  # the tuning grid: what decodes is the chosen length penalty
        beam, threshold = decoding.search()
        length_penalty = decoding.length_penalty()
        return {**decode, "beam": beam, "threshold": threshold, "patience": self.profile_config.lmbr.patience,
                "length_penalty": length_penalty, "early_exit": decode["early_exit"] and length_penalty == 0}

    def _lmbr_settings(self, decoding: PipelineTask) -> dict[str, Any]:
        """What the -lat and L systems decode with: posteriors' settings, both thetas, lambda, gains, mu."""
        from lattices.theta import Theta

        lmbr, kind = self.profile_config.lmbr, self.kind()
        settings = {"semiring": lmbr.semiring, "order": lmbr.order, "engine": lmbr.engine,
                    "max_evidence_states": lmbr.max_evidence_states, "nbest": evidence_nbest(self)}
        if kind.lmbr:
            lmatrix = decoding.lmatrix()
            built = lmatrix.theta()
            chosen = decoding.chosen() if lmbr.tune else None
            theta = Theta.from_p_r(chosen["p"], chosen["r"], lmbr.theta_convention, lmbr.theta_t) if chosen \
                else built
            settings.update(theta_build=built.signature(), theta=theta.signature(), nbest=evidence_nbest(lmatrix),
                            alpha=lmatrix.path_scale() or self.profile_config.pbmt.alpha,
                            nmt_lambda=decoding.nmt_lambda(), gains=decoding.gains())
            if decoding.search_form() == "anchored":  # the lattice copy's acceptors: DecodeLNMT's BuildAcceptors
                settings.update(search="anchored", anchor_nbest=evidence_nbest(decoding.requires()["acceptors"]))
        if kind.constrained:
            settings["lattice_weight"] = decoding.lattice_weight()
        return settings


def copy_export(folder: Path, destination: Path) -> Path:
    """Copy an exported system folder to `destination` (replaced only once the copy is complete); returns it."""
    from pipeline.io import atomic_dir

    with atomic_dir(Path(destination)) as tmp:
        shutil.copytree(folder, tmp, dirs_exist_ok=True)
    return Path(destination)
