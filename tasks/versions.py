"""Stage versions: a rerun after an upgrade rebuilds what the new code would write differently.

Every stage has a `version` (PipelineTask.version) that enters its artifact's hash, so bumping it rebuilds that
stage's artifacts and everything downstream, and nothing else. `stage_versions.json` beside this module records,
per stage, the version and the fingerprint of the code behind it (pipeline/code_fingerprint.py: the stage's tasks
module and the pipeline/ and lattices/ modules it imports). tests/tasks/test_stage_versions.py fails when a
fingerprint changed but the record was not renewed: whoever changes the code decides whether the stage's output
changes (then bump `version`), and records the decision:

    .venv/bin/python -m tasks.versions            # what changed since the record
    .venv/bin/python -m tasks.versions --record   # after bumping the versions of the stages whose output changed
"""
from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from pathlib import Path

import tasks
from pipeline.code_fingerprint import fingerprint
from pipeline.io import write_json
from tasks.base import PipelineTask

RECORD = Path(__file__).with_name("stage_versions.json")
FOLLOW = ("pipeline", "lattices")


def stage_classes() -> dict[str, type[PipelineTask]]:
    """Every concrete stage (a PipelineTask subclass with a `stage`) of the tasks package, by class name."""
    for module in pkgutil.iter_modules(tasks.__path__):
        importlib.import_module(f"tasks.{module.name}")
    found, todo = {}, [PipelineTask]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.stage and cls.__module__.startswith("tasks."):
            found[cls.__name__] = cls
    return dict(sorted(found.items()))


def current() -> dict[str, dict]:
    """{class name: {"stage", "version", "code"}} of the code as it is now."""
    return {name: {"stage": cls.stage, "version": cls.version, "code": fingerprint(cls.__module__, FOLLOW)}
            for name, cls in stage_classes().items()}


def recorded(path: Path = RECORD) -> dict[str, dict]:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def stale(now: dict[str, dict], record: dict[str, dict]) -> list[str]:
    """One line per stage whose code or version differs from the record (or that has none)."""
    lines = []
    for name, entry in now.items():
        old = record.get(name)
        if old is None:
            lines.append(f"{name}: not recorded")
        elif old["code"] != entry["code"] and old["version"] == entry["version"]:
            lines.append(f"{name} ({entry['stage']}): its code changed but version is still {entry['version']}: "
                         "bump it if the artifact changes, then record")
        elif old != entry:
            lines.append(f"{name} ({entry['stage']}): version {old['version']} -> {entry['version']}: record it")
    lines += [f"{name}: recorded but no longer a stage" for name in record if name not in now]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tasks.versions", description=__doc__.split("\n")[0])
    p.add_argument("--record", action="store_true", help=f"write the current versions and code into {RECORD.name}")
    args = p.parse_args(argv)
    now = current()
    if args.record:
        write_json(RECORD, now)
        print(f"recorded {len(now)} stages in {RECORD}")
        return 0
    lines = stale(now, recorded())
    print("\n".join(lines) if lines else "every stage's code matches its recorded version")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
