"""Measurement: how a run of `reproduce-table` spent its wall time, read back from its artifacts.

Every artifact's signature records when its build finished and how many seconds it took, so the interval of each
build is known. For the artifacts of a work folder finished after --since (a run from an empty work folder: all of
them), prints the wall span from the first build's start to the last one's end, the build minutes, how many builds
ran side by side for how long (two workers: the minutes with one or none running are the idle ones), each
translation task's span and build minutes, and the builds that ran last (the tail). Writes JSON.

    .venv/bin/python benchmarks/run_timeline.py --work-dir work --profile small
    .venv/bin/python benchmarks/run_timeline.py --work-dir /work/timed/work --profile small \
        --since 2026-11-28T12:50:00 --out results/benchmarks/run_timeline_small.json
"""
from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from common import machine  # noqa: E402
from pipeline.io import write_json  # noqa: E402


def parse_time(text: str) -> float:
    """Seconds since the epoch of an ISO time; one without a zone is UTC."""
    moment = datetime.fromisoformat(text.replace("+0000", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def builds(work: Path, profile: str, since: float) -> list[dict]:
    """[{task, stage, artifact, start, end, seconds}] of the finished artifacts <work>/<profile>/<task>/<stage>/*/,
    ending after `since`, in order of start."""
    found = []
    for signature in sorted((work / profile).glob("*/*/*/signature.json")):
        data = json.loads(signature.read_text(encoding="utf-8"))
        if "finished" not in data:
            continue
        end, seconds = parse_time(data["finished"]), float(data.get("seconds", 0.0))
        if end >= since:
            folder = signature.parent
            found.append({"task": folder.parent.parent.name, "stage": folder.parent.name, "artifact": folder.name,
                          "start": end - seconds, "end": end, "seconds": seconds})
    return sorted(found, key=lambda build: build["start"])


def concurrency(intervals: list[tuple[float, float]]) -> dict[int, float]:
    """{number of intervals open at once: seconds it held} between the first start and the last end."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    held: dict[int, float] = {}
    open_now, last = 0, events[0][0] if events else 0.0
    for moment, change in events:
        held[open_now] = held.get(open_now, 0.0) + moment - last
        open_now, last = open_now + change, moment
    return dict(sorted(held.items()))


def summary(found: list[dict], tail: int) -> dict:
    start, end = min(b["start"] for b in found), max(b["end"] for b in found)
    work = sum(b["seconds"] for b in found)
    tasks = {}
    for b in found:
        t = tasks.setdefault(b["task"], {"start": b["start"], "end": b["end"], "build_minutes": 0.0, "artifacts": 0})
        t["start"], t["end"] = min(t["start"], b["start"]), max(t["end"], b["end"])
        t["build_minutes"] += b["seconds"] / 60
        t["artifacts"] += 1
    iso = lambda s: datetime.fromtimestamp(s, timezone.utc).strftime("%H:%M:%S")  # noqa: E731
    return {
        "first_start": datetime.fromtimestamp(start, timezone.utc).isoformat(),
        "last_end": datetime.fromtimestamp(end, timezone.utc).isoformat(),
        "wall_minutes": round((end - start) / 60, 2), "build_minutes": round(work / 60, 2),
        "artifacts": len(found), "mean_builds_running": round(work / (end - start), 3),
        "minutes_with_n_running": {n: round(s / 60, 2) for n, s in concurrency(
            [(b["start"], b["end"]) for b in found]).items()},
        "tasks": {name: {"from": iso(t["start"]), "to": iso(t["end"]),
                         "span_minutes": round((t["end"] - t["start"]) / 60, 2),
                         "build_minutes": round(t["build_minutes"], 2), "artifacts": t["artifacts"]}
                  for name, t in sorted(tasks.items())},
        "last_builds": [{"task": b["task"], "stage": b["stage"], "artifact": b["artifact"], "from": iso(b["start"]),
                         "to": iso(b["end"]), "minutes": round(b["seconds"] / 60, 2)}
                        for b in sorted(found, key=lambda b: b["end"])[-tail:]],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work-dir", default=str(REPO / "work"))
    p.add_argument("--profile", default="small")
    p.add_argument("--since", help="only artifacts finished after this ISO time (UTC); default: all")
    p.add_argument("--tail", type=int, default=10, help="how many of the last builds to list")
    p.add_argument("--out", help="JSON path (default: results/benchmarks/run_timeline_<profile>.json)")
    args = p.parse_args(argv)
    found = builds(Path(args.work_dir), args.profile, parse_time(args.since) if args.since else 0.0)
    if not found:
        print(f"run_timeline: no finished artifacts under {args.work_dir}/{args.profile}", file=sys.stderr)
        return 1
    report = {"machine": machine(threads=1), "work_dir": args.work_dir, "profile": args.profile, **summary(found, args.tail)}
    print(f"{report['artifacts']} artifacts, {report['first_start']} -> {report['last_end']}: "
          f"{report['wall_minutes']} min of wall time, {report['build_minutes']} build minutes "
          f"({report['mean_builds_running']} builds running on average)")
    print("minutes with n builds running:", report["minutes_with_n_running"])
    for name, t in report["tasks"].items():
        print(f"  {name}: {t['from']} -> {t['to']} ({t['span_minutes']} min), {t['build_minutes']} build minutes, "
              f"{t['artifacts']} artifacts")
    print("last builds:")
    for b in report["last_builds"]:
        print(f"  {b['to']} {b['task']} {b['stage']}/{b['artifact']} ({b['minutes']} min)")
    out = Path(args.out or REPO / "results" / "benchmarks" / f"run_timeline_{args.profile}.json")
    write_json(out, report)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
