"""Export a trained Transformer to the Hugging Face `transformers` format: a BlenderbotForConditionalGeneration folder.

Of the `transformers` encoder-decoders, Blenderbot's layout is ours: pre-norm layers with a final LayerNorm on each
stack, no LayerNorm on the embeddings, biases on every projection, a configurable activation (ReLU), embeddings
scaled by sqrt(d) (`scale_embedding`), attention scaled by head_dim^-0.5, positions counted from 0 and read from a
table that is saved with the weights, the output projection tied to the embeddings, and a saved `final_logits_bias`.
M2M100/NLLB, also pre-norm with sinusoids, cannot hold our model exactly (docs/deployment.md says why).

Two differences are absorbed by transforming the weights, exactly in real arithmetic:

- LayerNorm eps: Blenderbot's LayerNorms are `nn.LayerNorm(d)` (eps 1e-5, not configurable), ours use 1e-6. As
  LN(c x; c^2 eps) = LN(x; eps), the exported model carries its residual stream at c = sqrt(1e-5 / 1e-6) times
  ours: embeddings and the position table times c, the last projection of every sub-layer (attention `out_proj`,
  feed-forward `fc2`: weight and bias) times c, the decoder's final LayerNorm (weight and bias) divided by c so that
  the tied output projection (c times our embeddings) gives our logits. Every LayerNorm inside then sees c times
  our input with c^2 times our eps: the same output. Only float rounding differs (c is not a power of two).
- Vocabularies: ours are two (source, target); Blenderbot has one table shared by the encoder, the decoder and the
  output. The joint vocabulary is the target's entries first (ids unchanged) and the source's after them (source id
  + `source_offset`, the target's size); `final_logits_bias` is -inf on the source entries, so they are never
  produced and the softmax over the joint vocabulary is ours over the target's.

The folder holds config.json, generation_config.json, model.safetensors, the two vocabularies (source_vocab.json,
target_vocab.json, our Vocabulary format) and lmbr_vocabulary.json (the offset and the special ids). There is no
`transformers` tokenizer: the text path is the project's (tokenize, truecase, subword-nmt BPE; pipeline/text/), and
`transformers` has no tokenizer for subword-nmt's "@@ " units. A user passes ids: :class:`ExportedVocabulary`
turns BPE subwords into the encoder's ids (EOS appended, as our encoder expects) and output ids into subwords.
:func:`load_exported` reads such a folder back for our own search (:class:`ExportedModel`), its scores as wide as the
target vocabulary, so that the pipeline's L matrices and acceptors index them as they index our model's.

transformers is an optional dependency (the `hf` extra); importing this module does not need it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import torch

from pipeline.io import atomic_dir, read_json, write_json
from pipeline.nmt.checkpoint import load_checkpoint, load_vocabularies, model_from_checkpoint
from pipeline.nmt.pretrained import PretrainedModel
from pipeline.nmt.transformer import TransformerModel
from pipeline.vocab import Vocabulary

__all__ = ["ExportedVocabulary", "export_checkpoint", "export_model", "hf_model", "VOCABULARY_FILE"]

VOCABULARY_FILE = "lmbr_vocabulary.json"
HF_LAYER_NORM_EPS = 1e-5  # nn.LayerNorm's default, which every Blenderbot LayerNorm uses


def _transformers():
    try:
        import transformers
    except ImportError as e:
        raise ImportError("exporting to transformers needs the transformers package: pip install -e '.[hf]'") from e
    return transformers


@dataclass(frozen=True)
class ExportedVocabulary:
    """The ids of an exported model: source subwords -> encoder ids, output ids -> target subwords."""

    source: Vocabulary
    target: Vocabulary

    @property
    def source_offset(self) -> int:
        return len(self.target)

    @property
    def size(self) -> int:
        return len(self.target) + len(self.source)

    def encode_source(self, subwords: Sequence[str]) -> list[int]:
        """BPE subwords of a source line -> the encoder's ids, EOS last."""
        offset = self.source_offset
        return [offset + i for i in self.source.encode(subwords)] + [offset + self.source.eos_id]

    def decode_target(self, ids: Iterable[int]) -> list[str]:
        """Output ids (as `generate` returns them: decoder start first, EOS, then padding) -> target subwords."""
        specials = {self.target.pad_id, self.target.bos_id}
        tokens = []
        for i in ids:
            i = int(i)
            if i == self.target.eos_id:
                break
            if i not in specials:
                tokens.append(self.target.tokens[i])
        return tokens

    def save(self, folder: Path) -> None:
        self.source.save(folder / "source_vocab.json")
        self.target.save(folder / "target_vocab.json")
        t = self.target
        write_json(folder / VOCABULARY_FILE, {
            "source_vocabulary": "source_vocab.json", "target_vocabulary": "target_vocab.json",
            "source_offset": self.source_offset, "size": self.size,
            "target_ids": {"pad": t.pad_id, "bos": t.bos_id, "eos": t.eos_id, "unk": t.unk_id},
            "source_eos": self.source_offset + self.source.eos_id,
            "units": "subword-nmt BPE ('@@ ' joins) of tokenized, truecased text; source ids + source_offset, "
                     "EOS appended; output ids < source_offset are the target vocabulary's"})

    @classmethod
    def load(cls, folder: Path) -> "ExportedVocabulary":
        folder = Path(folder)
        meta = read_json(folder / VOCABULARY_FILE)
        vocab = cls(Vocabulary.load(folder / meta["source_vocabulary"]),
                    Vocabulary.load(folder / meta["target_vocabulary"]))
        if vocab.source_offset != meta["source_offset"]:
            raise ValueError(f"{folder}: the target vocabulary has {len(vocab.target)} entries, "
                             f"{VOCABULARY_FILE} says {meta['source_offset']}")
        return vocab


