"""A decoding step's small operations on one thread, its large matrix products on all (a CPU decoding speed-up,
CpuSpeedups.serial_small_ops).

A step of batched beam search is many small operations: layer norms, additions, attention of a few dozen rows, the
matrix products of a few dozen rows, the search's own bookkeeping. torch runs each on all its intra-op threads, and
each parallel region wakes the threads that wait for work. When they sleep (OpenMP's passive waiting,
OMP_WAIT_POLICY=PASSIVE, or a busy machine that took their cores) a wake-up costs more than the operation: a layer
norm of 64 x 64 took 8.5 microseconds on one thread and 104 on two (AMD EPYC, passive waiting;
docs/benchmarks/decoding-speed.md). So where they sleep, during a step (`serial_steps`, around the search's step) torch runs on one
thread, and only a linear layer of at least `min_macs` multiply-adds on its input (the output projection over the
vocabulary; the feed-forward layers of a wide model or a large batch) takes the threads torch had outside.

The operations are those of the plain path; a reduction split over fewer threads sums in another order, so scores
move within float rounding, as with another thread count (tests/pipeline/nmt/test_threads.py: the same hypotheses,
scores within 1e-5).

    apply_speedups(model, CpuSpeedups(serial_small_ops=True))   # hooks on the model's linear layers
    with serial_steps(model):                                   # a model or an Ensemble of them
        log_probs, state = model.step(state, prev)
"""
from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager
from typing import Any, Iterator, Mapping

import torch
from torch import Tensor, nn

__all__ = ["SerialSmallOps", "linear_macs", "serial_steps", "threads_wait_passively"]

LINEAR_TYPES: tuple[type, ...] = (nn.Linear, torch.ao.nn.quantized.dynamic.Linear)


def threads_wait_passively(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether OpenMP's idle threads sleep (OMP_WAIT_POLICY=PASSIVE): where serial small operations pay. With
    spinning threads (ACTIVE, or the runtime's default short spin) a wake-up is cheap and the second thread's share
    of the small operations is lost (0.81x in fp32, 1.16x in int8 at the tiny size; docs/benchmarks/decoding-speed.md)."""
    return environ.get("OMP_WAIT_POLICY", "").strip().lower() == "passive"


def linear_macs(module: nn.Module, x: Tensor) -> int:
    """Multiply-adds of a linear layer (in_features -> out_features) on x [..., in_features]."""
    return (x.numel() // module.in_features) * module.in_features * module.out_features


class SerialSmallOps:
    """The hooks of one model's linear layers: inside `serial(threads)`, a layer call of at least min_macs
    multiply-adds runs on `threads` threads, every other operation on one; outside, nothing changes."""

    def __init__(self, min_macs: int = 1 << 23) -> None:
        self.min_macs = min_macs
        self.threads = 1   # the threads of a large layer, while inside

    @contextmanager
    def serial(self, threads: int) -> Iterator[None]:
        """Inside: this model's large linear layers on `threads` threads (torch's count is the caller's to set)."""
        outer, self.threads = self.threads, threads
        try:
            yield
        finally:
            self.threads = outer

    def attach(self, model: nn.Module) -> int:
        """Hooks on every linear layer of `model` (nn.Linear, and the dynamic int8 Linear of quantize_dynamic);
        returns how many layers were hooked."""
        hooked = 0
        for module in model.modules():
            if isinstance(module, LINEAR_TYPES):
                module.register_forward_pre_hook(self._widen)
                module.register_forward_hook(self._narrow)
                hooked += 1
        return hooked

    def _widen(self, module: nn.Module, inputs: tuple[Tensor, ...]) -> None:
        if self.threads > 1 and linear_macs(module, inputs[0]) >= self.min_macs:
            torch.set_num_threads(self.threads)

    def _narrow(self, module: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
        if self.threads > 1:
            torch.set_num_threads(1)


@contextmanager
def serial_steps(model: Any) -> Iterator[None]:
    """Inside: torch on one intra-op thread, the large linear layers of `model` (or of every member of an
    Ensemble) with SerialSmallOps on the threads torch had on entering; a model without it changes nothing."""
    members = getattr(model, "models", [model])
    policies = [p for p in (getattr(m, "step_threads", None) for m in members) if isinstance(p, SerialSmallOps)]
    threads = torch.get_num_threads()
    if not policies or threads == 1:
        yield
        return
    with ExitStack() as stack:
        for policy in policies:
            stack.enter_context(policy.serial(threads))
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)
