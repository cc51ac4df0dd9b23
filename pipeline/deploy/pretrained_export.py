"""An exported system whose NMT is a pretrained `transformers` model: the model beside an exported system's PBMT.

    export_pretrained_system("models/opus-mt-de-en", base="systems/ger-eng/LNMT", out="systems/ger-eng/LPNMT")
    export_pretrained_system("Helsinki-NLP/opus-mt-de-en", base=..., out=..., system="PNMT")  # the model alone
    lmbr translate --system systems/ger-eng/LPNMT -i news.de        # then like any exported system, offline

The base is an exported system of the same task (system.py) with an NMT, and by default the new system does what
the base does (system.pretrained_counterpart: LNMT -> LPNMT, TNMT-lat -> PNMT-lat); another system needs a base
with its settings (LMBR's for LPNMT, the lattice's weight for the -lat systems). The new folder takes the base's
truecasers (text/), its PBMT (pbmt/: the lattices' phrase table, LM and weights, and their settings), its decoding
settings (beam, threshold, batching, length limits, patience), its LMBR settings (posteriors' settings, the theta L
is built with, the decoding theta, the gain form, alpha) and the lattice's weight mu, all but lambda: a pretrained
model's log-probabilities are on another scale than the base's NMT's, so lambda is `nmt_lambda` (default: the
base's). LPNMT searches as the base does: free, or anchored (free and inside the lattice, the better kept).

The model's files (every file of its folder, or of its snapshot in the Hugging Face cache for a hub name) are
copied to nmt/pretrained/ and hashed with the others; with `link`, the folder only names them by absolute path and
the manifest keeps their sha256s (external_files), so that a model of several GB is not copied, and a changed one
is still refused. The model is loaded once at export, which checks its tokenizer and languages against the task.
"""
from __future__ import annotations

import platform
import shutil
from pathlib import Path
from typing import Any

import torch

from pipeline.deploy.manifest import write_manifest
from pipeline.deploy.system import PRETRAINED_KINDS, DeployedSystem, SystemKind, load_system, pretrained_counterpart
from pipeline.errors import DataError
from pipeline.io import atomic_dir

__all__ = ["export_pretrained_system"]

PRETRAINED_DIR = "nmt/pretrained"


def export_pretrained_system(model: str | Path, base: Path, out: Path, system: str | None = None,
                             nmt_lambda: float | None = None, link: bool = False) -> DeployedSystem:
    """Write the folder `out` of the pretrained `system` (PRETRAINED_KINDS; default: the base's counterpart) with
    pretrained `model` (a folder or a hub name) over the exported system `base`; returns it loaded (every hash
    checked). See the module docstring."""
    from pipeline.nmt.pretrained import load_pretrained, model_folder

    base_system = load_system(Path(base))
    settings = base_system.settings
    if not settings.decode or base_system.kind.pretrained:
        raise DataError(f"{base_system.folder}: the {base_system.name} system has no NMT of this project's, so no "
                        "decoding settings to give the pretrained model: export over an NMT system of the task "
                        "(e.g. its LNMT)")
    name = system or pretrained_counterpart(base_system.name)
    if name not in PRETRAINED_KINDS:
        raise DataError(f"{name}: not a system with a pretrained NMT (known: {', '.join(PRETRAINED_KINDS)})")
    kind = PRETRAINED_KINDS[name]
    if kind.lmbr and not base_system.kind.lmbr:
        raise DataError(f"{base_system.folder}: {name} takes its LMBR settings from an LMBR system (LNMT, LTNMT, "
                        f"LNMT-lat, LTNMT-lat), not {base_system.name}")
    if kind.constrained and not base_system.kind.constrained:
        raise DataError(f"{base_system.folder}: {name} takes the lattice's weight from a -lat system, not "
                        f"{base_system.name}")
    if nmt_lambda is not None and not kind.lmbr:
        raise DataError(f"{name} has no LMBR: nmt_lambda is for LPNMT and LPNMT-lat")
    folder = model_folder(model)
    load_pretrained(folder, base_system.source, base_system.target, local_files_only=True)  # tokenizer, languages
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    manifest: dict[str, Any] = {key: base_system.manifest.get(key) for key in
                                ("task", "profile", "variant", "source", "target", "languages")}
    manifest.update(system=name, settings=_settings(settings.__dict__, kind, nmt_lambda),
                    pretrained={"model": str(model), "folder": str(folder.resolve()) if link else PRETRAINED_DIR},
                    exported_from={"base": str(base_system.folder), "base_system": base_system.name,
                                   "model": str(model)},
                    versions=_versions())
    with atomic_dir(Path(out)) as tmp:
        (tmp / "text").mkdir()
        for lang in (base_system.source, base_system.target):
            if base_system.language(lang)["truecase"]:
                shutil.copyfile(base_system.path(f"text/truecase.{lang}.json"), tmp / "text" / f"truecase.{lang}.json")
        if PRETRAINED_KINDS[name].needs_lattices:
            (tmp / "pbmt").mkdir()
            for file in ("phrase-table.npz", "lm.bin", "weights.json"):
                shutil.copyfile(base_system.path(f"pbmt/{file}"), tmp / "pbmt" / file)
        if not link:
            (tmp / PRETRAINED_DIR).mkdir(parents=True)
            for file in files:
                shutil.copyfile(file, tmp / PRETRAINED_DIR / file.name)  # a cache snapshot's links: their blobs
        write_manifest(tmp, manifest, external=files if link else ())
    return load_system(Path(out))


#: The settings of "lmbr" that only LMBR reads (the -lat systems read the rest: the evidence space and mu).
_LMBR_ONLY = ("theta_build", "theta", "alpha", "nmt_lambda", "gains")
#: The settings of an anchored LMBR search (free and inside the lattice, the better kept): LPNMT's only.
_ANCHORED = ("search", "anchor_nbest")


def _settings(base: dict[str, dict], kind: SystemKind, nmt_lambda: float | None) -> dict[str, dict]:
    """The base's settings for a system of `kind`: decode always; pbmt and lmbr where it uses the lattices."""
    settings: dict[str, dict] = {"decode": dict(base["decode"])}  # (its CPU speed-ups and fp16: ours only)
    if kind.needs_lattices:
        settings["pbmt"] = dict(base["pbmt"])
        dropped = (() if kind.lmbr else _LMBR_ONLY + _ANCHORED) + (_ANCHORED if kind.constrained else ()) + \
            (() if kind.constrained else ("lattice_weight",))
        chosen = {k: v for k, v in base["lmbr"].items() if k not in dropped}
        if nmt_lambda is not None:
            if nmt_lambda <= 0:
                raise DataError(f"nmt_lambda must be positive, not {nmt_lambda}")
            chosen["nmt_lambda"] = float(nmt_lambda)
        settings["lmbr"] = chosen
    return settings


def _versions() -> dict[str, str]:
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}
