"""The two architectures by name: model configs from a profile and the vocabularies, and models from configs.

A model config holds everything needed to rebuild the network (sizes, vocabulary sizes, the target special ids
taken from the Vocabulary); a checkpoint stores it as a plain dict beside the weights.
"""
from __future__ import annotations

from typing import Any, Union

from pipeline.config import GruProfile, TransformerProfile
from pipeline.nmt.gru import GruConfig, GruModel
from pipeline.nmt.interface import NMTModel
from pipeline.nmt.transformer import TransformerConfig, TransformerModel
from pipeline.vocab import Vocabulary

ModelConfig = Union[GruConfig, TransformerConfig]
ARCHITECTURES: dict[str, tuple[type, type[NMTModel]]] = {
    "gru": (GruConfig, GruModel),
    "transformer": (TransformerConfig, TransformerModel),
}


def model_config(architecture: str, profile: GruProfile | TransformerProfile, src_vocab: Vocabulary,
                 tgt_vocab: Vocabulary) -> ModelConfig:
    """The config of a model of `architecture` with the profile's sizes over the given vocabularies."""
    common = dict(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab), pad_id=tgt_vocab.pad_id,
                  bos_id=tgt_vocab.bos_id, eos_id=tgt_vocab.eos_id, dropout=profile.dropout)
    if architecture == "gru":
        assert isinstance(profile, GruProfile)
        return GruConfig(embed_size=profile.embed_size, hidden_size=profile.hidden_size,
                         attention_size=profile.attention_size, encoder_layers=profile.encoder_layers, **common)
    if architecture == "transformer":
        assert isinstance(profile, TransformerProfile)
        return TransformerConfig(layers=profile.layers, model_size=profile.model_size, heads=profile.heads,
                                 ff_size=profile.ff_size, attention_dropout=profile.attention_dropout,
                                 activation_dropout=profile.activation_dropout,
                                 source_word_dropout=profile.source_word_dropout,
                                 target_word_dropout=profile.target_word_dropout,
                                 decoder_layerdrop=profile.decoder_layerdrop, **common)
    raise ValueError(f"unknown NMT architecture {architecture!r} (known: {', '.join(ARCHITECTURES)})")


def config_from_dict(data: dict[str, Any]) -> ModelConfig:
    """The config that `config.to_dict()` wrote; ValueError on an unknown architecture or unknown keys."""
    architecture = data.get("architecture")
    if architecture not in ARCHITECTURES:
        raise ValueError(f"unknown NMT architecture {architecture!r} (known: {', '.join(ARCHITECTURES)})")
    try:
        return ARCHITECTURES[architecture][0](**data)
    except TypeError as e:
        raise ValueError(f"bad {architecture} model config: {e}") from None


def build_model(config: ModelConfig) -> NMTModel:
    """A freshly initialised model (seed torch first for a reproducible initialisation)."""
    return ARCHITECTURES[config.architecture][1](config)


def limit_vocabulary(vocab: Vocabulary, max_size: int) -> Vocabulary:
    """The `max_size` most frequent entries (specials included; 0 keeps all): BuildVocab orders by frequency."""
    return vocab if max_size <= 0 or len(vocab) <= max_size else Vocabulary(vocab.tokens[:max_size])
