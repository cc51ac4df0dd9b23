"""Learning-rate schedules: linear warm-up, then inverse square-root decay (Vaswani et al. 2017), constant, or a
linear decay to zero at the last update.

The factor multiplies the peak learning rate; `update` counts from 1 (the first optimizer step):

    inverse_sqrt: update / warmup while update < warmup, then sqrt(warmup / update)   (1 / sqrt(update) if no warm-up)
    constant:     update / warmup while update < warmup, then 1
    linear:       update / warmup while update < warmup, then (total + 1 - update) / (total + 1 - warmup): the last
                  update (`total`, the run's max_updates) trains at 1 / (total + 1 - warmup), and 0 comes after it

`linear` is the schedule for a fixed budget of updates (Li, Yumer and Ramanan 2020, "Budgeted training"): the rate
anneals to zero exactly when training stops, so the last checkpoint is the annealed one. It is the only schedule that
reads the number of updates; a run resumed past `total` trains at rate 0, so a learning curve past the profile's cap
needs another schedule.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch.optim.lr_scheduler import LambdaLR

SCHEDULES = ("inverse_sqrt", "constant", "linear")


def lr_factor(schedule: str, warmup: int, total: int = 0) -> Callable[[int], float]:
    """The factor of the peak learning rate at a 1-based update number; `total`: the last update (linear only)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown learning-rate schedule {schedule!r} (known: {', '.join(SCHEDULES)})")
    if schedule == "linear" and total <= warmup:
        raise ValueError(f"the linear schedule decays to 0 at max_updates, which must be above the warm-up "
                         f"({warmup}), not {total}")

    def factor(update: int) -> float:
        update = max(update, 1)
        if warmup > 0 and update < warmup:
            return update / warmup
        if schedule == "constant":
            return 1.0
        if schedule == "linear":
            return max(0.0, (total + 1 - update) / (total + 1 - warmup))
        return math.sqrt(max(warmup, 1) / update)

    return factor


def make_scheduler(optimizer: torch.optim.Optimizer, schedule: str, warmup: int, total: int = 0) -> LambdaLR:
    """A LambdaLR whose step k (0-based, as LambdaLR counts) sets the rate of update k + 1.

    Its state_dict (the step count) is all a resumed run needs; the function itself is rebuilt from the profile.
    """
    factor = lr_factor(schedule, warmup, total)
    return LambdaLR(optimizer, lambda step: factor(step + 1))
