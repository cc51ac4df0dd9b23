"""Transformer encoder-decoder (Vaswani et al. 2017) with incremental (cached) decoding: the TNMT models.

Pre-norm layers (LayerNorm before each sub-layer, a final LayerNorm on each stack), ReLU feed-forward, sinusoidal
positions added to embeddings scaled by sqrt(d), target embeddings tied to the output projection. This is the
layout CTranslate2's TransformerSpec describes (pre_norm=True), so `export_ct2.py` maps the weights one to one.

Incremental decoding keeps, per decoder layer i, the self-attention keys and values of every consumed position
("self_k{i}", "self_v{i}" [B, heads, t, d/heads]) and the cross-attention keys and values of the source, computed
once at `encode` ("mem_k{i}", "mem_v{i}" [B, heads, S, d/heads]); "src_mask" [B, S] is True on real positions.
The self-attention caches are the state's per_time tensors: a reorder leaves a free entry at t, where the next step
writes its keys and values in place (pipeline/nmt/interface.py). With `ancestry_cache` (a CPU speed-up,
pipeline/nmt/speedups.py) they are instead one shared cache per layer ("self_cache{i}" [2, T, C, heads, d/heads])
that reorders never copy, read through the rows' "ancestry" [B, T], and the source keys and values are kept once per
sentence ("mem_k{i}", "mem_v{i}" [N, S, heads, d/heads], shared), read through the rows' "sentence" [B]
(pipeline/nmt/ancestry.py).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pipeline.nmt.ancestry import attend_ancestry, attend_sources, cache_room, empty_cache
from pipeline.nmt.interface import DecoderState, NMTModel


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes of a Transformer model; special ids come from the target Vocabulary."""

    src_vocab_size: int
    tgt_vocab_size: int
    pad_id: int
    bos_id: int
    eos_id: int
    layers: int
    model_size: int
    heads: int
    ff_size: int
    dropout: float = 0.0  # on the embeddings and on each sub-layer's output before the residual sum
    attention_dropout: float = 0.0  # on the attention weights (0 keeps the fused attention kernels)
    activation_dropout: float = 0.0  # on the feed-forward ReLU's output
    source_word_dropout: float = 0.0  # training: each source token's embedding dropped whole (inverted scaling)
    target_word_dropout: float = 0.0  # training: the same on the decoder's input tokens
    decoder_layerdrop: float = 0.0  # training: each decoder layer skipped whole with this probability
    max_positions: int = 1024
    layer_norm_eps: float = 1e-6
    architecture: str = "transformer"

    def to_dict(self) -> dict:
        return asdict(self)


def sinusoidal_positions(length: int, size: int) -> Tensor:
    """[length, size]: sin in the first half of the dimensions, cos in the second (tensor2tensor's layout)."""
    half = size // 2
    scale = math.log(10000.0) / max(half - 1, 1)
    inv = torch.exp(torch.arange(half, dtype=torch.float64) * -scale)
    angles = torch.arange(length, dtype=torch.float64)[:, None] * inv[None, :]
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    if size % 2:
        table = F.pad(table, (0, 1))
    return table.float()


