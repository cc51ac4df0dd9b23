"""Is a reproduce-table folder complete? Every cell of Table 1 scored, every promised file there and readable.

CI runs it after `make reproduce`, so a run that fails to write the tables fails CI:

    .venv/bin/python -m pipeline.report.check results/tiny                      # all tasks and systems, Table 2 eng-ger
    .venv/bin/python -m pipeline.report.check OUT --tasks ger-eng --table2-tasks none

The promised files are the README's: table1, data_summary and (with Table 2 tasks) table2 as md/csv/tex,
table1_chrf.{md,csv}, significance.{md,csv} (with PBMT and a hybrid), finding.{md,csv} (with PBMT and an NMT
system), regime.{md,csv} (with PBMT, TNMT and LTNMT), figure1.{md,csv,png}, stage_times.{md,csv,png}, results.json, and figure2/figure3_<task>_<FNMT|TNMT>.{png,json} for each Table 2 task. Exit status 1 lists every
problem.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Sequence

from pipeline import config as configs

__all__ = ["check_report", "promised_files", "DEFAULT_SYSTEMS"]

DEFAULT_SYSTEMS = ("PBMT", "FNMT", "LNMT", "TNMT", "LTNMT")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def promised_files(systems: Sequence[str], table2_tasks: Sequence[str]) -> list[str]:
    """The file names a complete run writes for these systems and Table 2 tasks."""
    names = [f"{stem}.{ext}" for stem in ("table1", "data_summary") for ext in ("md", "csv", "tex")]
    names += ["results.json", "stage_times.md", "stage_times.csv", "stage_times.png"]
    if systems:
        names += ["table1_chrf.md", "table1_chrf.csv"]
    if "PBMT" in systems and ({"LNMT", "LTNMT"} & set(systems)):
        names += ["significance.md", "significance.csv"]
    if "PBMT" in systems and ({"FNMT", "TNMT"} & set(systems)):
        names += ["finding.md", "finding.csv"]
    if {"PBMT", "TNMT", "LTNMT"} <= set(systems):
        names += ["regime.md", "regime.csv"]
    neural = [s for s in systems if s != "PBMT"]
    if neural:
        names += ["figure1.md", "figure1.csv", "figure1.png"]
    if neural and table2_tasks:
        names += [f"table2.{ext}" for ext in ("md", "csv", "tex")]
        for task in table2_tasks:
            for model in [m for m in ("FNMT", "TNMT") if m in systems or "L" + m in systems]:
                names += [f"figure{n}_{task}_{model}.{ext}" for n in (2, 3) for ext in ("png", "json")]
    return names


def _table1_problems(path: Path, tasks: Sequence[str], systems: Sequence[str]) -> list[str]:
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    if not rows or sorted(rows[0][1:]) != sorted(tasks):  # in any order (a run's, or the paper's)
        return [f"{path}: the columns are {rows[0][1:] if rows else 'missing'}, not the tasks {list(tasks)}"]
    cells = {row[0]: dict(zip(rows[0][1:], row[1:])) for row in rows[1:]}
    problems = []
    for system in list(systems) + [s for s in cells if s not in systems]:  # the required rows, and every other
        for task in tasks:
            value = cells.get(system, {}).get(task, "")
            try:
                float(value)
            except ValueError:
                problems.append(f"{path}: {system} on {task} has no score ({value or 'empty'})")
    return problems


def _file_problem(path: Path) -> str | None:
    if not path.is_file() or path.stat().st_size == 0:
        return f"{path}: missing or empty"
    if path.suffix == ".png" and path.read_bytes()[:8] != PNG_MAGIC:
        return f"{path}: not a PNG image"
    if path.suffix == ".json":
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            return f"{path}: not valid JSON ({e})"
    return None


def check_report(out: Path, tasks: Sequence[str], systems: Sequence[str], table2_tasks: Sequence[str]) -> list[str]:
    """Every problem of the folder `out` (empty when Table 1 has a row of scores for each of `systems`, every other
    row it has is full too, and every promised file is there and readable)."""
    problems = [p for name in promised_files(systems, table2_tasks) if (p := _file_problem(out / name))]
    if (out / "table1.csv").is_file():
        problems += _table1_problems(out / "table1.csv", tasks, systems)
    return problems


def _names(value: str, everything: Sequence[str]) -> list[str]:
    if value == "none":
        return []
    return list(everything) if value == "all" else [v.strip() for v in value.split(",") if v.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pipeline.report.check", description=__doc__.split("\n")[0])
    p.add_argument("out", type=Path, help="the reproduce-table output folder")
    p.add_argument("--tasks", default="all", help="comma-separated tasks, or all (every config in --config-dir)")
    p.add_argument("--systems", default="all",
                   help=f"comma-separated systems Table 1 must have, or all (the paper's: {','.join(DEFAULT_SYSTEMS)})")
    p.add_argument("--table2-tasks", default="eng-ger", help="the run's Table 2 tasks, all or none")
    p.add_argument("--config-dir", type=Path, default=configs.CONFIG_DIR)
    args = p.parse_args(argv)
    tasks = _names(args.tasks, configs.available("tasks", args.config_dir))
    problems = check_report(args.out, tasks, _names(args.systems, DEFAULT_SYSTEMS), _names(args.table2_tasks, tasks))
    for problem in problems:
        print(f"check: {problem}", file=sys.stderr)
    if not problems:
        rows = len((args.out / "table1.csv").read_text(encoding="utf-8").splitlines()) - 1
        print(f"check: {args.out} is complete: Table 1 has {rows} systems x {len(tasks)} tasks, every score there, "
              "and every promised file is there")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
