"""Benchmark: how often a tuning choice made on the whole tuning set would be made again on a resampled one.

Two choices are made on every tuning sentence at once: a -lat system's mu (TuneRescoring, the grid point of highest
BLEU, with `[lmbr] rescoring_sentences`) and LNMT's and LTNMT's search, free or anchored in the lattice (TuneSearch,
with `[lmbr] search_sentences`). Disjoint windows cannot measure the stability of such a choice; a bootstrap can: draw
the tuning sentences again with replacement (`--samples` times), choose again from the outputs the stage kept for
every candidate (no decoding), and count each candidate's share of the choices
(pipeline/evaluation/choice_bootstrap.py). Then every candidate chosen in at least `--min-share` of the resamples is
decoded on the devtest split with the pipeline's own tasks (a copy of the configs that imposes it: a mu grid of that
one point, or that one search; the tuned candidate is the table's own system), so that the spread of devtest BLEU
over the choices a redrawn tuning set would make is measured, not guessed: the spread over those choices, and the
share of the resamples whose choice scores within `--tolerance` (0.3) devtest BLEU of the tuned one's.

It reads the work folder's built tuning artifacts (reproduce-table builds them) and fails, naming the system, where
one is missing or predates the kept outputs.

    .venv/bin/python benchmarks/tuning_bootstrap.py --profile medium --task chi-eng --work-dir work \
        --out results/benchmarks/tuning_bootstrap_medium_chi-eng.json
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from common import machine, pipeline_params, set_profile_keys, work_folder_arguments  # noqa: E402
from pipeline.io import read_json, write_json  # noqa: E402
from tuning_stability import devtest_bleu  # noqa: E402

RESCORED = ("FNMT-lat", "TNMT-lat", "LNMT-lat", "LTNMT-lat")  # mu, chosen by TuneRescoring
SEARCHED = ("LNMT", "LTNMT")  # the search, chosen by TuneSearch
SYSTEMS = RESCORED + SEARCHED


def tuning_task(system: str, params: dict[str, Any]):
    """The tuning stage whose choice the bootstrap repeats: TuneRescoring of a -lat system, TuneSearch of LNMT/LTNMT."""
    from tasks.tuning import TuneRescoring, TuneSearch

    models = "TNMT" if system.startswith(("LTNMT", "TNMT")) else "FNMT"
    if system in SEARCHED:
        return TuneSearch(models=models, **params)
    return TuneRescoring(models=models, lmbr=system.startswith("L"), **params)


def label(candidate: dict[str, Any]) -> str:
    """A candidate for the printout: "mu 3", "anchored search", "anchored search, 200-best"."""
    if "lattice_weight" in candidate:
        return f"mu {candidate['lattice_weight']:g}"
    nbest = candidate.get("nbest")
    return f"{candidate['search']} search" + ("" if nbest is None else f", {nbest or 'full lattice'}"
                                              + ("-best" if nbest else ""))


def kept_outputs(task, system: str) -> tuple[list[dict], list[list[str]], list[str], list[float], dict]:
    """The built stage's candidates ({lattice_weight}, or {search} and with [lmbr] search_evidence {search, nbest}),
    their tuning outputs, the window's references, each candidate's tuning BLEU as the stage recorded it, and the
    chosen candidate."""
    from tasks.tuning import (RESCORING_FILE, RESCORING_OUTPUTS_FILE, SEARCH_FILE, SEARCH_OUTPUTS_FILE, TuneSearch,
                              window_lines)

    searched = isinstance(task, TuneSearch)
    folder, stage = task.artifact_dir(), type(task).__name__
    kept = SEARCH_OUTPUTS_FILE if searched else RESCORING_OUTPUTS_FILE
    if not task.complete():
        raise SystemExit(f"{system}: {stage} is not built in {task.work_dir} (run reproduce-table first)")
    if not (folder / kept).exists():
        raise SystemExit(f"{system}: {folder} keeps no {kept} (built before the outputs were kept: remove it and "
                         "build it again)")
    with gzip.open(folder / kept, "rt", encoding="utf-8") as stream:
        decoded = json.load(stream)
    lmbr = task.profile_config.lmbr
    window = lmbr.search_window() if searched else lmbr.rescoring_window()
    references = window_lines(task, task.requires()["raw"].artifact_dir() / f"raw.{task.config.target}.gz",
                              window=window)[0]
    incomplete = [k for k, point in enumerate(decoded) if len(point["outputs"]) != len(references)]
    if incomplete:
        raise SystemExit(f"{system}: {folder} was tuned by a race (points {incomplete} stopped early): the bootstrap "
                         "needs every point on every tuning sentence ([lmbr] rescoring_sentences)")
    outputs = [point["outputs"] for point in decoded]
    if searched:
        record = read_json(folder / SEARCH_FILE)
        candidates = [{key: entry[key] for key in ("search", "nbest") if key in entry} for entry in decoded]
        if "evidence" in record:
            bleu = [row["bleu"] for row in record["evidence"]]
        else:
            bleu = [record["bleu"][candidate["search"]] for candidate in candidates]
        return candidates, outputs, references, bleu, record["chosen"]
    record = read_json(folder / RESCORING_FILE)
    return ([{"lattice_weight": point["point"]["lattice_weight"]} for point in decoded], outputs, references,
            [grid["bleu"] for grid in record["grid"]], {"lattice_weight": record["chosen"]["lattice_weight"]})


def point_configs(source: Path, folder: Path, profile: str, mu: float) -> Path:
    """A copy of the configs whose rescoring grid is the one mu (decoded on one tuning sentence: nothing to choose)."""
    shutil.copytree(source, folder)
    set_profile_keys(folder / "profiles" / f"{profile}.toml", "lmbr",
                     {"grid_lattice_weight": f"[{mu!r}]", "rescoring_sentences": "1"})
    return folder


def search_configs(source: Path, folder: Path, profile: str, search: str) -> Path:
    """A copy of the configs that imposes the one search (no TuneSearch: nothing to choose)."""
    shutil.copytree(source, folder)
    set_profile_keys(folder / "profiles" / f"{profile}.toml", "lmbr", {"grid_search": "[]", "search": f'"{search}"'})
    return folder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    work_folder_arguments(p)
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--samples", type=int, default=1000, help="bootstrap resamples of the tuning sentences")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--min-share", type=float, default=0.05,
                   help="decode the devtest split at every mu chosen in at least this share of the resamples")
    p.add_argument("--tolerance", type=float, default=0.3,
                   help="the share of the resamples whose choice scores within this devtest BLEU of the tuned one's")
    p.add_argument("--split", help="the devtest split (default: the task's first devtest split)")
    p.add_argument("--processes", type=int, default=2, help="threads and processes of each stage")
    p.add_argument("--out", type=Path, help="JSON: per system, each mu's share of the choices and devtest BLEU")
    args = p.parse_args(argv)

    from pipeline.config import load_task
    from pipeline.evaluation.choice_bootstrap import choice_shares

    source = args.config_dir or REPO / "configs"
    split = args.split or load_task(args.task, source).splits.devtest[0]
    common = pipeline_params(args)
    target = load_task(args.task, source).target
    systems: dict[str, Any] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tuning-bootstrap-") as tmp:
        for system in args.systems:
            task = tuning_task(system, {**common, "config_dir": str(source)})
            candidates, outputs, references, tune_bleu, chosen = kept_outputs(task, system)
            shares, as_is = choice_shares(outputs, references, target, args.samples, args.seed)
            rows = [{**candidate, "share": round(share, 4), "tune_bleu": round(bleu, 2)}
                    for candidate, share, bleu in zip(candidates, shares, tune_bleu)]
            for candidate, row in zip(candidates, rows):
                if candidate == chosen:  # the system as the table has it (built already)
                    configs = source
                elif row["share"] < args.min_share:
                    continue
                elif "lattice_weight" in candidate:
                    configs = point_configs(source, Path(tmp) / f"{system}-{label(candidate)}", args.profile,
                                            candidate["lattice_weight"])
                elif candidate.get("nbest") == chosen.get("nbest"):
                    configs = search_configs(source, Path(tmp) / f"{system}-{label(candidate)}", args.profile,
                                             candidate["search"])
                else:  # imposing another evidence space would change TuneLMBR's grid: counted as outside
                    row["undecoded"] = "another evidence space than the tuned one"
                    continue
                row["devtest_bleu"] = round(devtest_bleu(system, {**common, "config_dir": str(configs)}, split, 1,
                                                         label(candidate)), 2)
            decoded = [row["devtest_bleu"] for row in rows if "devtest_bleu" in row]
            tuned = next(row["devtest_bleu"] for candidate, row in zip(candidates, rows) if candidate == chosen)
            within = sum(row["share"] for row in rows  # a candidate left undecoded (below --min-share) is outside
                         if "devtest_bleu" in row and abs(row["devtest_bleu"] - tuned) <= args.tolerance + 1e-9)
            one = "lattice_weight" in chosen  # a -lat system's record names mu alone
            systems[system] = {"chosen": chosen["lattice_weight"] if one else chosen, "sentences": len(references),
                               "chosen_as_is": rows[as_is]["lattice_weight"] if one else candidates[as_is],
                               "share_of_the_choice": rows[as_is]["share"], "points": rows,
                               "spread": round(max(decoded) - min(decoded), 2),
                               "share_within_tolerance": round(within, 4)}
            shown = ", ".join(f"{label(candidate)} {100 * row['share']:.1f}%" + (
                f" (devtest {row['devtest_bleu']:.2f})" if "devtest_bleu" in row else "")
                for candidate, row in zip(candidates, rows))
            print(f"{system}: {shown}; spread {systems[system]['spread']:.2f}; within {args.tolerance:g} of the tuned "
                  f"choice's devtest BLEU: {100 * within:.1f}% of the resamples", flush=True)
            if args.out:  # after each system, so that the figures measured so far are kept
                write_json(args.out, {"benchmark": "tuning_bootstrap",
                                      "command": " ".join([Path(sys.executable).name, *sys.argv]),
                                      "machine": machine(args.processes), "profile": args.profile,
                                      "task": args.task, "split": split, "samples": args.samples,
                                      "seed": args.seed, "min_share": args.min_share, "tolerance": args.tolerance,
                                      "complete": len(systems) == len(args.systems),
                                      "seconds": round(time.monotonic() - started, 1), "systems": systems})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
