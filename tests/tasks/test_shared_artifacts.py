"""Two tasks that resolve to one artifact folder (Table 2 variants that keep the PBMT limits, say) build it once,
even when two workers start them at the same moment."""
import threading
import time
from pathlib import Path

import luigi

from tasks.base import PipelineTask


class SlowStage(PipelineTask):
    """Writes a file after a pause; `who` names the caller and, like a variant that changes nothing, no hash."""

    stage = "slow"
    who = luigi.Parameter(default="", significant=False)

    def build(self, out: Path) -> dict:
        log = Path(self.work_dir) / "builds.log"
        with log.open("a") as f:
            f.write(f"{self.who}\n")
        time.sleep(0.5)
        (out / "result.txt").write_text("built\n")
        return {}


def test_concurrent_builders_of_one_folder_build_it_once(tmp_path):
    common = {"task_name": "ger-eng", "profile": "tiny", "work_dir": str(tmp_path), "cache_dir": str(tmp_path),
              "tools_dir": str(tmp_path), "processes": 1}
    first, second = SlowStage(who="a", **common), SlowStage(who="b", **common)
    assert first.artifact_dir() == second.artifact_dir()
    threads = [threading.Thread(target=task.build_artifact) for task in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len((tmp_path / "builds.log").read_text().splitlines()) == 1
    assert (first.artifact_dir() / "result.txt").read_text() == "built\n" and first.complete()
    leftovers = [p.name for p in first.artifact_dir().parent.iterdir() if p != first.artifact_dir()]
    assert leftovers == [first.artifact_dir().name + ".lock"]  # the lock file only; no temporary folder
