"""Benchmark: what a length penalty tuned per NMT system gains over the shared one, on devtest with significance.

For the plain NMT systems (--systems, default FNMT and TNMT) of a built work folder, it copies the configs twice:
once with `[decode] grid_length_penalty = []` (every system decodes with `[decode] length_penalty`, the profile's
artifacts) and once with the grid --grid. With the pipeline's own tasks (luigi, local scheduler, the work folder's
trained models shared by both) it builds in the second copy TuneLengthPenalty (the alpha of the grid with the
highest BLEU on the tuning window) and the devtest decoding with the chosen alpha, in the first the decoding with
the shared one, and compares them by paired bootstrap (pipeline/evaluation/significance.py). Per system: each
alpha's tuning BLEU, the choice, both devtest BLEU scores, the p-value and the length ratios.

    .venv/bin/python benchmarks/length_tuning.py --profile medium --task jpn-eng --work-dir work \
        --grid 0 0.5 1 1.5 --out results/benchmarks/length_tuning_medium_jpn-eng.json

Costs the tuning window's decodings once per alpha and one devtest decoding per system.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from common import machine, pipeline_params, set_profile_keys, work_folder_arguments  # noqa: E402
from pipeline.io import read_json, read_lines, write_json  # noqa: E402

SYSTEMS = ("FNMT", "TNMT")


def configs_with_grid(source: Path, folder: Path, profile: str, grid: list[float]) -> Path:
    """A copy of the configs whose profile tunes the length penalty over `grid` (empty: no tuning)."""
    shutil.copytree(source, folder)
    set_profile_keys(folder / "profiles" / f"{profile}.toml", "decode",
                     {"grid_length_penalty": "[" + ", ".join(repr(float(a)) for a in grid) + "]"})
    return folder


def compared(system: str, shared, tuned, tuning) -> dict[str, Any]:
    """One system's record: the tuning BLEU of each alpha, the choice, both devtest scores and their paired
    bootstrap."""
    from pipeline.evaluation.significance import paired_bootstrap

    target = shared.config.target
    hyps = {name: list(read_lines(task.requires()["translation"].artifact_dir() / f"translation.{target}"))
            for name, task in (("shared", shared), ("tuned", tuned))}
    references = list(read_lines(shared.requires()["raw"].artifact_dir() / f"raw.{target}.gz"))
    test = paired_bootstrap((f"{system} shared", hyps["shared"]), [(f"{system} tuned", hyps["tuned"])],
                            references, target)
    bleu = next(record for record in test if record["metric"] == "BLEU")
    scores = {name: task.signature()["stats"]["bleu"] for name, task in (("shared", shared), ("tuned", tuned))}
    record = read_json(tuning.artifact_dir() / "length_penalty.json")
    return {"tuning": {"bleu": record["bleu"], "chosen": record["chosen"]["length_penalty"],
                       "sentences": record["sentences"]},
            "shared_length_penalty": shared.profile_config.decode.length_penalty,
            "devtest": {"shared": round(scores["shared"]["score"], 2), "tuned": round(scores["tuned"]["score"], 2),
                        "difference": round(scores["tuned"]["score"] - scores["shared"]["score"], 2),
                        "p_value": bleu["p_value"], "ci": bleu["ci"],
                        "length_ratio": {name: round(score["sys_len"] / max(score["ref_len"], 1), 4)
                                         for name, score in scores.items()}}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    work_folder_arguments(p)
    p.add_argument("--grid", type=float, nargs="+", default=[0.0, 0.5, 1.0, 1.5],
                   help="the length penalties to tune over")
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--split", help="the devtest split to decode (default: the task's first devtest split)")
    p.add_argument("--processes", type=int, default=2, help="threads and processes of each stage")
    p.add_argument("--workers", type=int, default=1, help="luigi workers")
    p.add_argument("--out", type=Path, help="JSON: per system, the tuning, both devtest scores, the p-value")
    args = p.parse_args(argv)
    if any(alpha < 0 for alpha in args.grid):
        raise SystemExit("--grid: length penalties are not negative")

    import luigi

    from pipeline.config import load_task
    from tasks.evaluate import EvaluateSystem
    from tasks.length_penalty import TuneLengthPenalty

    source = args.config_dir or REPO / "configs"
    split = args.split or load_task(args.task, source).splits.devtest[0]
    common = pipeline_params(args)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="length-tuning-") as tmp:
        shared_params = {**common, "config_dir": str(configs_with_grid(source, Path(tmp) / "shared", args.profile,
                                                                       []))}
        tuned_params = {**common, "config_dir": str(configs_with_grid(source, Path(tmp) / "tuned", args.profile,
                                                                      args.grid))}
        tasks = {system: (EvaluateSystem(system=system, split=split, **shared_params),
                          EvaluateSystem(system=system, split=split, **tuned_params),
                          TuneLengthPenalty(models=system, **tuned_params)) for system in args.systems}
        wanted = [task for group in tasks.values() for task in group]
        result = luigi.build(wanted, local_scheduler=True, detailed_summary=True, workers=args.workers,
                             log_level="WARNING")
        if not all(task.complete() for task in wanted):
            raise SystemExit(f"the pipeline failed\n{result.summary_text}")
        systems = {system: compared(system, *group) for system, group in tasks.items()}
    for system, found in systems.items():
        tuning, devtest = found["tuning"], found["devtest"]
        alphas = ", ".join(f"{point['length_penalty']:g}: {point['bleu']:.2f}" for point in tuning["bleu"])
        print(f"{system}: tuning BLEU by alpha {{{alphas}}}, chosen {tuning['chosen']:g}; devtest "
              f"{devtest['shared']:.2f} -> {devtest['tuned']:.2f} ({devtest['difference']:+.2f}, p "
              f"{devtest['p_value']})", flush=True)
    if args.out:
        command = [Path(sys.executable).name, "benchmarks/length_tuning.py", *(sys.argv[1:] if argv is None else argv)]
        write_json(args.out, {"benchmark": "length_tuning", "command": " ".join(command),
                              "machine": machine(args.processes),
                              "profile": args.profile, "task": args.task, "split": split, "grid": args.grid,
                              "seconds": round(time.monotonic() - started, 1), "systems": systems})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
