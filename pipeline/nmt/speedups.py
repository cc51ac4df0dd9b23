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
- threads: ``torch.set_num_threads`` (the `--threads` options).
"""
from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import torch
from torch import nn

__all__ = ["CpuSpeedups", "apply_speedups"]


@dataclass(frozen=True)
class CpuSpeedups:
    int8: bool = False
    precompute_embeddings: bool = False
    ancestry_cache: bool = False

    @classmethod
    def of(cls, decode: Any) -> "CpuSpeedups":
        """The speed-ups a profile's [decode] (a DecodeProfile, or an export's settings as a mapping) turns on; a
        setting it does not name is off (the exports written before it existed)."""
        get = decode.get if isinstance(decode, Mapping) else (lambda key, default: getattr(decode, key, default))
        return cls(**{name: bool(get(name, False)) for name in cls.__dataclass_fields__})

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
    return model
