"""The base of every stage: one artifact directory per parameter set, written atomically, with a signature.

An artifact lives in `<work_dir>/<profile>/<task_name>/<stage>/<label>-<hash>/`. The hash covers the stage's
own parameters and the folders of everything it requires, so a changed parameter anywhere upstream builds a new
artifact instead of reusing an old one. The folder is built under a temporary name and renamed into place with
its `signature.json` inside, so a killed task leaves nothing that looks complete.
"""
from __future__ import annotations

import functools
import getpass
import platform
import socket
import time
from pathlib import Path
from typing import Any, Callable, ClassVar

import luigi

from pipeline import config as configs
from pipeline.data.resolver import CHECKOUT
from pipeline.io import atomic_dir, exclusive, read_json, remove_stale_temporaries, write_json
from pipeline.machine import describe_cpu
from pipeline.report.provenance import code_version
from pipeline.signature import format_signature, param_hash
from tasks.cluster import run_as_job, submits


@functools.lru_cache(maxsize=None)
def task_config(name: str, config_dir: str = str(configs.CONFIG_DIR)) -> configs.TaskConfig:
    return configs.load_task(name, Path(config_dir))


@functools.lru_cache(maxsize=None)
def profile_config(name: str, config_dir: str = str(configs.CONFIG_DIR)) -> configs.Profile:
    return configs.load_profile(name, Path(config_dir))


def _setting(name: str) -> dict[str, str]:
    """Shared defaults live once in luigi.cfg's [lmbr] section. Luigi 3.8 warns that config_path is deprecated in
    favour of per-class sections, which would repeat every setting for every task class."""
    return {"section": "lmbr", "name": name}


def shard_bounds(total: int, shard: int, shards: int) -> tuple[int, int]:
    """[first, last) of part `shard` of `shards` consecutive, near-equal pieces of `total` items."""
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} of {shards}")
    return total * shard // shards, total * (shard + 1) // shards


class AtSnapshot:
    """A stage about an NMT system at a snapshot of its models' training (the checkpoint of update `snapshot`, kept
    by training.snapshot_every) instead of the final, averaged models: the strength curve (tasks/strength.py)
    decodes and tunes each snapshot as Table 1 does the final model. 0, the default, is the final model."""

    snapshot = luigi.IntParameter(default=0, description="the models at this update of their training (a kept "
                                  "snapshot) instead of the final averaged ones; 0: the final models")


