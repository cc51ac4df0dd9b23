"""Running real Luigi (local scheduler) on tasks of a small data folder."""
from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

import luigi

from pipeline.config import CONFIG_DIR
from pipeline.data.resolver import CHECKOUT


def shared_params(tmp_path: Path, data_dir: Path, config_dir: Path = CONFIG_DIR) -> dict:
    return {"task_name": "ger-eng", "profile": "tiny", "work_dir": str(tmp_path / "work"), "data_dir": str(data_dir),
            "cache_dir": str(tmp_path / "cache"), "tools_dir": str(CHECKOUT / "tools"), "processes": 1,
            "config_dir": str(config_dir)}


def short_transformer_configs(folder: Path, **extra: str) -> Path:
    """A copy of the configs in `folder` whose tiny Transformer trains 12 updates (checkpoints every 4, the last 2
    kept and averaged, 10 validation sentences) with no wall-clock cap, so that any machine trains the same model;
    `extra`: more [nmt.transformer] / [nmt.transformer.training] keys (added before valid_sentences)."""
    shutil.copytree(CONFIG_DIR, folder)
    path = folder / "profiles" / "tiny.toml"
    head, transformer = path.read_text().split("[nmt.transformer]")
    for key, value in (("max_updates", "12"), ("budget_seconds", "0"), ("checkpoint_every", "4"),
                       ("keep_checkpoints", "2"), ("average_checkpoints", "2"), ("valid_sentences", "10")):
        transformer = transformer.replace(f"\n{key} = ", f"\n{key} = {value} #", 1)
    added = "".join(f"\n{key} = {value}" for key, value in extra.items())
    transformer = transformer.replace("\nvalid_sentences = ", f"{added}\nvalid_sentences = ", 1)
    path.write_text(head + "[nmt.transformer]" + transformer)
    return folder


def build(*tasks: luigi.Task) -> luigi.execution_summary.LuigiRunResult:
    return luigi.build(list(tasks), local_scheduler=True, detailed_summary=True, workers=1,
                       log_level="WARNING")


def artifacts(work_dir: Path) -> dict[str, float]:
    """Every finished artifact (folder with a signature.json) and the time it was written."""
    return {str(p.parent.relative_to(work_dir)): p.stat().st_mtime for p in Path(work_dir).rglob("signature.json")}


# What legitimately differs between two builds of the same artifact: how long it took, when, where and by whom,
# and whether a killed build resumed.
_RUN_FACTS = re.compile(r"second|elapsed|timing|time_|_time|wpm|per_minute|per_s|_s$|memory|rss|finished|host|user|"
                        r"python|resumed_from")


def _without_run_facts(data):
    if isinstance(data, dict):
        return {k: _without_run_facts(v) for k, v in data.items() if not _RUN_FACTS.search(k)}
    if isinstance(data, list):
        return [_without_run_facts(v) for v in data]
    return data


def _content(path: Path, work_dir: Path) -> str:
    """A digest of what the file says, less the run facts (JSON keys and CSV columns of times, hosts, memory) and
    with the work folder's path as WORK; arrays and checkpoints by their values (zip containers record names and
    times of their own)."""
    here = lambda text: text.replace(str(work_dir), "WORK")  # noqa: E731
    if path.suffix == ".json":
        data = json.loads(here(path.read_text(encoding="utf-8")))
        return json.dumps(_without_run_facts(data), sort_keys=True)
    if path.suffix == ".npz":
        import numpy as np

        with np.load(path, allow_pickle=False) as arrays:
            return json.dumps({name: here(str(arrays[name])) if arrays[name].dtype.kind == "U"
                               else f"{arrays[name].dtype}{arrays[name].shape}:"
                               f"{hashlib.sha256(arrays[name].tobytes()).hexdigest()}" for name in arrays.files})
    if path.suffix == ".csv":
        rows = list(csv.reader(here(path.read_text(encoding="utf-8")).splitlines()))
        keep = [i for i, name in enumerate(rows[0]) if not _RUN_FACTS.search(name)] if rows else []
        return "\n".join(",".join(row[i] for i in keep if i < len(row)) for row in rows)
    if path.suffix == ".pt":
        import torch

        digest = hashlib.sha256()
        _feed(digest, torch.load(path, map_location="cpu", weights_only=False))
        return digest.hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _feed(digest, value) -> None:
    """Hash nested checkpoint data: tensors by their bytes, containers in order, anything else by its repr."""
    import torch

    if isinstance(value, torch.Tensor):
        digest.update(value.detach().cpu().contiguous().numpy().tobytes())
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            digest.update(str(key).encode())
            _feed(digest, value[key])
    elif isinstance(value, (list, tuple)):
        for item in value:
            _feed(digest, item)
    else:
        digest.update(repr(value).encode())


def artifact_contents(work_dir: Path, skip_stages: tuple[str, ...] = ()) -> dict[str, str]:
    """{artifact file relative to the work folder: digest of its content} for every finished artifact."""
    contents = {}
    for signature in sorted(Path(work_dir).rglob("signature.json")):
        folder = signature.parent
        if folder.parent.name in skip_stages:
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            contents[str(path.relative_to(work_dir))] = _content(path, Path(work_dir))
    return contents
