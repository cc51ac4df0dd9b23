"""Mixed precision for training (autocast, with a gradient scaler for fp16) and half precision for decoding.

A profile asks for a precision; the device decides what runs. On CUDA, "bf16" and "fp16" run the forward pass under
``torch.autocast`` (the loss is computed in fp32 either way) and "fp16" scales the loss against underflow
(``torch.amp.GradScaler``, whose state goes into every checkpoint). On the CPU a profile's precision is off: the
paper profile keeps its GPU settings and still runs, in fp32, on a machine without one. Tests pass a precision to
the Trainer directly to exercise the autocast path on the CPU (CPU autocast supports both half types).
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


def training_precision(requested: str, device: torch.device) -> str:
    """What a profile's `precision` becomes on `device`: itself on CUDA, fp32 on the CPU."""
    if requested not in PRECISIONS:
        raise ConfigError(f"training precision {requested!r}: must be one of {', '.join(PRECISIONS)}")
    if requested == "fp32":
        return requested
    if device.type != "cuda":
        _LOG.info("precision %s is for CUDA: training in fp32 on %s", requested, device)
        return "fp32"
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
