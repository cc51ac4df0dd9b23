"""CPU decoding speed-ups (Devlin 2017; ALGORITHMS.md section 7), each switchable, applied to a model in eval mode.

- ``int8``: dynamic int8 quantisation of every nn.Linear and nn.GRUCell (weights int8, activations quantised per
  call); outputs change within quantisation noise. It uses torch.ao.quantization.quantize_dynamic, which PyTorch
  deprecates in favour of torchao. That API stays here because, as of torchao 0.18.0 (2026-08), its replacement
  (``quantize_`` with Int8DynamicActivationInt8WeightConfig) quantizes nn.Linear only, not the GRU's cells, and its
  recommended CPU path goes through torch.compile (the config's ``set_inductor_config``), which the decoder's
  changing shapes do not use; quantize_dynamic's fbgemm kernels run eagerly (benchmarks/ct2_speed.py measures them
  against CTranslate2's int8). Its deprecation notice is silenced at the one call below.
- ``precompute_embeddings`` (GRU): the previous token enters the decoder step through two matrix products of its
  embedding (the GRU cell's input weights, the deep output's weights). Both are computed once for the whole target
  vocabulary, so a step gathers rows instead of multiplying: exact up to floating-point summation order.
- ``ancestry_cache`` (Transformer): one self-attention cache per layer shared by all rows, read through each row's
  ancestors, so that beam reorders never copy caches (pipeline/nmt/ancestry.py); outputs change within rounding
  (the attention sums in another order).
- pre-computed attention keys (U h_j once per sentence) are always on (GruModel.encode), and the source side of
  the decoder state is never copied when the beam reshuffles within sentences (pipeline/nmt/interface.py).
- ``serial_small_ops``: each search step's small operations on one thread, its large matrix products on all of them
  (pipeline/nmt/threads.py: the search's step runs inside ``serial_steps``); outputs within rounding, as with
  another thread count. Not a profile setting: chosen at run time (``CpuSpeedups.of``), on where OpenMP's threads
  wait passively (OMP_WAIT_POLICY=PASSIVE), whose wake-ups it saves; off where they spin, where it loses.
- threads: ``torch.set_num_threads`` (the `--threads` options).
"""
from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import torch
from torch import nn

from pipeline.nmt.threads import SerialSmallOps, threads_wait_passively

__all__ = ["CpuSpeedups", "apply_speedups"]

PROFILE_SETTINGS = ("int8", "precompute_embeddings", "ancestry_cache")  # the speed-ups a profile's [decode] names


@dataclass(frozen=True)
class CpuSpeedups:
    int8: bool = False
    precompute_embeddings: bool = False
    ancestry_cache: bool = False
    serial_small_ops: bool = False

    @classmethod
    def of(cls, decode: Any) -> "CpuSpeedups":
        """The speed-ups of CPU decoding with a profile's [decode] (a DecodeProfile, or an export's settings as a
        mapping): the ones it turns on (a setting it does not name is off: the exports written before it existed),
        and serial_small_ops, which is no profile setting: on where OpenMP's threads wait passively."""
        get = decode.get if isinstance(decode, Mapping) else (lambda key, default: getattr(decode, key, default))
        return cls(**{name: bool(get(name, False)) for name in PROFILE_SETTINGS},
                   serial_small_ops=threads_wait_passively())

    def names(self) -> list[str]:
        return [name for name in self.__dataclass_fields__ if getattr(self, name)]


def apply_speedups(model: nn.Module, speedups: CpuSpeedups) -> nn.Module:
    """A copy of `model` with the chosen speed-ups (the model itself when none is chosen)."""
    if not speedups.names():
        return model
    model = copy.deepcopy(model).eval()
    if speedups.precompute_embeddings and hasattr(model, "precompute_embedding_projections"):
        model.precompute_embedding_projections()
    if speedups.ancestry_cache and hasattr(model, "ancestry_cache"):
        model.ancestry_cache = True
    if speedups.int8:
        with warnings.catch_warnings():  # torch.ao.quantization's deprecation notice (why it stays: the docstring)
            warnings.simplefilter("ignore")
            model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear, nn.GRUCell}, dtype=torch.qint8)
    if speedups.serial_small_ops:
        model.step_threads = SerialSmallOps()
        model.step_threads.attach(model)
    return model
