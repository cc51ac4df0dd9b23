"""Running real Luigi (local scheduler) on tasks of a small data folder."""
from __future__ import annotations

from pathlib import Path

import luigi

from pipeline.config import CONFIG_DIR
from pipeline.data.resolver import CHECKOUT


def shared_params(tmp_path: Path, data_dir: Path, config_dir: Path = CONFIG_DIR) -> dict:
    return {"task_name": "ger-eng", "profile": "tiny", "work_dir": str(tmp_path / "work"), "data_dir": str(data_dir),
            "cache_dir": str(tmp_path / "cache"), "tools_dir": str(CHECKOUT / "tools"), "processes": 1,
            "config_dir": str(config_dir)}


def build(*tasks: luigi.Task) -> luigi.execution_summary.LuigiRunResult:
    return luigi.build(list(tasks), local_scheduler=True, detailed_summary=True, workers=1,
                       log_level="WARNING")


def artifacts(work_dir: Path) -> dict[str, float]:
    """Every finished artifact (folder with a signature.json) and the time it was written."""
    return {str(p.parent.relative_to(work_dir)): p.stat().st_mtime for p in Path(work_dir).rglob("signature.json")}
