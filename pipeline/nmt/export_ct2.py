"""Export a trained Transformer to CTranslate2's format, for speed comparisons with the same weights.

The model is described with CTranslate2's Python spec API (a pre-norm TransformerSpec) and written by its
Converter machinery (validation, optional quantization, model.bin + vocabularies). Our layout maps one to one:
fused query/key/value projections in self-attention, fused key/value in cross-attention, the sinusoidal position
table passed explicitly, embeddings scaled by sqrt(d), the output projection tied to the target embeddings. The
source gets EOS appended by CTranslate2 (add_source_eos), as our encoder expects; the decoder starts from <s>.

ctranslate2 is an optional dependency (the `ct2` extra); importing this module does not need it.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import torch

from pipeline.io import atomic_dir
from pipeline.nmt.checkpoint import load_checkpoint, load_vocabularies, model_from_checkpoint
from pipeline.nmt.transformer import MultiHeadAttention, TransformerModel
from pipeline.vocab import BOS, EOS, UNK, Vocabulary


def _ct2():
    try:
        import ctranslate2
    except ImportError as e:
        raise ImportError("exporting to CTranslate2 needs the ctranslate2 package: pip install -e '.[ct2]'") from e
    return ctranslate2


def _numpy(t: torch.Tensor):
    return t.detach().cpu().float().numpy()


def _linear(spec, layer: torch.nn.Linear | None = None, weight: torch.Tensor | None = None,
            bias: torch.Tensor | None = None) -> None:
    spec.weight = _numpy(layer.weight if layer is not None else weight)
    b = layer.bias if layer is not None else bias
    if b is not None:
        spec.bias = _numpy(b)


def _norm(spec, norm: torch.nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _numpy(norm.weight), _numpy(norm.bias)


def _attention(spec, attn: MultiHeadAttention) -> None:
    """Our fused projections are CTranslate2's: self-attention's query/key/value, cross-attention's key/value."""
    if attn.self_attention:
        _linear(spec.linear[0], attn.in_proj)
    else:
        _linear(spec.linear[0], attn.query)
        _linear(spec.linear[1], attn.key_value)
    _linear(spec.linear[-1], attn.out)


def transformer_spec(model: TransformerModel, src_vocab: Vocabulary, tgt_vocab: Vocabulary):
    """CTranslate2 TransformerSpec holding the model's weights and vocabularies."""
    ct2 = _ct2()
    c = model.config
    if len(src_vocab) != c.src_vocab_size or len(tgt_vocab) != c.tgt_vocab_size:
        raise ValueError(f"vocabulary sizes {len(src_vocab)}/{len(tgt_vocab)} do not match the model's "
                         f"{c.src_vocab_size}/{c.tgt_vocab_size}")
    spec = ct2.specs.TransformerSpec.from_config((c.layers, c.layers), c.heads, pre_norm=True,
                                                 activation=ct2.specs.Activation.RELU)
    spec.config.layer_norm_epsilon = c.layer_norm_eps
    spec.config.add_source_eos = True
    spec.config.bos_token, spec.config.eos_token, spec.config.unk_token = BOS, EOS, UNK
    spec.config.decoder_start_token = BOS
    positions = _numpy(model.positions)
    enc, dec = spec.encoder, spec.decoder
    enc.embeddings[0].weight = _numpy(model.src_embed.weight)
    enc.position_encodings.encodings = positions
    _norm(enc.layer_norm, model.encoder_norm)
    for layer_spec, layer in zip(enc.layer, model.encoder_layers):
        _attention(layer_spec.self_attention, layer.self_attn)
        _norm(layer_spec.self_attention.layer_norm, layer.self_norm)
        _norm(layer_spec.ffn.layer_norm, layer.ff_norm)
        _linear(layer_spec.ffn.linear_0, layer.ff.inner)
        _linear(layer_spec.ffn.linear_1, layer.ff.outer)
    dec.embeddings.weight = _numpy(model.tgt_embed.weight)
    dec.position_encodings.encodings = positions
    _norm(dec.layer_norm, model.decoder_norm)
    _linear(dec.projection, model.output)
    for layer_spec, layer in zip(dec.layer, model.decoder_layers):
        _attention(layer_spec.self_attention, layer.self_attn)
        _norm(layer_spec.self_attention.layer_norm, layer.self_norm)
        _attention(layer_spec.attention, layer.cross_attn)
        _norm(layer_spec.attention.layer_norm, layer.cross_norm)
        _norm(layer_spec.ffn.layer_norm, layer.ff_norm)
        _linear(layer_spec.ffn.linear_0, layer.ff.inner)
        _linear(layer_spec.ffn.linear_1, layer.ff.outer)
    spec.register_source_vocabulary(list(src_vocab.tokens))
    spec.register_target_vocabulary(list(tgt_vocab.tokens))
    return spec


def export_model(model: TransformerModel, src_vocab: Vocabulary, tgt_vocab: Vocabulary, out_dir: Path,
                 quantization: str | None = None) -> Path:
    """Write a CTranslate2 model folder (replaced atomically); quantization as CTranslate2 names it (int8, ...)."""
    if not isinstance(model, TransformerModel):
        raise TypeError(f"only Transformer models export to CTranslate2, not {type(model).__name__}")
    ct2 = _ct2()
    spec = transformer_spec(model, src_vocab, tgt_vocab)

    class SpecConverter(ct2.converters.Converter):
        def _load(self):
            return spec

    with atomic_dir(Path(out_dir)) as tmp:
        target = tmp / "model"
        SpecConverter().convert(str(target), quantization=quantization, force=True)
        for item in target.iterdir():
            shutil.move(str(item), tmp / item.name)
        target.rmdir()
    return Path(out_dir)


def export_checkpoint(checkpoint: Path, out_dir: Path, quantization: str | None = None) -> Path:
    """Export a Transformer checkpoint file (its vocabularies are the files it names)."""
    ckpt = load_checkpoint(checkpoint)
    src_vocab, tgt_vocab = load_vocabularies(ckpt)
    return export_model(model_from_checkpoint(ckpt), src_vocab, tgt_vocab, out_dir, quantization)
