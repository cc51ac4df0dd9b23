"""A model's training job as a folder that travels: packed where the pipeline runs, trained on any machine with
torch and this package (CUDA where present; no Luigi, no data folder), and adopted back as the model's artifact only
when its result comes from exactly that job.

    <job>/job.json        the TrainingJob (pipeline/nmt/launch.py), its paths relative to the folder
    <job>/<inputs>        training text (and distilled targets), tuning text and references, vocabularies
    <job>/manifest.json   written last by `pack`: the job's digest, what it trains, the sha256 of every input
    <job>/state/          the resumable training state: a killed `train` resumes from it
    <job>/result/         written by `train`: checkpoints (weights only, optionally in parts of a bounded size),
                          vocabularies, metrics.csv, config.json, and result.json last (the job's digest, how and
                          where it trained, and the sha256 of every result file)

The digest covers the job's recipe, seed and data (the sha256 of each input) and nothing of where it runs (the
thread count, the state folder): `adopt` refuses a result whose digest is not the one the pipeline would pack now,
a file whose sha256 differs from the result's record, a part or file that is missing, and a training that has not
written its result.json.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pipeline.errors import PipelineError
from pipeline.io import atomic_path, read_json, sha256_file, write_json

FORMAT = "lmbr-training-job/1"
RESULT_FORMAT = "lmbr-training-result/1"
MANIFEST, JOB, RESULT, STATE = "manifest.json", "job.json", "result", "state"
# the job's input files by (part, key); every other value of train and valid is not a path
_TRAIN_FILES = ("source", "target", "teacher")
_VALID_FILES = ("source", "target", "references", "truecaser")
_NOT_THE_JOB = ("state_dir", "threads")  # where and how fast it runs, not what it trains
_PART = ".part-"


class TrainingJobError(PipelineError):
    """A job folder or its result is missing, incomplete, of another job, or tampered with; the message names the
    file."""


class TrainingJobPending(TrainingJobError):
    """A packed job has no result yet: it waits to be trained (`lmbr train-jobs train FOLDER`)."""


@dataclass(frozen=True)
class PackedJob:
    folder: Path
    digest: str
    identity: dict[str, Any]  # what the job trains: task, profile, architecture, seed, the artifact it becomes

    @property
    def name(self) -> str:
        return self.folder.name


def job_digest(job: dict[str, Any], files: dict[str, str]) -> str:
    """sha256 of the job's recipe, seed and data: job.json's values less where it runs, and each input's sha256."""
    what = {k: v for k, v in job.items() if k not in _NOT_THE_JOB}
    return hashlib.sha256(json.dumps({"job": what, "files": files}, sort_keys=True).encode()).hexdigest()


def _suffix(path: str) -> str:
    """.gz for gzip text, else the file's own suffix (.json)."""
    return ".gz" if path.endswith(".gz") else Path(path).suffix


def _relative_job(job: Any, copy: Callable[[str, str], str]) -> dict[str, Any]:
    train = {k: copy(v, f"train.{k}{_suffix(v)}") if k in _TRAIN_FILES and v else v for k, v in job.train.items()}
    valid = dict(job.valid or {})
    for key in _VALID_FILES:
        if valid.get(key):
            valid[key] = copy(valid[key], f"valid.{key}{_suffix(valid[key])}")
    if valid:
        valid["tokenizer_cache"] = "tokenizers"
    return dataclasses.asdict(dataclasses.replace(job, train=train, valid=valid or None, state_dir=STATE))


