"""Benchmark: reproduce-table's forecast against a run that finished, stage by stage.

The forecast is made here and now, as reproduce-table makes it before a build (a few seconds of probes of this
machine, the published run of the profile scaled by them: pipeline/run_estimate.py), for the same tasks, systems,
workers and processes, as if the work folder were empty. The actual minutes are the build seconds of the finished
run's own artifacts (each artifact's signature.json). Run it on a quiet machine, after the run:

    .venv/bin/python benchmarks/run_estimate.py --work-dir WORK --profile medium --tasks eng-ger \
        --systems PBMT,TNMT,LTNMT,TNMT-lat,MBR --workers 1 --processes 2 --out estimate.json
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import luigi  # noqa: E402
from common import machine  # noqa: E402
from pipeline.io import read_json, write_json  # noqa: E402
from pipeline.list_schedule import schedule_minutes  # noqa: E402
from tasks.base import PipelineTask  # noqa: E402
from tasks.report import TaskReport  # noqa: E402
from tasks.run_estimate import describe_estimate, estimate_run  # noqa: E402
from tasks.worker_priority import task_graph  # noqa: E402


def reports(args: argparse.Namespace, work_dir: str) -> list[TaskReport]:
    extra = {"config_dir": args.config_dir} if args.config_dir else {}
    systems = () if args.systems == "none" else tuple(args.systems.split(","))
    return [TaskReport(task_name=task, profile=args.profile, eval_set="devtest", systems=systems, work_dir=work_dir,
                       processes=args.processes, **extra) for task in args.tasks.split(",")]


def actual_minutes(roots: list[TaskReport], partial: bool) -> tuple[dict[str, dict[str, float]], dict[str, float],
                                                                     set[tuple[str, str]]]:
    """The run's build minutes by task and stage, and by artifact; with `partial`, of the artifacts it finished
    (a run stopped part way), else all of them or a SystemExit naming the first missing one; and the (task, stage)
    pairs with an artifact not built."""
    graph = [t for t in task_graph(roots) if isinstance(t, PipelineTask) and t.stage]
    minutes, stages, unbuilt = {}, {}, set()
    for task in graph:
        signature = task.artifact_dir() / "signature.json"
        if not signature.is_file():
            if partial:
                unbuilt.add((task.task_name, task.stage))
                continue
            raise SystemExit(f"{signature}: missing: the run did not finish (run reproduce-table first, or "
                             "--partial to compare the stages it finished)")
        minutes[task.task_id] = read_json(signature)["seconds"] / 60
        per_task = stages.setdefault(task.task_name, {})
        per_task[task.stage] = per_task.get(task.stage, 0.0) + minutes[task.task_id]
    return stages, minutes, unbuilt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work-dir", required=True, help="the finished run's work folder")
    p.add_argument("--config-dir", help="the run's configs (default: the checkout's)")
    p.add_argument("--profile", default="medium")
    p.add_argument("--tasks", default="eng-ger")
    p.add_argument("--systems", default="PBMT,TNMT,LTNMT,TNMT-lat,MBR")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    p.add_argument("--partial", action="store_true",
                   help="a run stopped part way: compare the stages it finished (the wall time is then left out)")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    finished = reports(args, args.work_dir)
    stages, minutes, unbuilt = actual_minutes(finished, args.partial)
    graph = [t for t in task_graph(finished) if isinstance(t, PipelineTask) and t.stage]
    needs = {t.task_id: [d.task_id for d in luigi.task.flatten(t.requires()) if d.task_id in minutes] for t in graph}
    actual_wall = schedule_minutes(needs, minutes, args.workers)
    with tempfile.TemporaryDirectory(prefix="empty-work-") as empty:
        estimate = estimate_run(reports(args, empty), args.workers, REPO / "results" / args.profile)
    print(describe_estimate(estimate))
    rows = []
    for task, by_stage in stages.items():
        for stage, actual in sorted(by_stage.items(), key=lambda kv: -kv[1]):
            forecast = estimate.stage_minutes.get(task, {}).get(stage, 0.0)
            rows.append({"task": task, "stage": stage, "all_built": (task, stage) not in unbuilt,
                         "forecast_minutes": round(forecast, 2), "actual_minutes": round(actual, 2),
                         "ratio": round(forecast / actual, 3) if actual > 0.05 else None})
            print(f"{task} {stage:18s} forecast {forecast:7.1f} min   actual {actual:7.1f} min")
    error = estimate.wall_minutes / actual_wall - 1 if actual_wall and not args.partial else None
    print(f"wall time on {args.workers} worker(s): forecast {estimate.wall_minutes:.1f} min, the run's builds "
          f"{actual_wall:.1f} min ({error:+.1%})" if error is not None else
          f"a partial run: {actual_wall:.1f} min of builds finished; the forecast of the whole run "
          f"{estimate.wall_minutes:.1f} min")
    write_json(args.out, {"benchmark": "run_estimate", "command": " ".join([Path(sys.executable).name, *sys.argv]),
                          "machine": machine(args.processes), "workers": args.workers, "processes": args.processes,
                          "partial": args.partial, "forecast": estimate.to_dict(),
                          "actual_wall_minutes": round(actual_wall, 1),
                          "relative_error": round(error, 4) if error is not None else None, "stages": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
