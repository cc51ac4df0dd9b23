"""Unfolding an ensemble of GRU models into one network (Stahlberg and Byrne 2017, "Unfolding and shrinking neural
machine translation ensembles", section 2).

K members of one topology (embeddings E, hidden H, attention A, the same vocabularies) become one GruModel whose
every layer holds the members' units side by side: embeddings K*E, encoder and decoder states K*H, attention K*A,
deep output K*E. Weights between units of different members are zero (block-diagonal recurrent, gate and attention
weights, concatenated embeddings), so each member's units compute exactly what they computed in the member. Each
member's attention becomes heads of the unfolded attention (GruModel.attention_heads): one energy and one softmax
per member, over the unfolded memory, whose other members' units it gives zero weight.

Where it is not exact: the combination at the output. The unfolded output layer (weights of its own,
tied_output = False) computes the mean of the members' logits, z = (1/K) sum_k z_k, and normalises it once:

    log p_unfolded(v) = (1/K) sum_k log p_k(v) + c,   c = -log sum_v prod_k p_k(v)^(1/K) >= 0

where the ensemble (pipeline.nmt.interface.Ensemble) scores (1/K) sum_k log p_k(v), which is not normalised. c is
the same for every token of a decoder row, so each step ranks the tokens exactly as the ensemble does; a
hypothesis's score is the ensemble's plus the sum of its steps' c (0 <= c, and c = 0 when the members agree).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import torch
from torch import Tensor

from pipeline.nmt.gru import GruConfig, GruModel

GATES = 3  # nn.GRU and nn.GRUCell stack the reset, update and new gates' rows


def _block(k: int, size: int) -> Tensor:
    """Member k's units in a layer of K blocks of `size`."""
    return torch.arange(k * size, (k + 1) * size)


def _gates(k: int, h: int, total: int) -> Tensor:
    """Member k's gate rows in a GRU weight of 3 gates of `total` units, H = h of them member k's per gate."""
    return torch.cat([g * total + _block(k, h) for g in range(GATES)])


def _memory(k: int, h: int, total: int) -> Tensor:
    """Member k's units of a bidirectional layer's output [forward total; backward total]."""
    return torch.cat([d * total + _block(k, h) for d in range(2)])


def _context(k: int, heads: int, h: int, total: int) -> Tensor:
    """Member k's context units: its heads' contexts (k * heads + j), each over member k's memory units."""
    return torch.cat([(k * heads + j) * 2 * total + _memory(k, h, total) for j in range(heads)])


def unfolded_config(member: GruConfig, members: int) -> GruConfig:
    """The config of K = `members` unfolded members of config `member`."""
    return replace(member, embed_size=members * member.embed_size, hidden_size=members * member.hidden_size,
                   attention_size=members * member.attention_size,
                   attention_heads=members * member.attention_heads, tied_output=False)


def unfold(models: Sequence[GruModel]) -> GruModel:
    """One GruModel (eval mode) that computes what the ensemble of `models` computes (see the module docstring)."""
    if not models:
        raise ValueError("unfolding needs at least one model")
    first = models[0].config
    for i, m in enumerate(models):
        if not isinstance(m, GruModel):
            raise ValueError(f"member {i} is a {type(m).__name__}: only GRU models unfold")
        if replace(m.config, dropout=first.dropout) != first:
            raise ValueError(f"member {i} has config {m.config}, member 0 {first}: members must share a topology")
    count, c = len(models), first
    e, h, a, heads = c.embed_size, c.hidden_size, c.attention_size, c.attention_heads
    big = unfolded_config(c, count)
    big_h, big_e = big.hidden_size, big.embed_size
    unfolded = GruModel(big).eval()
    target = {name: torch.zeros_like(p) for name, p in unfolded.state_dict().items()}

    states = [m.state_dict() for m in models]

    def place(name: str, k: int, rows: Tensor, cols: Tensor | None = None) -> None:
        weight = states[k][name]
        if cols is None:
            target[name][rows] = weight
        else:
            target[name][rows[:, None], cols[None, :]] = weight

    for k in range(count):
        embed, units, memory = _block(k, e), _block(k, h), _memory(k, h, big_h)
        context = _context(k, heads, h, big_h)
        place("src_embed.weight", k, torch.arange(c.src_vocab_size), embed)
        for layer in range(c.encoder_layers):
            inputs = embed if layer == 0 else memory
            for suffix in ("", "_reverse"):
                gates = _gates(k, h, big_h)
                place(f"encoder.weight_ih_l{layer}{suffix}", k, gates, inputs)
                place(f"encoder.weight_hh_l{layer}{suffix}", k, gates, units)
                place(f"encoder.bias_ih_l{layer}{suffix}", k, gates)
                place(f"encoder.bias_hh_l{layer}{suffix}", k, gates)
        place("init_state.weight", k, units, memory)
        place("init_state.bias", k, units)
        attention = _block(k, a)
        place("att_keys.weight", k, attention, memory)
        place("att_query.weight", k, attention, units)
        place("att_query.bias", k, attention)
        place("att_v.weight", k, _block(k, heads), attention)
        place("tgt_embed.weight", k, torch.arange(c.tgt_vocab_size), embed)
        gates = _gates(k, h, big_h)
        place("cell.weight_ih", k, gates, torch.cat([embed, big_e + context]))
        place("cell.weight_hh", k, gates, units)
        place("cell.bias_ih", k, gates)
        place("cell.bias_hh", k, gates)
        place("readout.weight", k, embed, torch.cat([units, big_h + context, big_h + big.context_size + embed]))
        place("readout.bias", k, embed)
        output = models[k].output
        target["output.weight"][:, embed] = output.weight.detach() / count
        target["output.bias"] += output.bias.detach() / count
    unfolded.load_state_dict(target, strict=True)
    return unfolded
