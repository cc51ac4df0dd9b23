"""Learning-rate schedules: linear warm-up, then inverse square-root decay (Vaswani et al. 2017) or constant.

The factor multiplies the peak learning rate; `update` counts from 1 (the first optimizer step):

    inverse_sqrt: update / warmup while update < warmup, then sqrt(warmup / update)   (1 / sqrt(update) if no warm-up)
    constant:     update / warmup while update < warmup, then 1
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch.optim.lr_scheduler import LambdaLR

SCHEDULES = ("inverse_sqrt", "constant")


def lr_factor(schedule: str, warmup: int) -> Callable[[int], float]:
    """The factor of the peak learning rate at a 1-based update number."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown learning-rate schedule {schedule!r} (known: {', '.join(SCHEDULES)})")

    def factor(update: int) -> float:
        update = max(update, 1)
        if warmup > 0 and update < warmup:
            return update / warmup
        if schedule == "constant":
            return 1.0
        return math.sqrt(max(warmup, 1) / update)

    return factor


def make_scheduler(optimizer: torch.optim.Optimizer, schedule: str, warmup: int) -> LambdaLR:
    """A LambdaLR whose step k (0-based, as LambdaLR counts) sets the rate of update k + 1.

    Its state_dict (the step count) is all a resumed run needs; the function itself is rebuilt from the profile.
    """
    factor = lr_factor(schedule, warmup)
    return LambdaLR(optimizer, lambda step: factor(step + 1))
