"""Benchmark: how far the tuned systems' devtest BLEU moves when the tuning sentences change.

The LMBR hybrids, the lattice-rescoring systems and lattice MBR are tuned on a window of the tuning split (`[lmbr]
tune_start` .. tune_start + tune_sentences). A choice that another draw of tuning sentences would not repeat is
noise; this script measures it. For each window of `--windows` (START:COUNT, e.g. `0:300 300:300 0:500`) it copies
the configs (`--config-dir`, default the checkout's) with the profile's `[lmbr] tune_start` and `tune_sentences`
set to the window (and any `--lmbr KEY=VALUE`, e.g. `tie_bleu=0.3` or `race_keep=0.5`, in every copy), then builds
with the pipeline's own tasks (luigi, local scheduler, the work folder's trained systems and lattices shared by all
windows) the tuning stages (TuneLMBR, TuneSearch, TuneRescoring, TuneMBR) and EvaluateSystem of every system on the
devtest split. It reports per system the chosen point and its tuning BLEU of each window, its devtest BLEU, and the
spread of the devtest BLEU (max - min over the windows). It measures one system at a time over every window and
writes the JSON after each (`complete`: false until the last), so that a run cut short keeps the systems it finished.
With `--each-search`, LNMT and LTNMT are also decoded with each search of `[lmbr] grid_search` imposed (the window's
TuneLMBR point, TuneSearch left out): each search's tuning BLEU (TuneSearch's) and devtest BLEU per window, from
which the spread of any rule for choosing the search (always free, always anchored, a tie margin) follows.

    .venv/bin/python benchmarks/tuning_stability.py --profile medium --task ger-eng --work-dir work \
        --windows 0:300 300:300 0:500 --out results/benchmarks/tuning_stability_medium_ger-eng.json

Each window other than the profile's own costs the posteriors of the tuning sentences up to its end (BuildLMatrix of
the tuning split's first tune_start + tune_sentences), every tuning stage and the devtest decodings of its choices.
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
from pipeline.io import read_json, write_json  # noqa: E402

#: the systems whose rows depend on the tuning window, and the tuning stages each one's choice comes from
SYSTEMS = ("LNMT", "LTNMT", "FNMT-lat", "TNMT-lat", "LNMT-lat", "LTNMT-lat", "MBR")


def parse_window(text: str) -> tuple[int, int]:
    """START:COUNT -> (start, count)."""
    start, _, count = text.partition(":")
    try:
        window = int(start), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a window is START:COUNT, e.g. 0:300") from None
    if window[0] < 0 or window[1] < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: START must not be negative and COUNT must be at least 1")
    return window


def window_configs(source: Path, folder: Path, profile: str, window: tuple[int, int],
                   overrides: dict[str, str]) -> Path:
    """A copy of the configs with the profile's tuning window (and the --lmbr overrides) set."""
    shutil.copytree(source, folder)
    set_profile_keys(folder / "profiles" / f"{profile}.toml", "lmbr",
                     {**overrides, "tune_start": str(window[0]), "tune_sentences": str(window[1])})
    return folder


def tuning_tasks(system: str, params: dict[str, Any]) -> list:
    """The tuning stages whose choices a system may decode with (those that its decoding requires are read)."""
    from tasks.mbr import TuneMBR
    from tasks.tuning import TuneLMBR, TuneRescoring, TuneSearch

    models = "TNMT" if system.startswith(("LTNMT", "TNMT")) else "FNMT"
    if system == "MBR":
        return [TuneMBR(**params)]
    if system.endswith("-lat"):
        return [TuneRescoring(models=models, lmbr=system.startswith("L"), **params)]
    return [TuneLMBR(models=models, **params), TuneSearch(models=models, **params)]


def choice(task) -> dict[str, Any]:
    """A built tuning stage's chosen point and its tuning BLEU (None where the artifact does not say)."""
    from tasks.tuning import TuneSearch

    record = read_json(task.artifact_dir() / choice_file(task))
    chosen = record["chosen"]
    if isinstance(task, TuneSearch):  # with [lmbr] search_evidence its evidence space replaces TuneLMBR's
        return {**chosen, "tune_bleu": round(record["bleu"][chosen["search"]], 2)}
    matches = [point["bleu"] for point in record["grid"] if "eliminated_at" not in point and
               all(point.get(key) == value for key, value in chosen.items())]
    return {**chosen, "tune_bleu": round(matches[0], 2) if matches else None}


def choice_file(task) -> str:
    """The file in which a tuning stage records its choice."""
    from tasks.mbr import MBR_CHOICE_FILE, TuneMBR
    from tasks.tuning import CHOICE_FILE, RESCORING_FILE, SEARCH_FILE, TuneLMBR, TuneSearch

    if isinstance(task, TuneMBR):
        return MBR_CHOICE_FILE
    if isinstance(task, TuneSearch):
        return SEARCH_FILE
    return CHOICE_FILE if isinstance(task, TuneLMBR) else RESCORING_FILE


def devtest_bleu(system: str, params: dict[str, Any], split: str, workers: int, what: str) -> float:
    """Build one system's devtest decoding (and the tuning stages it requires) on a config copy: its BLEU."""
    import luigi

    from tasks.evaluate import EvaluateSystem

    evaluation = EvaluateSystem(system=system, split=split, **params)
    result = luigi.build([evaluation], local_scheduler=True, detailed_summary=True, workers=workers,
                         log_level="WARNING")
    if not evaluation.complete():
        raise SystemExit(f"{what} {system}: the pipeline failed\n{result.summary_text}")
    return evaluation.signature()["stats"]["bleu"]["score"]


