"""The manifest of an exported system folder: what the system is, how it decodes, and the sha256 of every file.

    SYSTEM/manifest.json  {"format": 1, "system": "LNMT", "files": {"nmt/model-1.pt": "<sha256>", ...}, ...}

:func:`write_manifest` hashes every file under the folder (the manifest itself excepted) and writes the manifest
last, atomically; :func:`read_manifest` checks the format and every hash, and names the first file that is
missing, altered or not listed. A folder is therefore either complete and as exported, or refused. Files that a
system uses from outside its folder (a pretrained model named by path) are listed by absolute path under
"external_files" (`external` of write_manifest) and checked the same way.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from pipeline.errors import DataError
from pipeline.io import read_json, sha256_file, write_json

__all__ = ["FORMAT", "MANIFEST", "read_manifest", "write_manifest"]

MANIFEST = "manifest.json"
FORMAT = 1


def _files(folder: Path) -> list[str]:
    """Every file under folder (relative POSIX paths, sorted), the manifest excepted."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)


def write_manifest(folder: Path, content: dict[str, Any], external: Sequence[Path] = ()) -> dict[str, Any]:
    """Write folder/manifest.json: `content` plus the format and the sha256 of every file (and of every `external`
    file, by absolute path); returns it."""
    folder = Path(folder)
    manifest = {"format": FORMAT, **content, "files": {name: sha256_file(folder / name) for name in _files(folder)}}
    if external:
        manifest["external_files"] = {str(Path(p).resolve()): sha256_file(Path(p)) for p in external}
    write_json(folder / MANIFEST, manifest)
    return manifest


def read_manifest(folder: Path, verify: bool = True) -> dict[str, Any]:
    """The manifest of an exported system; with `verify`, every file's hash is checked first."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not folder.is_dir():
        raise DataError(f"{folder}: no such system folder (`reproduce-table --export` or ExportSystem writes one)")
    if not path.is_file():
        raise DataError(f"{path}: missing: {folder} is not an exported system, or its export did not finish")
    try:
        manifest = read_json(path)
    except ValueError as e:
        raise DataError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not isinstance(manifest.get("files"),
                                                                                            dict):
        raise DataError(f"{path}: not a system manifest of format {FORMAT}")
    if verify:
        listed = manifest["files"]
        for name, digest in listed.items():
            file = folder / name
            if not file.is_file():
                raise DataError(f"{file}: missing from the exported system (the manifest lists it)")
            if sha256_file(file) != digest:
                raise DataError(f"{file}: corrupt or altered: its sha256 differs from the manifest's")
        for name, digest in manifest.get("external_files", {}).items():
            if not Path(name).is_file():
                raise DataError(f"{name}: missing: the exported system {folder} uses it (its manifest lists it)")
            if sha256_file(Path(name)) != digest:
                raise DataError(f"{name}: corrupt or altered: its sha256 differs from the manifest of {folder}")
        extra = [name for name in _files(folder) if name not in listed]
        if extra:
            raise DataError(f"{folder / extra[0]}: not part of the exported system (not in its manifest)")
    return manifest
