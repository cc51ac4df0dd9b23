"""An exported system: one folder with everything a system of Table 1 needs to translate raw text.

    SYSTEM/
      manifest.json          what it is (system, task, languages), its settings, versions, signatures, sha256s
      text/                  truecase.<lang>.json (cased languages), codes.<src>, codes.<tgt>, vocab.<tgt>.json
      nmt/                   system.json and its member checkpoints (not for PBMT); a pretrained model's folder as
                             nmt/pretrained/ (config, weights, tokenizer), or named by path (`pretrained` below)
      pbmt/                  phrase-table.npz, lm.bin, weights.json (PBMT and the systems built on its lattices)

The manifest's settings (:class:`SystemSettings`) are those the pipeline decoded the system's split with: the
decoding section of the profile (or the Table 2 variant's beam and threshold), the PBMT limits, and for LMBR the
posteriors' settings, the theta L is built with (the PBMT's precisions), the theta it decodes with (tuned), lambda,
the gain form, and mu for the -lat systems. :func:`load_system` checks every hash before anything is loaded.

A system whose NMT is a pretrained `transformers` model (PRETRAINED_KINDS: PNMT, the model alone; LPNMT, the model
with LMBR over the PBMT's lattices in its units; PNMT-lat and LPNMT-lat, the same inside the PBMT's lattice;
pretrained_export.py writes them) reads raw text through the
model's tokenizer (no BPE: text/ holds the truecasers only). Its manifest's "pretrained" says where the model is:
{"model": the name it was exported from, "folder": "nmt/pretrained" inside the system, or an absolute path outside
it whose files' sha256s are the manifest's "external_files", checked like the others}.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.deploy.manifest import read_manifest
from pipeline.errors import DataError

__all__ = ["KINDS", "PRETRAINED_KINDS", "SystemKind", "SystemSettings", "load_system", "DeployedSystem",
           "pretrained_counterpart"]


@dataclass(frozen=True)
class SystemKind:
    """What a row of Table 1 runs: the NMT system (None: PBMT alone), L, the lattice constraint, and whether the
    NMT is a pretrained `transformers` model."""

    models: str | None
    lmbr: bool = False
    constrained: bool = False
    pretrained: bool = False

    @property
    def needs_lattices(self) -> bool:
        return self.models is None or self.lmbr or self.constrained


KINDS: dict[str, SystemKind] = {
    "PBMT": SystemKind(None), "FNMT": SystemKind("FNMT"), "TNMT": SystemKind("TNMT"),
    "LNMT": SystemKind("FNMT", lmbr=True), "LTNMT": SystemKind("TNMT", lmbr=True),
    "FNMT-lat": SystemKind("FNMT", constrained=True), "TNMT-lat": SystemKind("TNMT", constrained=True),
    "LNMT-lat": SystemKind("FNMT", lmbr=True, constrained=True),
    "LTNMT-lat": SystemKind("TNMT", lmbr=True, constrained=True),
}
#: Systems whose NMT is a pretrained transformers model: alone, with LMBR (free search), inside the PBMT lattice.
PRETRAINED_KINDS: dict[str, SystemKind] = {
    "PNMT": SystemKind("PNMT", pretrained=True), "LPNMT": SystemKind("PNMT", lmbr=True, pretrained=True),
    "PNMT-lat": SystemKind("PNMT", constrained=True, pretrained=True),
    "LPNMT-lat": SystemKind("PNMT", lmbr=True, constrained=True, pretrained=True),
}


def pretrained_counterpart(name: str) -> str:
    """The pretrained system that does what system `name` of Table 1 does (LNMT -> LPNMT, TNMT-lat -> PNMT-lat)."""
    kind = KINDS[name]
    return next(other for other, k in PRETRAINED_KINDS.items() if (k.lmbr, k.constrained) == (kind.lmbr,
                                                                                               kind.constrained))


@dataclass(frozen=True)
class SystemSettings:
    """The manifest's "settings": how the system decodes (each part absent where the kind does not use it)."""

    decode: dict[str, Any] = field(default_factory=dict)   # SearchSettings fields + batching (translate_lines)
    pbmt: dict[str, Any] = field(default_factory=dict)     # {"decoder": DecoderSettings fields, "nbest", "alpha"}
    lmbr: dict[str, Any] = field(default_factory=dict)     # posteriors, theta_build, theta, nmt_lambda, gains, ...


@dataclass(frozen=True)
class DeployedSystem:
    """An exported system folder whose files were all verified."""

    folder: Path
    manifest: dict[str, Any]

    @property
    def name(self) -> str:
        return self.manifest["system"]

    @property
    def kind(self) -> SystemKind:
        return KINDS.get(self.name) or PRETRAINED_KINDS[self.name]

    def pretrained_folder(self) -> Path:
        """The folder of the system's pretrained model (inside the system folder, or where the manifest points)."""
        folder = Path(self.manifest["pretrained"]["folder"])
        return folder if folder.is_absolute() else self.folder / folder

    @property
    def source(self) -> str:
        return self.manifest["source"]

    @property
    def target(self) -> str:
        return self.manifest["target"]

    @property
    def settings(self) -> SystemSettings:
        return SystemSettings(**self.manifest["settings"])

    def language(self, lang: str) -> dict[str, Any]:
        """{"tokenizer": name, "truecase": bool} of a language of the system."""
        return self.manifest["languages"][lang]

    def path(self, name: str) -> Path:
        """A file of the folder (relative name, as in the manifest)."""
        if name not in self.manifest["files"]:
            raise DataError(f"{self.folder / name}: the exported {self.name} system has no such file")
        return self.folder / name


def load_system(folder: Path) -> DeployedSystem:
    """The exported system in `folder`, after checking every file against the manifest."""
    manifest = read_manifest(Path(folder))
    system = manifest.get("system")
    if system not in KINDS and system not in PRETRAINED_KINDS:
        raise DataError(f"{Path(folder) / 'manifest.json'}: unknown system {system!r} (known: "
                        f"{', '.join([*KINDS, *PRETRAINED_KINDS])})")
    return DeployedSystem(Path(folder), manifest)