def measure_window(system: str, window: tuple[int, int], params: dict[str, Any], split: str,
                   workers: int) -> dict[str, Any]:
    """Build one system's tuning stages and devtest decoding on one window's configs: its choice and devtest BLEU."""
    began = time.monotonic()  # the decoding requires the tuning stages that the profile's grids call for
    bleu = devtest_bleu(system, params, split, workers, f"window {window[0]}:{window[1]}")
    chosen = {}
    for task in tuning_tasks(system, params):
        if task.complete():
            chosen.update(choice(task))
    print(f"window {window[0]}:{window[1]} {system}: devtest BLEU {bleu:.2f}, chosen {chosen} "
          f"({time.monotonic() - began:.0f} s)", flush=True)
    return {"window": list(window), "chosen": chosen, "devtest_bleu": round(bleu, 2)}


def measure_searches(system: str, window: tuple[int, int], params: dict[str, Any], imposed: dict[str, Path],
                     split: str, workers: int) -> dict[str, dict[str, float | None]]:
    """LNMT/LTNMT on one window with each search imposed: {search: {tune_bleu (TuneSearch's), devtest_bleu}}."""
    tuning = tuning_tasks(system, params)[-1]  # TuneSearch, built by the window's own measurement
    tuned = read_json(tuning.artifact_dir() / choice_file(tuning))["bleu"] if tuning.complete() else {}
    found = {}
    for search, configs in imposed.items():
        bleu = devtest_bleu(system, {**params, "config_dir": str(configs)}, split, workers,
                            f"window {window[0]}:{window[1]}, {search} search")
        found[search] = {"tune_bleu": round(tuned[search], 2) if search in tuned else None,
                         "devtest_bleu": round(bleu, 2)}
        print(f"window {window[0]}:{window[1]} {system}, {search} search: devtest BLEU {bleu:.2f}", flush=True)
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    work_folder_arguments(p, ', copied once per window')
    p.add_argument("--windows", type=parse_window, nargs="+",
                   help="START:COUNT windows of the tuning split, at least two (default: the profile's own window "
                   "and the next one of the same size)")
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--split", help="the devtest split to decode (default: the task's first devtest split)")
    p.add_argument("--lmbr", action="append", default=[], metavar="KEY=VALUE",
                   help="an [lmbr] setting for every window's copy (TOML value), e.g. tie_bleu=0.3; repeatable")
    p.add_argument("--each-search", action="store_true",
                   help="LNMT and LTNMT also decoded with each search of [lmbr] grid_search imposed")
    p.add_argument("--processes", type=int, default=2, help="threads and processes of each stage")
    p.add_argument("--workers", type=int, default=1, help="luigi workers")
    p.add_argument("--out", type=Path, help="JSON: per system, each window's choice and devtest BLEU, and the spread "
                   "(written after each system; `complete` false until the last)")
    args = p.parse_args(argv)

    from pipeline.config import load_profile, load_task

    source = args.config_dir or REPO / "configs"
    overrides = dict(item.split("=", 1) for item in args.lmbr)
    own = load_profile(args.profile, source).lmbr
    windows = args.windows or [(own.tune_start, own.tune_sentences),
                               (own.tune_start + own.tune_sentences, own.tune_sentences)]
    if len(windows) < 2:
        raise SystemExit("--windows: give at least two windows to compare")
    split = args.split or load_task(args.task, source).splits.devtest[0]
    common = pipeline_params(args)
    systems: dict[str, dict] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tuning-stability-") as tmp:
        folders = [window_configs(source, Path(tmp) / f"window-{k}", args.profile, window, overrides)
                   for k, window in enumerate(windows)]
        searches = own.search_forms() if args.each_search else ()
        imposed = [{search: window_configs(source, Path(tmp) / f"window-{k}-{search}", args.profile, window,
                                           {**overrides, "grid_search": "[]", "search": f'"{search}"'})
                    for search in searches} for k, window in enumerate(windows)]
        for configs in folders:  # a window past the prepared tuning lines: its ConfigError before any work
            load_profile(args.profile, configs)
        for system in args.systems:  # one system at a time, over every window: a cut run keeps the systems done
            found = [measure_window(system, window, {**common, "config_dir": str(configs)}, split, args.workers)
                     for window, configs in zip(windows, folders)]
            scores = [row["devtest_bleu"] for row in found]
            systems[system] = {"windows": found, "spread": round(max(scores) - min(scores), 2),
                               "same_choice": all(row["chosen"] == found[0]["chosen"] for row in found)}
            if searches and system in ("LNMT", "LTNMT"):
                for row, window, configs, each in zip(found, windows, folders, imposed):
                    row["searches"] = measure_searches(system, window, {**common, "config_dir": str(configs)},
                                                       each, split, args.workers)
                systems[system]["search_spread"] = {
                    search: round(max(r["searches"][search]["devtest_bleu"] for r in found) -
                                  min(r["searches"][search]["devtest_bleu"] for r in found), 2)
                    for search in searches}
            print(f"{system}: devtest BLEU {' / '.join(f'{s:.2f}' for s in scores)}, spread "
                  f"{systems[system]['spread']:.2f}", flush=True)
            if args.out:  # after each system, so that the figures measured so far are kept
                write_json(args.out, {"benchmark": "tuning_stability",
                                      "command": " ".join([Path(sys.executable).name, *sys.argv]),
                                      "machine": machine(args.processes),
                                      "profile": args.profile, "task": args.task, "split": split,
                                      "windows": [list(window) for window in windows], "lmbr": overrides,
                                      "complete": len(systems) == len(args.systems),
                                      "seconds": round(time.monotonic() - started, 1), "systems": systems})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