def _copy(linear: torch.nn.Linear, weight: torch.Tensor, bias: torch.Tensor | None, scale: float = 1.0) -> None:
    linear.weight.copy_(weight * scale)
    if bias is not None:
        linear.bias.copy_(bias * scale)


def _copy_norm(norm: torch.nn.LayerNorm, ours: torch.nn.LayerNorm, scale: float = 1.0) -> None:
    norm.weight.copy_(ours.weight * scale)
    norm.bias.copy_(ours.bias * scale)


def _self_attention(theirs, ours, c: float) -> None:
    d = ours.out.weight.shape[0]
    w, b = ours.in_proj.weight, ours.in_proj.bias
    for i, name in enumerate(("q_proj", "k_proj", "v_proj")):
        _copy(getattr(theirs, name), w[i * d:(i + 1) * d], b[i * d:(i + 1) * d])
    _copy(theirs.out_proj, ours.out.weight, ours.out.bias, c)


def _cross_attention(theirs, ours, c: float) -> None:
    d = ours.out.weight.shape[0]
    w, b = ours.key_value.weight, ours.key_value.bias
    _copy(theirs.q_proj, ours.query.weight, ours.query.bias)
    _copy(theirs.k_proj, w[:d], b[:d])
    _copy(theirs.v_proj, w[d:], b[d:])
    _copy(theirs.out_proj, ours.out.weight, ours.out.bias, c)


def _feed_forward(theirs, ours, c: float) -> None:
    _copy(theirs.fc1, ours.ff.inner.weight, ours.ff.inner.bias)
    _copy(theirs.fc2, ours.ff.outer.weight, ours.ff.outer.bias, c)
    _copy_norm(theirs.final_layer_norm, ours.ff_norm)


