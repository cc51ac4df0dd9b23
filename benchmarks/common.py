"""What benchmarks share: the machine they ran on (reported beside every number), and the artifacts of a work folder
they read."""
from __future__ import annotations

import itertools
import os
import platform
from pathlib import Path

import torch


def machine(threads: int, device: str = "cpu") -> dict:
    """CPU model, cores, platform, torch version and threads, the load average at the start, OMP_WAIT_POLICY, and
    the device the benchmark ran on (with the GPU's name for a CUDA device)."""
    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
            "torch_threads": threads, "load_average_at_start": os.getloadavg(), "device": device,
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", ""),
            **({"gpu": torch.cuda.get_device_name(device), "cuda": torch.version.cuda}
               if device.startswith("cuda") else {})}


def newest_artifact(root: Path, stage: str, label: str) -> Path | None:
    """The newest complete artifact `<root>/<stage>/<label>-<hash>/` (one with its signature.json), or None."""
    found = sorted(root.glob(f"{stage}/{label}-*/signature.json"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None


def artifact(root: Path, stage: str, label: str) -> Path:
    """`newest_artifact`, or an exit that says which stage to build first."""
    found = newest_artifact(root, stage, label)
    if found is None:
        raise SystemExit(f"no {stage}/{label}-*/signature.json under {root}: run the data stages first, e.g. "
                         f"`luigi --module tasks BuildVocab ...` and `ApplyBPE ... --split SPLIT` for the profile and "
                         f"task")
    return found


def first_lines(path: Path, n: int) -> list[str]:
    """The first `n` lines of a (gzipped) text file, without their newlines."""
    from pipeline.io import read_lines

    return list(itertools.islice(read_lines(path), n))
