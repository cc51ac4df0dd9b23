"""An exported system: one folder with everything a system of Table 1 needs to translate raw text.

    SYSTEM/
      manifest.json          what it is (system, task, languages), its settings, versions, signatures, sha256s
      text/                  truecase.<lang>.json (cased languages), codes.<src>, codes.<tgt>, vocab.<tgt>.json
      nmt/                   system.json and its member checkpoints (not for PBMT)
      pbmt/                  phrase-table.npz, lm.bin, weights.json (PBMT and the systems built on its lattices)

The manifest's settings (:class:`SystemSettings`) are those the pipeline decoded the system's split with: the
decoding section of the profile (or the Table 2 variant's beam and threshold), the PBMT limits, and for LMBR the
posteriors' settings, the theta L is built with (the PBMT's precisions), the theta it decodes with (tuned), lambda,
the gain form, and mu for the -lat systems. :func:`load_system` checks every hash before anything is loaded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.deploy.manifest import read_manifest
from pipeline.errors import DataError

__all__ = ["KINDS", "SystemKind", "SystemSettings", "load_system", "DeployedSystem"]


@dataclass(frozen=True)
class SystemKind:
    """What a row of Table 1 runs: the NMT system (None: PBMT alone), L, the lattice constraint."""

    models: str | None
    lmbr: bool = False
    constrained: bool = False

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
        return KINDS[self.name]

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
    if system not in KINDS:
        raise DataError(f"{Path(folder) / 'manifest.json'}: unknown system {system!r} (known: {', '.join(KINDS)})")
    return DeployedSystem(Path(folder), manifest)
