"""`lmbr train-jobs`: train a travelling NMT training job (pipeline/nmt/travelling_job.py) on this machine, check a
trained one, or list the jobs of a folder. `reproduce-table --train-jobs DIR` packs them; a later run adopts them.

    lmbr train-jobs train JOB [--threads N] [--part-mb 16]   # CUDA where present; resumes after a kill
    lmbr train-jobs check JOB                                # the inputs and the result against their sha256
    lmbr train-jobs list DIR
"""
from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.io import read_json
from pipeline.nmt.travelling_job import MANIFEST, RESULT, job_status, read_packed, read_result, train


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("train-jobs", help="train, check or list travelling NMT training jobs")
    steps = p.add_subparsers(dest="step", required=True, metavar="STEP")
    training = steps.add_parser("train", help="train a packed job here (CUDA where present), resuming its state")
    training.add_argument("job", type=Path, help="a job folder (reproduce-table --train-jobs packs them)")
    training.add_argument("--threads", type=int, help="torch CPU threads (default: the job's own)")
    training.add_argument("--part-mb", type=float, default=0.0,
                          help="write result files above this size in numbered parts, for transfers that limit "
                          "file sizes (0: whole files); the pipeline joins them when it adopts the result")
    training.set_defaults(run=_train)
    checking = steps.add_parser("check", help="check a job's inputs and its result against their sha256")
    checking.add_argument("job", type=Path)
    checking.set_defaults(run=_check)
    listing = steps.add_parser("list", help="the jobs of a folder and their status")
    listing.add_argument("folder", type=Path)
    listing.set_defaults(run=_list)


def _describe(folder: Path) -> str:
    identity = read_json(folder / MANIFEST)["identity"]
    return f"{identity['task']} {identity['architecture']} seed {identity['seed']} ({identity['profile']})"


def _train(args: argparse.Namespace) -> int:
    print(f"training {_describe(args.job)} from {args.job}", flush=True)
    out = train(args.job, threads=args.threads, part_bytes=int(args.part_mb * 1e6))
    trained = read_json(out / "result.json")["trained"]
    print(f"trained: {trained['updates']} updates ({trained['stop_reason']}) in {trained['train_seconds'] / 60:.1f} "
          f"min, {trained['target_tokens']} target tokens; the result is in {out}")
    return 0


def _check(args: argparse.Namespace) -> int:
    _, manifest = read_packed(args.job)
    print(f"{args.job}: {_describe(args.job)}, inputs intact (digest {manifest['digest'][:16]}...)")
    if (args.job / RESULT / "result.json").is_file():
        trained = read_result(args.job, manifest["digest"])["trained"]
        print(f"{args.job / RESULT}: the result of this job, intact: {trained['updates']} updates")
    else:
        print(f"{args.job}: {job_status(args.job)}")
    return 0


def _list(args: argparse.Namespace) -> int:
    jobs = sorted(p.parent for p in Path(args.folder).glob(f"*/{MANIFEST}"))
    for folder in jobs:
        print(f"{folder.name}  {_describe(folder)}  {job_status(folder)}")
    if not jobs:
        print(f"{args.folder}: no training jobs")
    return 0