def _fused_linear(size: int, parts: int) -> nn.Linear:
    """One Linear [parts x size, size] holding `parts` projections, initialised as that many separate layers (the
    same random draws in the same order, so a seed gives the weights of the unfused layout); TransformerModel's
    Xavier initialisation then treats each part as its own [size, size] matrix (`fused_blocks`)."""
    separate = [nn.Linear(size, size) for _ in range(parts)]
    fused = nn.utils.skip_init(nn.Linear, size, parts * size)
    with torch.no_grad():
        fused.weight.copy_(torch.cat([p.weight for p in separate]))
        fused.bias.copy_(torch.cat([p.bias for p in separate]))
    fused.weight.fused_blocks = parts
    return fused


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention with `heads` heads, its input projections fused into one matrix product each.

    Self-attention projects queries, keys and values together (`in_proj` [3d, d]); cross-attention projects the
    queries (`query`) and, once per source, keys and values together (`key_value` [2d, d]). `dropout` is the
    attention dropout, 0 by default (as fairseq): above 0 it keeps scaled_dot_product_attention off its fused CPU
    kernel. Checkpoints with separate query/key/value weights load into the fused layout.
    """

    def __init__(self, size: int, heads: int, dropout: float, self_attention: bool) -> None:
        super().__init__()
        self.heads, self.dropout, self.self_attention = heads, dropout, self_attention
        if self_attention:
            self.in_proj = _fused_linear(size, 3)
        else:
            self.query = nn.Linear(size, size)
            self.key_value = _fused_linear(size, 2)
        self.out = nn.Linear(size, size)

    def _split(self, x: Tensor) -> Tensor:
        """[B, L, d] -> [B, heads, L, d/heads]."""
        b, length, d = x.shape
        return x.view(b, length, self.heads, d // self.heads).transpose(1, 2)

    def project(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Self-attention: x [B, L, d] -> queries, keys, values [B, heads, L, d/heads]."""
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        return self._split(q), self._split(k), self._split(v)

    def queries(self, x: Tensor) -> Tensor:
        """Cross-attention: x [B, L, d] -> queries [B, heads, L, d/heads]."""
        return self._split(self.query(x))

    def keys_values(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Cross-attention: memory [B, S, d] -> keys and values [B, heads, S, d/heads]."""
        k, v = self.key_value(memory).chunk(2, dim=-1)
        return self._split(k), self._split(v)

    def forward(self, q: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None,
                causal: bool = False) -> Tensor:
        """Queries q [B, heads, Tq, d/heads] over keys/values [B, heads, Tk, d/heads] -> [B, Tq, d].

        mask [B, 1 or Tq, Tk] is True where a query may look; `causal`: query i sees keys up to i + Tk - Tq.
        """
        attn_mask = None if mask is None else mask[:, None]
        tq, tk = q.shape[2], keys.shape[2]
        is_causal = causal and tq == tk and attn_mask is None  # the fused kernels' own causal mask
        if causal and not is_causal:
            tri = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril(tk - tq)
            attn_mask = tri if attn_mask is None else attn_mask & tri
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=attn_mask, is_causal=is_causal,
                                             dropout_p=self.dropout if self.training else 0.0)
        b, _, tq, _ = out.shape
        return self.out(out.transpose(1, 2).reshape(b, tq, -1))

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args, **kwargs) -> None:
        """Separate query/key/value projections (checkpoints before the fused layout) become the fused ones."""
        fused = ("in_proj", ("query", "key", "value")) if self.self_attention else ("key_value", ("key", "value"))
        target, parts = fused
        for kind in ("weight", "bias"):
            names = [f"{prefix}{part}.{kind}" for part in parts]
            if f"{prefix}{target}.{kind}" not in state_dict and all(n in state_dict for n in names):
                state_dict[f"{prefix}{target}.{kind}"] = torch.cat([state_dict.pop(n) for n in names])
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class FeedForward(nn.Module):
    """ReLU feed-forward; `dropout` is the activation dropout (on the ReLU's output, 4x the model's width)."""

    def __init__(self, size: int, ff_size: int, dropout: float) -> None:
        super().__init__()
        self.inner = nn.Linear(size, ff_size)
        self.outer = nn.Linear(ff_size, size)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        return self.outer(self.dropout(torch.relu(self.inner(x))))


class EncoderLayer(nn.Module):
    def __init__(self, c: TransformerConfig) -> None:
        super().__init__()
        self.self_norm = nn.LayerNorm(c.model_size, eps=c.layer_norm_eps)
        self.self_attn = MultiHeadAttention(c.model_size, c.heads, c.attention_dropout, self_attention=True)
        self.ff_norm = nn.LayerNorm(c.model_size, eps=c.layer_norm_eps)
        self.ff = FeedForward(c.model_size, c.ff_size, c.activation_dropout)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """x [N, S, d], mask [N, 1, S] -> [N, S, d]."""
        x = x + self.dropout(self.self_attn(*self.self_attn.project(self.self_norm(x)), mask=mask))
        return x + self.dropout(self.ff(self.ff_norm(x)))


class DecoderLayer(nn.Module):
    def __init__(self, c: TransformerConfig) -> None:
        super().__init__()
        self.self_norm = nn.LayerNorm(c.model_size, eps=c.layer_norm_eps)
        self.self_attn = MultiHeadAttention(c.model_size, c.heads, c.attention_dropout, self_attention=True)
        self.cross_norm = nn.LayerNorm(c.model_size, eps=c.layer_norm_eps)
        self.cross_attn = MultiHeadAttention(c.model_size, c.heads, c.attention_dropout, self_attention=False)
        self.ff_norm = nn.LayerNorm(c.model_size, eps=c.layer_norm_eps)
        self.ff = FeedForward(c.model_size, c.ff_size, c.activation_dropout)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x: Tensor, cache: tuple[Tensor, Tensor], t: int, memory: tuple[Tensor, Tensor],
                src_mask: Tensor, causal: bool) -> tuple[Tensor, Tensor, Tensor]:
        """x [B, L, d] at the L positions after the t cached ones.

        cache: self-attention keys/values [B, heads, t or t + 1, d/heads] of the earlier positions (t + 1: a free
        entry at t, filled in place when L is 1); memory: the source's [B, heads, S, d/heads]; src_mask [B, 1, S].
        Returns the output [B, L, d] and the cache of t + L positions.
        """
        q, k, v = self.self_attn.project(self.self_norm(x))
        if k.shape[2] == 1 and cache[0].shape[2] == t + 1:
            cache[0][:, :, t:] = k
            cache[1][:, :, t:] = v
            k, v = cache
        elif t > 0:
            k, v = torch.cat([cache[0][:, :, :t], k], dim=2), torch.cat([cache[1][:, :, :t], v], dim=2)
        x = x + self.dropout(self.self_attn(q, k, v, causal=causal))
        x = x + self.dropout(self.cross_attn(self.cross_attn.queries(self.cross_norm(x)), *memory, mask=src_mask))
        return x + self.dropout(self.ff(self.ff_norm(x))), k, v

    def step_through_ancestry(self, x: Tensor, cache: Tensor, ancestry: Tensor, t: int, memory: tuple[Tensor, Tensor],
                              sentence: Tensor, src_lengths: Tensor) -> Tensor:
        """One position (x [B, 1, d], inference): writes its keys and values at step t of the shared cache
        [2, T, C, heads, d/heads], attends through ancestry [B, T], and over the source keys and values of its
        sentence (memory [N, S, heads, d/heads] each, sentence [B], src_lengths [N]; pipeline/nmt/ancestry.py)
        -> [B, 1, d]."""
        attn, cross, rows = self.self_attn, self.cross_attn, x.shape[0]
        q, k, v = attn.project(self.self_norm(x))                  # [B, heads, 1, d/heads]
        cache[0, t, :rows] = k[:, :, 0]
        cache[1, t, :rows] = v[:, :, 0]
        x = x + attn.out(attend_ancestry(q[:, :, 0].contiguous(), cache, ancestry, t + 1).view(rows, 1, -1))
        q = cross.query(self.cross_norm(x)).view(rows, cross.heads, -1)
        x = x + cross.out(attend_sources(q, *memory, sentence, src_lengths).view(rows, 1, -1))
        return x + self.ff(self.ff_norm(x))


class TransformerModel(NMTModel):
    """Pre-norm Transformer behind the step interface (see the module docstring for the state's tensors)."""

    ancestry_cache = False  # decode with shared self-attention caches (CPU inference; set by apply_speedups)

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__(config)
        c = config
        if c.model_size % c.heads:
            raise ValueError(f"model_size {c.model_size} is not a multiple of heads {c.heads}")
        self.src_embed = nn.Embedding(c.src_vocab_size, c.model_size)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.model_size)
        self.encoder_layers = nn.ModuleList(EncoderLayer(c) for _ in range(c.layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(c) for _ in range(c.layers))
        self.encoder_norm = nn.LayerNorm(c.model_size, eps=c.layer_norm_eps)
        self.decoder_norm = nn.LayerNorm(c.model_size, eps=c.layer_norm_eps)
        self.output = nn.Linear(c.model_size, c.tgt_vocab_size, bias=False)
        self.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(c.dropout)
        self.register_buffer("positions", sinusoidal_positions(c.max_positions, c.model_size), persistent=False)
        self.embed_scale = math.sqrt(c.model_size)
        for p in self.parameters():
            if p.dim() > 1:
                for block in p.chunk(getattr(p, "fused_blocks", 1)):
                    nn.init.xavier_uniform_(block)
        nn.init.normal_(self.src_embed.weight, std=c.model_size ** -0.5)
        nn.init.normal_(self.tgt_embed.weight, std=c.model_size ** -0.5)

    def _embed(self, table: nn.Embedding, tokens: Tensor, start: int, word_dropout: float = 0.0) -> Tensor:
        """tokens [B, L] at positions start.. -> [B, L, d]. In training, `word_dropout` drops each token's whole
        embedding (not its position) with that probability, the kept ones scaled by 1 / (1 - p) as dropout is."""
        end = start + tokens.shape[1]
        if end > self.config.max_positions:
            raise ValueError(f"sequence of {end} positions exceeds max_positions {self.config.max_positions}")
        words = table(tokens) * self.embed_scale
        if self.training and word_dropout > 0:
            words = F.dropout(words.new_ones(*tokens.shape, 1), word_dropout) * words
        return self.dropout(words + self.positions[start:end])

    def _skipped_layers(self) -> set[int]:
        """LayerDrop (Fan et al. 2020): the decoder layers this training forward pass leaves out, each with
        probability decoder_layerdrop (one draw per layer from torch's generator); none outside training."""
        p = self.config.decoder_layerdrop
        if not self.training or p <= 0:
            return set()
        draws = torch.rand(len(self.decoder_layers))
        return {i for i in range(len(self.decoder_layers)) if draws[i] < p}

    def encode(self, src: Tensor, src_lengths: Tensor) -> DecoderState:
        """src [N, S], src_lengths [N] -> state of N rows with the source keys/values of every decoder layer."""
        s = src.shape[1]
        src_mask = torch.arange(s, device=src.device)[None, :] < src_lengths.to(src.device)[:, None]
        x = self._embed(self.src_embed, src, 0, self.config.source_word_dropout)
        for layer in self.encoder_layers:
            x = layer(x, src_mask[:, None, :])
        memory = self.encoder_norm(x)
        heads, size = self.config.heads, self.config.model_size // self.config.heads
        if self.ancestry_cache and not self.training and src.device.type == "cpu":
            return self._encoded_for_ancestry(memory, src_lengths)
        tensors = {"src_mask": src_mask}
        for i, layer in enumerate(self.decoder_layers):
            tensors[f"mem_k{i}"], tensors[f"mem_v{i}"] = layer.cross_attn.keys_values(memory)
        per_source = {k: 1 if k == "src_mask" else 2 for k in tensors}
        for i in range(len(self.decoder_layers)):
            empty = memory.new_zeros(src.shape[0], heads, 0, size)
            tensors[f"self_k{i}"], tensors[f"self_v{i}"] = empty, empty
        return DecoderState(tensors, 0, per_source, {k: 2 for k in tensors if k.startswith("self_")})

    def _encoded_for_ancestry(self, memory: Tensor, src_lengths: Tensor) -> DecoderState:
        """The state of `ancestry_cache` for memory [N, S, d]: per row its sentence and ancestry; shared, the source
        keys and values [N, S, heads, d/heads] of each layer, the source lengths and the self-attention caches."""
        n, s, _ = memory.shape
        heads, size = self.config.heads, self.config.model_size // self.config.heads
        shared = {"src_lengths": src_lengths.to(memory.device, torch.int64)}
        for i, layer in enumerate(self.decoder_layers):
            keys, values = layer.cross_attn.key_value(memory).view(n, s, 2, heads, size).unbind(2)
            shared[f"mem_k{i}"], shared[f"mem_v{i}"] = keys.contiguous(), values.contiguous()
            shared[f"self_cache{i}"], ancestry = empty_cache(n, heads, size, memory.dtype)
        return DecoderState({"sentence": torch.arange(n), "ancestry": ancestry}, 0, {}, {}, shared)

    def _decode(self, state: DecoderState, tokens: Tensor, causal: bool) -> tuple[Tensor, DecoderState]:
        """tokens [B, L] from position state.time -> decoder output [B, L, d] and the state with L more positions."""
        if "ancestry" in state.tensors:
            return self._decode_through_ancestry(state, tokens)
        t = state.tensors
        x = self._embed(self.tgt_embed, tokens, state.time, self.config.target_word_dropout)
        src_mask = t["src_mask"][:, None, :]
        new = dict(t)
        skipped = self._skipped_layers()
        for i, layer in enumerate(self.decoder_layers):
            if i in skipped:  # training only: its caches are never read
                continue
            x, new[f"self_k{i}"], new[f"self_v{i}"] = layer(
                x, (t[f"self_k{i}"], t[f"self_v{i}"]), state.time, (t[f"mem_k{i}"], t[f"mem_v{i}"]), src_mask, causal)
        return self.decoder_norm(x), DecoderState(new, state.time + tokens.shape[1], state.per_source, state.per_time)

    def _decode_through_ancestry(self, state: DecoderState, tokens: Tensor) -> tuple[Tensor, DecoderState]:
        """_decode of one position (tokens [B, 1]) with the shared caches of `ancestry_cache`."""
        if tokens.shape[1] != 1:
            raise ValueError("a state with shared self-attention caches advances one position at a time")
        t, rows, tensors = state.time, tokens.shape[0], dict(state.tensors)
        shared, ancestry = dict(state.shared), tensors["ancestry"]
        for i in range(len(self.decoder_layers)):
            shared[f"self_cache{i}"], ancestry = cache_room(shared[f"self_cache{i}"], ancestry, t, rows)
        ancestry[:, t] = torch.arange(rows)
        tensors["ancestry"] = ancestry
        x = self._embed(self.tgt_embed, tokens, t)
        for i, layer in enumerate(self.decoder_layers):
            x = layer.step_through_ancestry(x, shared[f"self_cache{i}"], ancestry, t,
                                            (shared[f"mem_k{i}"], shared[f"mem_v{i}"]), tensors["sentence"],
                                            shared["src_lengths"])
        return self.decoder_norm(x), DecoderState(tensors, t + 1, state.per_source, state.per_time, shared)

    def step(self, state: DecoderState, prev_tokens: Tensor) -> tuple[Tensor, DecoderState]:
        """prev_tokens [B] -> log-probabilities [B, V] and the state at time + 1."""
        out, state = self._decode(state, prev_tokens[:, None], causal=False)
        return torch.log_softmax(self.output(out[:, 0]).float(), dim=-1), state

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits [N, T, V] for tgt_in [N, T] (causal self-attention)."""
        out, _ = self._decode(self.encode(src, src_lengths), tgt_in, causal=True)
        return self.output(out)
