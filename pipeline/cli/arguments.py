"""Argument types shared by the `lmbr` subcommands."""
from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer of at least 1 (argparse type)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return value