def pack(job: Any, vocab_dir: Path, folder: Path, identity: dict[str, Any]) -> PackedJob:
    """Copy a TrainingJob's inputs and vocabularies into `folder`, write job.json, then manifest.json (last: a
    folder without it is no packed job). Packing the same job again keeps the folder (and its training state); a
    folder that holds another job is refused."""
    staged: dict[str, str] = {}  # name in the folder -> source path

    def copy(path: str, name: str) -> str:
        staged[name] = path
        return name

    relative = _relative_job(job, copy)
    for name in job.vocabularies.values():
        staged[name] = str(Path(vocab_dir) / name)
    files = {name: sha256_file(Path(path)) for name, path in sorted(staged.items())}
    digest = job_digest(relative, files)
    existing = folder / MANIFEST
    if existing.is_file():
        manifest = read_json(existing)
        if manifest.get("digest") == digest:
            return PackedJob(folder, digest, manifest["identity"])
        raise TrainingJobError(f"{existing}: the folder holds another job (digest {manifest.get('digest')}, this "
                               f"one {digest}): remove the folder or pack into another one")
    folder.mkdir(parents=True, exist_ok=True)
    for name, path in staged.items():
        with atomic_path(folder / name) as tmp:
            shutil.copyfile(path, tmp)
    write_json(folder / JOB, relative)
    write_json(existing, {"format": FORMAT, "digest": digest, "identity": identity, "files": files,
                          "packed": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return PackedJob(folder, digest, identity)


def read_packed(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(job.json, manifest.json) of a packed job, the inputs checked against the manifest and the digest against
    job.json and the inputs; a TrainingJobError naming the file otherwise."""
    folder = Path(folder)
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise TrainingJobError(f"{manifest_path}: missing: {folder} is no packed training job (or its packing "
                               "did not finish)")
    manifest = read_json(manifest_path)
    if manifest.get("format") != FORMAT:
        raise TrainingJobError(f"{manifest_path}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    for name, expected in manifest["files"].items():
        _check_file(folder / name, expected)
    job = read_json(folder / JOB)
    if job_digest(job, manifest["files"]) != manifest["digest"]:
        raise TrainingJobError(f"{folder / JOB}: does not match the digest of {manifest_path} (edited after "
                               "packing?)")
    return job, manifest


def _check_file(path: Path, expected: str) -> None:
    if not path.is_file():
        raise TrainingJobError(f"{path}: missing")
    found = sha256_file(path)
    if found != expected:
        raise TrainingJobError(f"{path}: sha256 {found[:16]}... differs from the recorded {expected[:16]}... "
                               "(changed or truncated in transit?)")


def runnable_job(folder: Path, job: dict[str, Any], threads: int, state: str = STATE) -> Any:
    """The packed job as the trainer reads it: absolute paths, its state in <folder>/<state> (vocabularies put
    there)."""
    from pipeline.nmt.launch import TrainingJob

    folder = Path(folder).resolve()
    state = folder / state
    state.mkdir(parents=True, exist_ok=True)
    for name in job["vocabularies"].values():
        if not (state / name).is_file():
            shutil.copyfile(folder / name, state / name)
    absolute = lambda value, key, keys: str(folder / value) if key in keys and value else value  # noqa: E731
    valid = {k: absolute(v, k, (*_VALID_FILES, "tokenizer_cache")) for k, v in (job.get("valid") or {}).items()}
    return TrainingJob(**{**job, "state_dir": str(state), "threads": threads, "valid": valid or None,
                          "train": {k: absolute(v, k, _TRAIN_FILES) for k, v in job["train"].items()}})


def train(folder: Path, threads: int | None = None, part_bytes: int = 0, **trainer_options: Any) -> Path:
    """Train a packed job (resuming from its state folder), then write its result folder; the result's path.
    On CUDA where present. `part_bytes` > 0 splits result files above that size into numbered parts."""
    from pipeline.nmt.distributed import Ranks
    from pipeline.nmt.launch import run_job

    folder = Path(folder)
    job_json, manifest = read_packed(folder)
    job = runnable_job(folder, job_json, threads or job_json["threads"])
    started = time.time()
    result = run_job(job, Ranks(), **trainer_options)
    return write_result(folder, job, manifest["digest"], result, time.time() - started, part_bytes)


def write_result(folder: Path, job: Any, digest: str, result: Any, wall_seconds: float, part_bytes: int = 0) -> Path:
    """<folder>/result: the checkpoints weights only (their vocabularies one folder up, as a TrainNMT artifact's),
    vocabularies, metrics.csv, config.json, then result.json with the sha256 of every file (last)."""
    import torch

    from pipeline.nmt.checkpoint import checkpoint_update, load_checkpoint, save_checkpoint
    from pipeline.nmt.distributed import Ranks, rank_device

    out = Path(folder) / RESULT
    if out.exists():
        shutil.rmtree(out)
    (out / "checkpoints").mkdir(parents=True)
    state = Path(job.state_dir)
    vocab_names = job.vocabularies
    for name in vocab_names.values():
        shutil.copyfile(state / name, out / name)
    for path in result.checkpoints:
        ckpt = load_checkpoint(path)
        save_checkpoint(out / "checkpoints" / path.name, ckpt.config, ckpt.model,
                        {side: f"../{name}" for side, name in vocab_names.items()},
                        meta={**ckpt.meta, "update": checkpoint_update(path)})
    shutil.copyfile(state / "metrics.csv", out / "metrics.csv")
    write_json(out / "config.json", job.model)
    files: dict[str, str] = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        name = path.relative_to(out).as_posix()
        files[name] = sha256_file(path)
        if part_bytes and path.stat().st_size > part_bytes:
            _split(path, part_bytes)
    device = rank_device(Ranks())
    trained = {"updates": result.updates, "epochs": result.epoch, "train_seconds": round(result.elapsed, 1),
               "wall_seconds": round(wall_seconds, 1), "stop_reason": result.stop_reason,
               "resumed_from": result.resumed_from, "target_tokens": result.target_tokens,
               "target_tokens_per_second": round(result.target_tokens / max(result.elapsed, 1e-9), 1),
               "validation": result.validation, "parameters": result.parameters, "train_pairs": result.train_pairs,
               "checkpoints": [p.name for p in result.checkpoints]}
    where = {"device": str(device), "device_name": torch.cuda.get_device_name(device) if device.type == "cuda"
             else platform.processor() or platform.machine(), "host": socket.gethostname(), "threads": job.threads,
             "torch": torch.__version__, "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_json(out / "result.json", {"format": RESULT_FORMAT, "digest": digest, "trained": trained, "where": where,
                                     "files": files, "part_bytes": part_bytes})
    return out


def _split(path: Path, part_bytes: int) -> None:
    """path -> path.part-000, path.part-001, ... of at most part_bytes each; the whole file is removed."""
    with path.open("rb") as whole:
        index = 0
        while chunk := whole.read(part_bytes):
            (path.parent / f"{path.name}{_PART}{index:03d}").write_bytes(chunk)
            index += 1
    path.unlink()


def _joined(path: Path) -> Path:
    """The file at `path`, joined from its parts first when it travelled in parts."""
    if path.is_file():
        return path
    parts = sorted(path.parent.glob(f"{path.name}{_PART}[0-9][0-9][0-9]"))
    if not parts:
        raise TrainingJobError(f"{path}: missing (no file and no {path.name}{_PART}NNN parts)")
    indices = [int(p.name.rsplit("-", 1)[1]) for p in parts]
    if indices != list(range(len(parts))):
        raise TrainingJobError(f"{path}: parts {indices} are not 0..{len(parts) - 1}: a part is missing")
    with atomic_path(path) as tmp, tmp.open("wb") as joined:
        for part in parts:
            joined.write(part.read_bytes())
    for part in parts:
        part.unlink()
    return path


def read_result(folder: Path, digest: str) -> dict[str, Any]:
    """result.json of a job folder, its files checked (parts joined first); refused with the file named when there
    is no finished result, when it was trained from another job (its digest is not `digest`), or when a file was
    changed."""
    result_dir = Path(folder) / RESULT
    record_path = result_dir / "result.json"
    if not record_path.is_file():
        state = list((Path(folder) / STATE).glob("checkpoint-*.pt"))
        raise TrainingJobPending(
            f"{record_path}: missing: the job has not finished training"
            + (f" (its state folder holds {len(state)} checkpoint(s): `lmbr train-jobs train {folder}` resumes it)"
               if state else f" (train it with `lmbr train-jobs train {folder}`)"))
    record = read_json(record_path)
    if record.get("format") != RESULT_FORMAT:
        raise TrainingJobError(f"{record_path}: format {record.get('format')!r}, expected {RESULT_FORMAT!r}")
    if record["digest"] != digest:
        raise TrainingJobError(f"{record_path}: trained from another job (digest {record['digest'][:16]}...), not "
                               f"this model's ({digest[:16]}...): its recipe, seed or data differ")
    for name, expected in record["files"].items():
        _check_file(_joined(result_dir / name), expected)
    return record


def adopt(folder: Path, digest: str, out: Path) -> dict[str, Any]:
    """Copy a checked result (read_result) into `out` in the layout of a model trained in place: checkpoints/,
    vocabularies, metrics.csv, config.json. Returns what the training recorded, and where it ran."""
    record = read_result(folder, digest)
    result_dir = Path(folder) / RESULT
    for name in record["files"]:
        if name == "result.json":
            continue
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(result_dir / name, out / name)
    return {**record["trained"], "trained_by": "job", "job": Path(folder).name, "job_digest": digest,
            **{f"job_{key}": value for key, value in record["where"].items()}}


def job_status(folder: Path) -> str:
    """'trained', 'training (update N)', 'packed' or 'not a job' (no check of the files)."""
    folder = Path(folder)
    if not (folder / MANIFEST).is_file():
        return "not a job"
    if (folder / RESULT / "result.json").is_file():
        return "trained"
    from pipeline.nmt.checkpoint import checkpoint_update, list_checkpoints

    found = list_checkpoints(folder / STATE)
    return f"training (update {checkpoint_update(found[-1])})" if found else "packed"