def hf_model(model: TransformerModel, src_vocab: Vocabulary, tgt_vocab: Vocabulary,
             residual_scale: float | None = None):
    """A BlenderbotForConditionalGeneration (eval mode, in our model's dtype) computing our model's log-probabilities
    over the joint vocabulary (see the module docstring), with its generation config. residual_scale: the scale of
    the residual stream, sqrt(Blenderbot's eps / ours) by default (1 gives the naive export, for the tests)."""
    transformers = _transformers()
    c = model.config
    if not isinstance(model, TransformerModel):
        raise TypeError(f"only Transformer models export to transformers, not {type(model).__name__}")
    if len(src_vocab) != c.src_vocab_size or len(tgt_vocab) != c.tgt_vocab_size:
        raise ValueError(f"vocabulary sizes {len(src_vocab)}/{len(tgt_vocab)} do not match the model's "
                         f"{c.src_vocab_size}/{c.tgt_vocab_size}")
    if (tgt_vocab.pad_id, tgt_vocab.bos_id, tgt_vocab.eos_id) != (c.pad_id, c.bos_id, c.eos_id):
        raise ValueError("the target vocabulary's special ids are not the model's")
    vocab = ExportedVocabulary(src_vocab, tgt_vocab)
    config = transformers.BlenderbotConfig(
        vocab_size=vocab.size, max_position_embeddings=c.max_positions, d_model=c.model_size,
        encoder_layers=c.layers, decoder_layers=c.layers, encoder_attention_heads=c.heads,
        decoder_attention_heads=c.heads, encoder_ffn_dim=c.ff_size, decoder_ffn_dim=c.ff_size,
        activation_function="relu", dropout=c.dropout, attention_dropout=c.attention_dropout,
        activation_dropout=c.activation_dropout, decoder_layerdrop=c.decoder_layerdrop, scale_embedding=True,
        pad_token_id=c.pad_id, bos_token_id=c.bos_id, eos_token_id=c.eos_id, decoder_start_token_id=c.bos_id,
        forced_eos_token_id=None, encoder_no_repeat_ngram_size=0, tie_word_embeddings=True)
    theirs = transformers.BlenderbotForConditionalGeneration(config).eval().to(model.tgt_embed.weight.dtype)
    eps = {m.eps for m in theirs.modules() if isinstance(m, torch.nn.LayerNorm)}
    if len(eps) != 1:
        raise RuntimeError(f"Blenderbot's LayerNorms have several eps {sorted(eps)}: this export assumes one")
    scale = math.sqrt(eps.pop() / c.layer_norm_eps) if residual_scale is None else residual_scale
    inner = theirs.model
    with torch.no_grad():
        shared = torch.cat([model.tgt_embed.weight, model.src_embed.weight]) * scale
        inner.shared.weight.copy_(shared)
        for stack in (inner.encoder, inner.decoder):
            stack.embed_tokens.weight.copy_(shared)  # tied to shared already; a no-op then
            stack.embed_positions.weight.copy_(model.positions * scale)
        _copy_norm(inner.encoder.layer_norm, model.encoder_norm)
        _copy_norm(inner.decoder.layer_norm, model.decoder_norm, 1 / scale)
        for layer, ours in zip(inner.encoder.layers, model.encoder_layers):
            _self_attention(layer.self_attn, ours.self_attn, scale)
            _copy_norm(layer.self_attn_layer_norm, ours.self_norm)
            _feed_forward(layer, ours, scale)
        for layer, ours in zip(inner.decoder.layers, model.decoder_layers):
            _self_attention(layer.self_attn, ours.self_attn, scale)
            _copy_norm(layer.self_attn_layer_norm, ours.self_norm)
            _cross_attention(layer.encoder_attn, ours.cross_attn, scale)
            _copy_norm(layer.encoder_attn_layer_norm, ours.cross_norm)
            _feed_forward(layer, ours, scale)
        theirs.final_logits_bias.zero_()
        theirs.final_logits_bias[0, vocab.source_offset:] = float("-inf")
    if theirs.lm_head.weight.data_ptr() != inner.shared.weight.data_ptr():
        raise RuntimeError("the output projection is not tied to the embeddings")
    theirs.generation_config = transformers.GenerationConfig(
        decoder_start_token_id=c.bos_id, bos_token_id=c.bos_id, eos_token_id=c.eos_id, pad_token_id=c.pad_id,
        max_length=c.max_positions, num_beams=4, early_stopping=True, forced_eos_token_id=None,
        no_repeat_ngram_size=0, encoder_no_repeat_ngram_size=0)
    return theirs


def export_model(model: TransformerModel, src_vocab: Vocabulary, tgt_vocab: Vocabulary, out_dir: Path) -> Path:
    """Write a `save_pretrained` folder (replaced atomically) with the vocabularies beside it."""
    theirs = hf_model(model, src_vocab, tgt_vocab)
    with atomic_dir(Path(out_dir)) as tmp:
        theirs.save_pretrained(tmp)
        ExportedVocabulary(src_vocab, tgt_vocab).save(tmp)
    return Path(out_dir)


def export_checkpoint(checkpoint: Path, out_dir: Path) -> Path:
    """Export a Transformer checkpoint file (its vocabularies are the files it names)."""
    ckpt = load_checkpoint(checkpoint)
    src_vocab, tgt_vocab = load_vocabularies(ckpt)
    return export_model(model_from_checkpoint(ckpt), src_vocab, tgt_vocab, out_dir)


class ExportedModel(PretrainedModel):
    """An exported model behind the step interface (pipeline/nmt/interface.py), its scores cut to the target
    vocabulary (the joint table's first len(target) ids): log_probs [rows, len(target)]. Exact: the source entries'
    logits are -inf (final_logits_bias), so the joint log-softmax of a target id is the target-only one."""

    def __init__(self, model, vocab: ExportedVocabulary) -> None:
        target = vocab.target
        super().__init__(model, target.bos_id, target.eos_id, target.pad_id)
        self.tgt_vocab_size = len(target)

    def step(self, state, prev_tokens: torch.Tensor):
        log_probs, state = super().step(state, prev_tokens)
        return log_probs[:, :self.tgt_vocab_size].contiguous(), state


def load_exported(folder: Path, device: torch.device = torch.device("cpu")) -> tuple[ExportedModel,
                                                                                       ExportedVocabulary]:
    """An exported folder read back for our search (eval mode, on `device`) with its vocabularies."""
    vocab = ExportedVocabulary.load(folder)
    model = _transformers().AutoModelForSeq2SeqLM.from_pretrained(folder).to(device)
    return ExportedModel(model, vocab).eval(), vocab
