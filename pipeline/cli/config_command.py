"""`lmbr config [TASK] [--profile P]`: list, or load, validate and print, a task config and a profile."""
from __future__ import annotations

import argparse
import dataclasses
import json

from pipeline import config as configs


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("config", help="list, or validate and show, task configs and profiles")
    p.add_argument("task", nargs="?", help="task config to show (e.g. ger-eng); none lists them all")
    p.add_argument("--profile", default=None, help=f"profile to show as well ({', '.join(configs.available('profiles'))})")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.task is None and args.profile is None:
        print("tasks:", ", ".join(configs.available("tasks")))
        print("profiles:", ", ".join(configs.available("profiles")))
        return 0
    shown = {}
    if args.task:
        shown["task"] = dataclasses.asdict(configs.load_task(args.task))
    if args.profile:
        shown["profile"] = dataclasses.asdict(configs.load_profile(args.profile))
    print(json.dumps(shown, indent=2, default=str))
    return 0
