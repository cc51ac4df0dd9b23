"""Smoke tests of the kept benchmark suites: each runs on a tiny system in seconds, in this process, and its JSON is
checked for its fields and sane values. The trained system is the session's `exported_systems` pipeline (tiny
profile, de-en, built once and shared with the export and deployment tests)."""
from __future__ import annotations

import importlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))


def benchmark(name: str) -> ModuleType:
    """The script benchmarks/<name>.py as a module. Some set OMP_WAIT_POLICY when imported, for the processes they
    start; the test session's own setting is kept."""
    before = os.environ.get("OMP_WAIT_POLICY")
    module = importlib.import_module(name)
    if before is None:
        os.environ.pop("OMP_WAIT_POLICY", None)
    else:
        os.environ["OMP_WAIT_POLICY"] = before
    return module


@pytest.fixture
def run_benchmark(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """Runs benchmarks/<name>.py's main(argv) with its JSON written to tmp_path (the `output` option) and returns
    the JSON; torch's thread count is restored afterwards."""
    import torch

    threads = torch.get_num_threads()

    def run(name: str, *argv: str, output: str = "--out") -> dict[str, Any]:
        out = tmp_path / f"{name}.json"
        assert benchmark(name).main([*argv, output, str(out)]) in (0, None)
        return json.loads(out.read_text(encoding="utf-8"))

    yield run
    torch.set_num_threads(threads)


@dataclass(frozen=True)
class TinyRun:
    """The artifacts of the session's tiny de-en pipeline (task ger-eng, split newstest2016)."""

    work_dir: Path  # --work-dir (work/<profile>/<task> below it)
    config_dir: Path
    task_dir: Path

    def one(self, pattern: str) -> Path:
        """The one artifact file or folder matching `pattern` under the task's folder."""
        found = [p for p in self.task_dir.glob(pattern) if not p.name.endswith(".lock")]
        assert len(found) == 1, (pattern, found)
        return found[0]

    def export(self, system: str) -> Path:
        """An exported system's folder."""
        return self.one(f"export/{system}-newstest2016-*") / system


@pytest.fixture(scope="session")
def tiny_run(exported_systems) -> TinyRun:
    exports, _ = exported_systems
    task = exports["FNMT"]
    work = Path(task.work_dir)
    return TinyRun(work, Path(task.config_dir), work / "tiny" / "ger-eng")
