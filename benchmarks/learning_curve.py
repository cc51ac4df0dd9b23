"""Benchmark: a model's learning curve on the tuning set, trained past its profile's caps, to choose the profile's
fixed number of updates.

Trains the model of one TrainNMT task (profile, task, architecture, seed) in the task's own resumable state folder
(`<work>/<profile>/<task>/nmt-train-state/<model>-<hash>/`), with its max_updates and wall-clock budget replaced by
this script's. The caps decide only when training stops, never what an update computes (the learning-rate schedules
do not read them; `linear` does, so for it this script keeps the profile's max_updates and may only stop early), so
the checkpoints are the ones the task itself would write, and a later `TrainNMT` run resumes from them under the
profile's own caps. A validation (loss and greedy BLEU on the profile's valid_sentences tuning sentences) runs every
checkpoint_every updates; the curve is read from the state's metrics.csv.

Needs the task's inputs built (`luigi --module tasks BuildVocab ApplyBPE ...`, or one TrainNMT run started and
stopped). Stop it at any time (Ctrl-C or SIGTERM): the curve so far is reported (stop_reason "interrupted") and the
next run resumes from the last checkpoint.

    .venv/bin/python benchmarks/learning_curve.py --profile medium --task ger-eng --architecture transformer \
        --data-dir DATA_FOLDER --threads 1 --budget-minutes 120 --out results/benchmarks/x.json
"""
from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from common import add_model_task_arguments, built_job, machine  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.nmt.distributed import Ranks  # noqa: E402
from pipeline.nmt.launch import run_job  # noqa: E402
from pipeline.report.learning_curves import read_curve  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_model_task_arguments(p)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-updates", type=int, default=0, help="stop after this update (0: the profile's cap)")
    p.add_argument("--budget-minutes", type=float, default=0.0,
                   help="stop once the model has trained this long in all, over every resumed run (0: no budget)")
    p.add_argument("--out", type=Path, help="JSON: the curve, the machine and the caps")
    args = p.parse_args(argv)

    task, job = built_job(args, args.threads)
    state_dir = task.state_dir()
    if job.training["lr_schedule"] == "linear" and args.max_updates not in (0, job.training["max_updates"]):
        raise SystemExit(f"the {args.profile} profile's {args.architecture} decays its learning rate to 0 at its "
                         f"max_updates ({job.training['max_updates']}, lr_schedule 'linear'), so another cap trains "
                         "another model: its learning curve is the profile's own run (leave --max-updates out)")
    caps = {"max_updates": args.max_updates or job.training["max_updates"],
            "budget_seconds": round(args.budget_minutes * 60)}
    job = dataclasses.replace(job, training={**job.training, **caps})
    print(f"training {task.label()} of {args.profile}/{args.task} in {state_dir} with {caps}", flush=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # for the training only: a handler left behind would
    try:  # reach every process forked later (a multiprocessing pool's workers, terminated by SIGTERM, would raise
        result = run_job(job, Ranks())  # inside the pool's queue lock and leave it held)
        updates, stop_reason, minutes = result.updates, result.stop_reason, round(result.elapsed / 60, 1)
    except KeyboardInterrupt:  # the curve so far is reported; the next run resumes from the last checkpoint
        updates, stop_reason, minutes = None, "interrupted", None
    finally:
        signal.signal(signal.SIGTERM, previous)
    curve = read_curve(state_dir / "metrics.csv")
    if updates is None:
        updates = curve[-1]["update"] if curve else 0
        minutes = curve[-1]["minutes"] if curve else 0.0
    print(f"stopped at update {updates} ({stop_reason}), {minutes} minutes in all")
    print("update  minutes  tune BLEU  tune loss")
    for point in curve:
        print(f"{point['update']:6d}  {point['minutes']:7.1f}  {point['valid_bleu']:9.2f}  {point['valid_loss']:9.3f}")
    if args.out:
        write_json(args.out, {"benchmark": "learning_curve", "machine": machine(args.threads), "threads": args.threads,
                              "profile": args.profile, "task": args.task, "model": task.label(),
                              "config_dir": args.config_dir,
                              "state_dir": str(state_dir), "caps": caps, "updates": updates,
                              "stop_reason": stop_reason, "minutes": minutes, "curve": curve})
    return 0


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C: the run stops and the curve so far is reported."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    raise SystemExit(main())
