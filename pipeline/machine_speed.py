"""How fast this machine is for the work a run does, measured in seconds before the run starts.

Two probes: the fp32 matrix product (GFLOP/s, the number that tells CPU classes apart: about 72 on 2 threads of a
first-generation AVX2 EPYC, about 210 on an AVX-512 EPYC), and the seconds an update of an NMT model takes with the
project's own trainer (Trainer.train_step: Adam, label smoothing, clipping) at a profile's sizes, on synthetic token
batches of the recipe's size. The second is what a run's training time follows; pipeline/run_estimate.py scales
the rest of a run by it.
"""
from __future__ import annotations

import random
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

import torch

from pipeline.config import GruProfile, TransformerProfile
from pipeline.nmt.train import ParallelText, Trainer
from pipeline.vocab import Vocabulary


@dataclass(frozen=True)
class TrainingSpeed:
    architecture: str
    threads: int
    max_tokens: int
    seconds_per_update: float
    target_tokens_per_second: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _spawned(function: Any, *args: Any, **options: Any) -> Any:
    """function(*args, **options) in a fresh spawned process. A probe's thread pool must never start in the calling
    process: the processes it forks later (Luigi's workers) would inherit an OpenMP pool they cannot use, and hang
    in their first parallel torch operation."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(function, args, options)


def gemm_gflops(threads: int, seconds: float = 1.5, size: int = 1024) -> float:
    """The best rate of fp32 products of two size x size matrices over about `seconds`, in GFLOP/s (measured in a
    spawned process)."""
    return _spawned(_gemm_gflops, threads, seconds, size)


def training_speed(architecture: str, profile: GruProfile | TransformerProfile, threads: int, vocab_size: int,
                   updates: int = 6, warmup: int = 2) -> TrainingSpeed:
    """Seconds per update of a fresh model of the profile's sizes, trained with its recipe's batch size on
    synthetic text (`warmup` untimed updates, then `updates` timed ones), on the CPU, in a spawned process."""
    return _spawned(_training_speed, architecture, profile, threads, vocab_size, updates, warmup)


def _gemm_gflops(threads: int, seconds: float, size: int) -> float:
    with torch_threads(threads), torch.no_grad():
        a, b = torch.randn(size, size), torch.randn(size, size)
        torch.mm(a, b)  # the first call allocates and packs
        best, deadline = 0.0, time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            for _ in range(4):
                torch.mm(a, b)
            best = max(best, 4 * 2 * size ** 3 / (time.perf_counter() - start) / 1e9)
    return round(best, 1)


def synthetic_text(lines: int, vocab_size: int, seed: int = 0) -> tuple[ParallelText, Vocabulary]:
    """Random sentence pairs over a vocabulary of `vocab_size` types, lengths drawn like real ones (5-60 tokens)."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab_size - 4)]
    sources, targets = [], []
    for _ in range(lines):
        n = min(60, max(5, int(rng.lognormvariate(3.1, 0.5))))
        sources.append(rng.choices(words, k=n))
        targets.append(rng.choices(words, k=max(1, int(n * rng.uniform(0.8, 1.2)))))
    return ParallelText(sources, targets), Vocabulary.build([words])


def _training_speed(architecture: str, profile: GruProfile | TransformerProfile, threads: int, vocab_size: int,
                    updates: int, warmup: int) -> TrainingSpeed:
    from pipeline.nmt.models import model_config

    text, vocab = synthetic_text(2000, vocab_size)
    with torch_threads(threads), tempfile.TemporaryDirectory(prefix="lmbr-speed-") as tmp:
        config = model_config(architecture, profile, vocab, vocab)
        trainer = Trainer(config, profile.training, 1, vocab, vocab, text, Path(tmp), device="cpu")
        trainer.model.train()
        for _ in range(warmup):
            trainer.train_step(next(trainer.updates))
        tokens, start = 0, time.perf_counter()
        for _ in range(updates):
            tokens += trainer.train_step(next(trainer.updates))[2]
        elapsed = time.perf_counter() - start
        trainer.updates.close()
    return TrainingSpeed(architecture, threads, profile.training.max_tokens, elapsed / updates, tokens / elapsed)
