"""`lmbr data fetch --profile P [--tasks ...]`: find or fetch every split a profile's run reads, before the run.

Each split is looked for as a run looks for it (pipeline/data/resolver.py): the data folder, the profile's bundled
data, the download cache, the pair's recipe (assembled into the cache from public repositories), the official
download. The test sets are left out: they are fetched only when a run asks for them.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from pipeline import config as configs
from pipeline.data.resolver import DATA_DIR_ENV, DataResolver
from pipeline.errors import DataError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("data", help="fetch the data a profile reads (training, tuning and devtest splits)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = actions.add_parser("fetch", help="find or fetch every split of the profile's tasks; print where each is")
    fetch.add_argument("--profile", default="medium", help="profile whose data to fetch (default: medium)")
    fetch.add_argument("--tasks", nargs="+", default=None, help="task configs (default: all of them)")
    fetch.add_argument("--data-dir", default=None, help=f"local data folder looked in first (default: ${DATA_DIR_ENV})")
    fetch.add_argument("--cache-dir", default="cache", help="download cache, as luigi.cfg's cache_dir (default: cache)")
    fetch.set_defaults(run=run_fetch)


def run_fetch(args: argparse.Namespace) -> int:
    profile = configs.load_profile(args.profile)
    resolver = DataResolver.create(args.data_dir, args.cache_dir, os.environ, profile=args.profile)
    failed = []
    for name in args.tasks or configs.available("tasks"):
        task = configs.load_task(name)
        splits = [task.splits.tune, *task.splits.devtest]
        reads_corpora = task.data_for(profile).train_source == "corpora"
        try:
            found = {"train": resolver.corpora(task)} if reads_corpora else {}
            for split in ([] if reads_corpora else [task.splits.train]) + splits:
                found[split] = resolver.resolve(task, split)
        except DataError as e:
            failed.append(f"{name}: {e}")
            continue
        for split, paths in found.items():
            where = sorted({str(Path(p).parent) for p in paths.values()})
            print(f"{name}\t{split}\t{', '.join(where)}")
    if failed:
        raise DataError("\n".join(failed))
    return 0
