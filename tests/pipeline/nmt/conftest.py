"""Fixtures of the NMT tests: a digit vocabulary, synthetic copy/reverse data, tiny models, trained models.

Training is the slow part: the two trained models are built once per session and shared by the tests that need a
model that has learned something (greedy decoding, ensembles, CTranslate2 export). One thread: the tests run
beside other work on a 2-core machine, where 2 threads per process oversubscribe the cores.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from pipeline.config import NmtTrainingProfile
from pipeline.nmt.gru import GruConfig, GruModel
from pipeline.nmt.interface import NMTModel
from pipeline.nmt.train import ParallelText, Trainer
from pipeline.nmt.transformer import TransformerConfig, TransformerModel
from pipeline.vocab import Vocabulary

torch.set_num_threads(1)

DIGITS = [str(i) for i in range(10)]


def digit_vocab() -> Vocabulary:
    return Vocabulary.build([DIGITS])


def digit_data(n: int, seed: int, task: str, max_len: int = 8) -> ParallelText:
    """n random digit strings of 1..max_len digits and their copy or reverse."""
    rng = random.Random(seed)
    sources = [[rng.choice(DIGITS) for _ in range(rng.randint(1, max_len))] for _ in range(n)]
    targets = [s[::-1] if task == "reverse" else list(s) for s in sources]
    return ParallelText(sources, targets)


def gru_config(vocab: Vocabulary, **sizes) -> GruConfig:
    return GruConfig(**{"src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab), "pad_id": vocab.pad_id,
                        "bos_id": vocab.bos_id, "eos_id": vocab.eos_id, "embed_size": 32, "hidden_size": 64,
                        "attention_size": 64, **sizes})


def transformer_config(vocab: Vocabulary, **sizes) -> TransformerConfig:
    return TransformerConfig(**{"src_vocab_size": len(vocab), "tgt_vocab_size": len(vocab), "pad_id": vocab.pad_id,
                                "bos_id": vocab.bos_id, "eos_id": vocab.eos_id, "layers": 2, "model_size": 64,
                                "heads": 4, "ff_size": 128, **sizes})


def make_model(architecture: str, vocab: Vocabulary, seed: int = 0, **sizes) -> NMTModel:
    torch.manual_seed(seed)
    if architecture == "gru":
        return GruModel(gru_config(vocab, **sizes))
    return TransformerModel(transformer_config(vocab, **sizes))


def training_profile(**overrides) -> NmtTrainingProfile:
    values = dict(seeds=(1,), max_tokens=600, lr=3e-3, lr_schedule="inverse_sqrt", warmup_updates=50,
                  label_smoothing=0.0, clip_norm=1.0, max_updates=300, budget_seconds=0, checkpoint_every=1000,
                  keep_checkpoints=1, average_checkpoints=1, valid_sentences=0)
    return NmtTrainingProfile(**{**values, **overrides})


@dataclass
class Trained:
    model: NMTModel
    vocab: Vocabulary
    task: str
    seconds: float
    folder: Path


# GRU: reverse in 300 updates; Transformer: copy in 400 (reverse takes it about 1000 updates, too slow for the suite).
RECIPES = {"gru": ("reverse", 300), "transformer": ("copy", 400)}


@pytest.fixture(scope="session")
def train_once(tmp_path_factory):
    """get(architecture) -> Trained: the model trained on its RECIPES task, once per session."""
    cache: dict[str, Trained] = {}

    def get(architecture: str) -> Trained:
        if architecture not in cache:
            task, updates = RECIPES[architecture]
            vocab = digit_vocab()
            config = (gru_config if architecture == "gru" else transformer_config)(vocab)
            folder = tmp_path_factory.mktemp(f"trained-{architecture}")
            started = time.monotonic()
            trainer = Trainer(config, training_profile(max_updates=updates, checkpoint_every=updates), seed=1,
                              src_vocab=vocab, tgt_vocab=vocab, train=digit_data(4000, seed=0, task=task),
                              state_dir=folder, device="cpu", log_every=100)
            trainer.run()
            cache[architecture] = Trained(trainer.model.eval(), vocab, task, time.monotonic() - started, folder)
        return cache[architecture]

    return get


@pytest.fixture(params=sorted(RECIPES))
def trained(request, train_once) -> Trained:
    return train_once(request.param)


@pytest.fixture
def vocab() -> Vocabulary:
    return digit_vocab()
