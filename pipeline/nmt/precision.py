"""Mixed precision for training (autocast, with a gradient scaler for fp16) and half precision for decoding.

A profile asks for a precision; the device decides what runs. "bf16" and "fp16" run the forward pass under
``torch.autocast`` (the loss is computed in fp32 either way) and "fp16" scales the loss against underflow
(``torch.amp.GradScaler``, whose state goes into every checkpoint).

- CUDA: "bf16" (on GPUs with bfloat16) and "fp16" run as asked.
- CPU: "bf16" runs where the CPU computes bfloat16 natively (avx512_bf16 or AMX, through oneDNN), else fp32;
  "fp16" always becomes fp32. So the paper profile keeps its GPU settings and still runs on a machine without one.
- "auto": bf16 wherever it is native (CUDA with bfloat16, or such a CPU), fp32 elsewhere.

What ran is recorded in the model's signature (TrainNMT's "precision"). Tests pass a precision to the Trainer
directly to exercise the autocast path on any CPU (CPU autocast emulates both half types where they are not native).
"""
from __future__ import annotations

import contextlib
import logging
from typing import ContextManager

import torch

from pipeline.config import PRECISIONS
from pipeline.errors import ConfigError

_LOG = logging.getLogger(__name__)
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware (avx512_bf16 or AMX tiles, used by oneDNN)."""
    return torch.backends.mkldnn.is_available() and (torch.cpu._is_avx512_bf16_supported()
                                                     or torch.cpu._is_amx_tile_supported())


def training_precision(requested: str, device: torch.device) -> str:
    """What a profile's `precision` becomes on `device` (see the module docstring)."""
    if requested not in PRECISIONS:
        raise ConfigError(f"training precision {requested!r}: must be one of {', '.join(PRECISIONS)}")
    if requested == "fp32":
        return requested
    if device.type != "cuda":
        if requested in ("bf16", "auto") and cpu_has_native_bf16():
            return "bf16"
        if requested != "auto":
            _LOG.info("precision %s has no native support on this CPU: training in fp32", requested)
        return "fp32"
    if requested == "auto":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    if requested == "bf16" and not torch.cuda.is_bf16_supported():
        raise ConfigError(f"precision bf16: {torch.cuda.get_device_name(device)} has no bfloat16 support; "
                          f"set the profile's nmt.<arch>.training.precision to fp16 or fp32")
    return requested


def autocast(precision: str, device: torch.device) -> ContextManager:
    """The forward pass's context: torch.autocast in a half type, or nothing for fp32."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=_DTYPES[precision])


def grad_scaler(precision: str, device: torch.device) -> torch.amp.GradScaler:
    """A loss scaler, on for fp16 only (bf16 has fp32's range); a disabled one passes everything through."""
    return torch.amp.GradScaler(device.type, enabled=precision == "fp16")


def decoding_half(fp16: bool, device: torch.device) -> bool:
    """Whether to decode in half precision: the profile's `decode.fp16`, on CUDA only."""
    return fp16 and device.type == "cuda"
