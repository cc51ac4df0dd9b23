"""Benchmark: one TrainNMT model's training, packed into a folder that travels, trained again on another machine.

The same run as `learning_curve.py` (the task's own TrainingJob: model, recipe, seed, data, tuning sentences), for a
machine that has neither the project's data nor its workflow packages, such as a lent GPU machine. Two steps:

    # here, with the task's inputs built: the job and every file it reads, into one folder (a few MB at medium)
    .venv/bin/python benchmarks/job_curve.py pack --profile medium --task eng-ger --architecture transformer \
        --work-dir WORK --data-dir DATA --folder job/
    # there: train it (cuda when the machine has a GPU), the curve and the machine into JSON
    python3 benchmarks/job_curve.py train --folder job/ --budget-minutes 5 --out curve.json

`train` needs torch and the project's pure-Python packages (pipeline.text reads sacremoses), not luigi. It trains in
`<folder>/state/` (with `--set`, in a state folder of that recipe's own) and resumes from there; the caps
(max_updates, a wall-clock budget) decide only when it stops.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import torch  # noqa: E402
from common import add_model_task_arguments, built_job, machine  # noqa: E402
from pipeline.io import read_json, write_json  # noqa: E402
from pipeline.nmt.distributed import Ranks  # noqa: E402
from pipeline.nmt.launch import TrainingJob, run_job  # noqa: E402
from pipeline.nmt.travelling_job import STATE, pack, read_packed, runnable_job  # noqa: E402
from pipeline.report.learning_curves import read_curve  # noqa: E402

def load(folder: Path) -> TrainingJob:
    """folder/job.json as packed, its inputs checked against the manifest (SystemExit naming the file when there is
    no packed job)."""
    if not (folder / "job.json").is_file():
        raise SystemExit(f"{folder / 'job.json'}: no packed job there (`job_curve.py pack` makes one)")
    job, _ = read_packed(folder)
    return TrainingJob(**job)


def unpack(folder: Path, state_name: str = STATE) -> TrainingJob:
    """folder/job.json with its paths made absolute, training in folder/<state_name> (its vocabularies put there)."""
    return runnable_job(folder, dataclasses.asdict(load(folder)), threads=1, state=state_name)


def _pack_command(args: argparse.Namespace) -> int:
    vocab_dir = args.folder / "vocab-build"
    task, job = built_job(args, 1, vocab_dir)
    packed = pack(job, vocab_dir, args.folder, {"task": args.task, "profile": args.profile,
                                                "architecture": args.architecture, "seed": args.seed,
                                                "artifact": task.artifact_dir().name})
    shutil.rmtree(vocab_dir)
    print(f"{task.label()} of {args.profile}/{args.task} packed in {packed.folder}")
    return 0


def _train_command(args: argparse.Namespace) -> int:
    recipe = _overrides(args.set, load(args.folder))
    # each probe trains in a state folder of its own: a second run resumes the same recipe, never another one's model
    digest = hashlib.sha1(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:10]
    job = unpack(args.folder, f"state-{digest}" if args.set else "state")
    caps = training_caps(args, recipe["training"], job.training)
    job = dataclasses.replace(job, training={**job.training, **recipe["training"], **caps},
                              model={**job.model, **recipe["model"]}, threads=args.threads)
    print(f"training the job of {args.folder} with {caps}{f' and {recipe}' if args.set else ''}", flush=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"  # run_job's choice (pipeline/nmt/distributed.py)
    result = run_job(job, Ranks())
    curve = read_curve(Path(job.state_dir) / "metrics.csv")
    minutes = round(result.elapsed / 60, 2)
    print(f"stopped at update {result.updates} ({result.stop_reason}), {minutes} minutes in all")
    print("update  minutes  tune BLEU  tune loss")
    for point in curve:
        print(f"{point['update']:6d}  {point['minutes']:7.2f}  {point['valid_bleu']:9.2f}  {point['valid_loss']:9.3f}")
    if args.out:
        write_json(args.out, {"benchmark": "job_curve", "command": " ".join([Path(sys.executable).name, *sys.argv]),
                              "machine": machine(args.threads, device), "threads": args.threads,
                              "job": read_json(args.folder / "job.json"), "caps": caps,
                              "overrides": recipe, "state_dir": Path(job.state_dir).name, "updates": result.updates,
                              "stop_reason": result.stop_reason, "minutes": minutes,
                              "train_pairs": result.train_pairs, "curve": curve})
    return 0


def training_caps(args: argparse.Namespace, overrides: dict[str, Any], training: dict[str, Any]) -> dict[str, int]:
    """When the run stops: --max-updates, else a --set max_updates, else the job's own; --budget-minutes, else a
    --set budget_seconds, else none (the job's guard is for the pipeline's machine, not this one)."""
    return {"max_updates": args.max_updates or overrides.get("max_updates") or training["max_updates"],
            "budget_seconds": round(args.budget_minutes * 60) or overrides.get("budget_seconds", 0)}


def _overrides(settings: list[str], job: TrainingJob) -> dict[str, dict[str, Any]]:
    """KEY=VALUE settings of the training recipe (model.KEY=VALUE: of the model), each of the type of the job's own
    value: {"training": {...}, "model": {...}} (SystemExit naming the setting when it is unknown)."""
    found: dict[str, dict[str, Any]] = {"training": {}, "model": {}}
    for setting in settings:
        key, _, value = setting.partition("=")
        part, key = ("model", key[len("model."):]) if key.startswith("model.") else ("training", key)
        own = getattr(job, part)
        if key not in own or not value or isinstance(own[key], (list, dict)):
            raise SystemExit(f"--set {setting}: not KEY=VALUE of a {part} setting ({', '.join(sorted(own))})")
        kind = type(own[key])
        found[part][key] = value.lower() in ("1", "true", "yes") if kind is bool else kind(value)
    return found


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    steps = p.add_subparsers(dest="step", required=True)
    packing = steps.add_parser("pack", help="a built task's TrainingJob and its files into --folder")
    add_model_task_arguments(packing)
    packing.add_argument("--folder", type=Path, required=True)
    training = steps.add_parser("train", help="train a packed job (on the GPU when there is one)")
    training.add_argument("--folder", type=Path, required=True)
    training.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    training.add_argument("--max-updates", type=int, default=0, help="stop after this update (0: the job's cap)")
    training.add_argument("--budget-minutes", type=float, default=0.0, help="wall-clock cap (0: none)")
    training.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                          help="another value of a training setting (max_tokens=8000) or of the model's "
                          "(model.dropout=0.3): a recipe probe, recorded in the JSON")
    training.add_argument("--out", type=Path, help="JSON: the curve, the machine and the caps")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return _pack_command(args) if args.step == "pack" else _train_command(args)


if __name__ == "__main__":
    raise SystemExit(main())
