"""Data-parallel training (torch.distributed, DistributedDataParallel): the ranks and the few collectives the
Trainer needs.

Every rank builds the same global batch (the TokenBatcher is a pure function of the seed and the epoch) and
trains on its own slice of the rows (`shard`). Each rank's summed loss is divided by the global batch's target
tokens over the number of ranks; DDP averages the gradients, so every update equals the single-process update on
the same global batch up to floating-point summation order. `max_tokens` is therefore the size of an update in
all ranks together, and a run resumes under any number of ranks from the same checkpoints.

Ranks come from the environment torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); the
backend is NCCL on CUDA and gloo on the CPU.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Ranks:
    """This process's place in the job: rank r of world_size processes, local_rank on its node."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        """Rank 0: it validates, writes checkpoints and metrics."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @classmethod
    def from_env(cls) -> "Ranks":
        """The ranks torchrun gives this process (one process, rank 0, outside torchrun)."""
        return cls(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)),
                   int(os.environ.get("LOCAL_RANK", 0)))


def rank_device(ranks: Ranks) -> torch.device:
    """CUDA device local_rank when there are GPUs, else the CPU."""
    if torch.cuda.is_available():
        torch.cuda.set_device(ranks.local_rank)
        return torch.device("cuda", ranks.local_rank)
    return torch.device("cpu")


def start(ranks: Ranks, device: torch.device) -> None:
    """Join the process group (env:// rendezvous that torchrun prepared); nothing to do for one process."""
    if ranks.distributed and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=ranks.rank,
                                world_size=ranks.world_size)


def stop(ranks: Ranks) -> None:
    if ranks.distributed and dist.is_initialized():
        dist.destroy_process_group()


def shard(ids: np.ndarray, ranks: Ranks) -> np.ndarray:
    """This rank's rows of a global batch: consecutive slices as equal as they can be (some may be empty)."""
    return np.array_split(np.asarray(ids), ranks.world_size)[ranks.rank]


def _on_backend(values: Sequence[float]) -> torch.Tensor:
    """values as float64, on the GPU for NCCL (which reduces only CUDA tensors)."""
    tensor = torch.tensor(list(values), dtype=torch.float64)
    return tensor.cuda() if dist.get_backend() == "nccl" else tensor


def all_sum(values: Sequence[float], ranks: Ranks) -> list[float]:
    """Each value summed over the ranks (in float64, so every rank gets the same sums)."""
    if not ranks.distributed:
        return list(values)
    total = _on_backend(values)
    dist.all_reduce(total)
    return total.cpu().tolist()


def from_main(value: float, ranks: Ranks) -> float:
    """Rank 0's value on every rank (the elapsed time that decides the budget stop): a tensor broadcast, no
    pickling, since it runs every update."""
    if not ranks.distributed:
        return value
    box = _on_backend([value])
    dist.broadcast(box, src=0)
    return float(box.cpu()[0])


def gather(value: Any, ranks: Ranks) -> list[Any]:
    """Every rank's value, in rank order, on every rank (random states for a checkpoint)."""
    if not ranks.distributed:
        return [value]
    out: list[Any] = [None] * ranks.world_size
    dist.all_gather_object(out, value)
    return out


def barrier(ranks: Ranks) -> None:
    if ranks.distributed:
        dist.barrier()