class PipelineTask(luigi.Task):
    """A stage of one translation task under one profile. Subclasses set `stage` and write `build()`."""

    task_name = luigi.Parameter(description="translation task: ger-eng, eng-ger, chi-eng, eng-jpn, jpn-eng")
    profile = luigi.Parameter(config_path=_setting("profile"),
                              description="scale profile: tiny, medium, paper-rehearsal, paper")
    # Folders that decide what is built or where are part of Luigi's task id; caches and tools are not.
    work_dir = luigi.Parameter(config_path=_setting("work_dir"), description="folder of all artifacts")
    data_dir = luigi.OptionalParameter(default=None, config_path=_setting("data_dir"),
                                       description="data folder (<pair>/<split>.<lang>.gz)")
    cache_dir = luigi.Parameter(config_path=_setting("cache_dir"), significant=False,
                                description="folder of downloads and tool caches")
    tools_dir = luigi.Parameter(config_path=_setting("tools_dir"), significant=False,
                                description="folder of built tools (kenlm/bin/lmplz)")
    config_dir = luigi.Parameter(default=str(configs.CONFIG_DIR), config_path=_setting("config_dir"),
                                 description="folder of tasks/*.toml and profiles/*.toml")
    processes = luigi.IntParameter(config_path=_setting("processes"), significant=False,
                                   description="processes a task may use for parallel work")

    stage: ClassVar[str] = ""
    # The version of the code that writes this stage's artifact: part of its hash. Bump it when a change of code
    # changes the artifact, so that reruns rebuild it (tasks/versions.py, tests/tasks/test_stage_versions.py).
    version: ClassVar[int] = 1
    parallel: ClassVar[bool] = False  # uses `processes` processes or threads (alignment, phrases, decoding, NMT)
    memory_mb: ClassVar[int] = 1000   # memory to reserve while it runs (an estimate at the medium profile's data sizes)
    batch: ClassVar[bool] = False     # heavy: runs as a batch job when luigi.cfg's [cluster] scheduler is not local
    shardable: ClassVar[bool] = False  # defines build_shard / merge_shards: [cluster] decode_shards jobs

    def needs(self) -> dict[str, int]:
        """What this task uses while it runs: `cpu` (its processes), `memory_mb`, and `gpu` when it would use one."""
        needed = {"cpu": max(1, self.processes) if self.parallel else 1, "memory_mb": self.memory_mb}
        if self.uses_gpu():
            needed["gpu"] = 1
        return needed

    @property
    def resources(self) -> dict[str, int]:
        """Luigi resources: the needs whose capacity luigi.cfg's [resources] sets, at most that capacity, so that
        workers sharing a scheduler do not oversubscribe a host. (Luigi gives an unconfigured resource a capacity of
        1, which would block a task that needs 2: unconfigured needs are not declared.)"""
        config = luigi.configuration.get_config()
        held = {}
        for name, amount in self.needs().items():
            if config.has_option("resources", name):
                held[name] = min(amount, config.getint("resources", name))
        return held

    def uses_gpu(self) -> bool:
        return False

    @property
    def config(self) -> configs.TaskConfig:
        return task_config(self.task_name, self.config_dir)

    @property
    def profile_config(self) -> configs.Profile:
        return profile_config(self.profile, self.config_dir)

    def label(self) -> str:
        """First part of the artifact folder's name (the hash follows)."""
        return self.stage

    def params(self) -> dict[str, Any]:
        """The parameters that determine the artifact (besides its inputs); they go into the hash."""
        return {}

    def build(self, out: Path) -> dict[str, Any]:
        """Write the artifact into `out` (a temporary folder); return statistics for the signature."""
        raise NotImplementedError

    # Sharded stages (decoding a split as several batch jobs) also define these two:
    def build_shard(self, out: Path, shard: int, shards: int) -> dict[str, Any]:
        """Write part `shard` of `shards` (consecutive pieces of the input, in order) into `out`."""
        raise NotImplementedError(f"{type(self).__name__} is not sharded")

    def merge_shards(self, parts: list[Path], out: Path) -> dict[str, Any]:
        """Write the artifact into `out` from the parts' folders (in order); return statistics."""
        raise NotImplementedError(f"{type(self).__name__} is not sharded")

    def inputs(self) -> list["PipelineTask"]:
        return list(luigi.task.flatten(self.requires()))

    def signature_params(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "version": self.version,
            "task": self.task_name,
            "profile": self.profile,
            **self.params(),
            # a stage about the models at a snapshot of their training (AtSnapshot); 0 leaves the hash
            **({"snapshot": self.snapshot} if getattr(self, "snapshot", 0) else {}),
            "inputs": sorted(str(t.artifact_dir().relative_to(Path(t.work_dir))) for t in self.inputs()),
        }

    def artifact_dir(self) -> Path:
        cached = self.__dict__.get("_artifact_dir")
        if cached is None:
            name = f"{self.label()}-{param_hash(self.signature_params())}"
            cached = Path(self.work_dir) / self.profile / self.task_name / self.stage / name
            self.__dict__["_artifact_dir"] = cached
        return cached

    def output(self) -> luigi.LocalTarget:
        return luigi.LocalTarget(str(self.artifact_dir() / "signature.json"))

    def input_dir(self, index: int = 0) -> Path:
        return self.inputs()[index].artifact_dir()

    def signature(self) -> dict[str, Any]:
        return read_json(self.artifact_dir() / "signature.json")

    def run(self) -> None:
        """Build here, or as a batch job when luigi.cfg's [cluster] scheduler says so and this is a heavy stage."""
        if submits(self):
            run_as_job(self)
        else:
            self.build_artifact()

    def build_artifact(self, build: Callable[[Path], dict[str, Any]] | None = None) -> None:
        """Build the artifact (with `build`, default self.build) in a temporary folder and rename it into place
        with its signature."""
        final = self.artifact_dir()
        # Tasks that differ only in parameters which do not shape the artifact (a Table 2 variant that keeps the
        # PBMT limits, say) share its folder: one builds it, the other then finds it built.
        with exclusive(final):
            if (final / "signature.json").exists():
                return
            self._build_locked(final, build)

    def _build_locked(self, final: Path, build: Callable[[Path], dict[str, Any]] | None) -> None:
        remove_stale_temporaries(final.parent, final.name)
        started = time.time()
        with atomic_dir(final) as tmp:
            stats = (build or self.build)(tmp)
            params = self.signature_params()
            cpu = describe_cpu()
            write_json(tmp / "signature.json", {
                "signature": format_signature({k: v for k, v in params.items() if k != "inputs"}),
                "params": params,
                "stats": stats,
                "seconds": round(time.time() - started, 3),
                "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "host": socket.gethostname(),
                "user": getpass.getuser(),
                "python": platform.python_version(),
                # what built it, for the provenance of each cell of a report (pipeline/report/cell_provenance.py)
                "code": code_version(CHECKOUT),
                "cpu": {"model": cpu.model, "variant": cpu.variant},
            })
