"""What every benchmark reports beside its numbers: the machine it ran on."""
from __future__ import annotations

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
