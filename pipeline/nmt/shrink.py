"""Data-free shrinking of a GRU model, after Stahlberg and Byrne 2017 ("Unfolding and shrinking neural machine
translation ensembles", section 3): an unfolded ensemble (pipeline/nmt/unfold.py) reduced to one member's size with
no training data, from its weights alone.

Each layer is reduced by the method its units call for, from the bottom up (source embeddings, encoder layers,
target embeddings, decoder states, attention units, attention heads, deep output), so that a layer's units are
compared on weights from layers already reduced:

- Embeddings (linear units): a truncated SVD. E [V, U] ~ (U_r S_r) V_r^T; the embedding becomes U_r S_r [V, r] and
  every layer that reads it reads through V_r. Exact when E has rank <= r.
- Units behind a non-linearity (encoder and decoder GRU states, attention units, the deep output): neuron removal
  with linear compensation. The unit i whose incoming weight vector u_i is best approximated by a linear combination
  of the others', u_i ~ sum_j l_j u_j (least squares), weighted by the size of its outgoing weights, is removed, and
  its outgoing weights are added to the others' in proportion: w_j += l_j w_i. Repeated until the layer has its
  target size. A unit's incoming vector is all it receives: from below, its biases, for the decoder its
  initial-state weights, and a GRU's recurrent weights read through the plan (remove_recurrent_units). The
  recurrent weights are then compensated like any outgoing weights. Exact for a unit whose incoming vector equals
  another's (a duplicate, as Net2Net's widening makes), an approximation otherwise: the compensation is exact for
  the pre-activations, which the non-linearity then bends.
- Attention heads: the pair whose energy weights v are closest is merged, v = the pair's mean, the contexts'
  outgoing weights summed. Exact for duplicate heads.

A model widened by duplicating units therefore shrinks back to what it was, and so does an unfolded ensemble of
identical members (when a layer has fewer units than incoming weights, so that duplicates are the only exact
combinations).
The result has an output layer of its own (tied_output = False): the deep output's compensation changes the output
weights but not the target embeddings.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor

from pipeline.nmt.gru import GruModel

ROUNDS = 2     # re-plannings of a recurrent layer with its recurrent weights read through the previous plan
RIDGE = 1e-6  # relative to the mean squared norm of a layer's incoming vectors: keeps duplicates invertible
GATES = 3


@dataclass(frozen=True)
class Reduction:
    """A layer of U units reduced to U': a consumer's weights W [*, U] become W @ combine [U, U']; the kept units'
    incoming rows are `keep` (None for a projection, whose new incoming weights are given with it)."""

    combine: Tensor
    keep: Tensor | None = None


def remove_units(incoming: Tensor, outgoing: Tensor, size: int) -> Reduction:
    """Greedy neuron removal with linear compensation: incoming [U, D] vectors, outgoing [O, U] weights -> `size`
    units. Deterministic (ties go to the lowest index); float64 throughout."""
    x = incoming.double()
    units = x.shape[0]
    combine = torch.eye(units, dtype=torch.float64)
    if size >= units:
        return Reduction(combine, torch.arange(units))
    gram = x @ x.T
    gram += RIDGE * gram.diagonal().mean().clamp_min(1e-30) * torch.eye(units, dtype=torch.float64)
    precision = torch.cholesky_inverse(torch.linalg.cholesky(gram))  # its [i, i]: 1 / residual of u_i on the rest
    out = outgoing.double().clone()
    alive = torch.arange(units)
    while len(alive) > size:
        diagonal = precision.diagonal()
        cost = (out * out).sum(0) / diagonal
        i = int(torch.argmin(cost))
        coefficients = -precision[i] / diagonal[i]   # u_i ~ sum_j coefficients[j] u_j over the others
        rest = torch.arange(len(alive)) != i
        out = out[:, rest] + out[:, i:i + 1] * coefficients[rest]
        combine = combine[:, rest] + combine[:, i:i + 1] * coefficients[rest]
        precision = precision[rest][:, rest] - torch.outer(precision[rest, i], precision[i, rest]) / diagonal[i]
        alive = alive[rest]
    return Reduction(combine, alive)


def project(embeddings: Tensor, size: int) -> tuple[Tensor, Reduction]:
    """Truncated SVD of embeddings [V, U] -> (the new embeddings [V, size], the Reduction for their readers).

    The right singular vectors are the eigenvectors of E^T E [U, U] (never a [V, V] matrix), largest first; each
    one's sign is fixed (largest entry positive), so the result does not depend on LAPACK's choice. Directions the
    embeddings do not use (a rank below `size`) are left zero: their readers' weights would be arbitrary."""
    e = embeddings.double()
    if size >= e.shape[1]:
        return e, Reduction(torch.eye(e.shape[1], dtype=torch.float64))
    values, vectors = torch.linalg.eigh(e.T @ e)
    values, basis = values.flip(0)[:size], vectors.flip(1)[:, :size]                  # [size], [U, size]
    basis = basis * (values > 1e-10 * values[0])
    signs = torch.sign(basis.gather(0, basis.abs().argmax(0, keepdim=True))).squeeze(0)
    basis = basis * signs
    return e @ basis, Reduction(basis)


def _gate_rows(weight: Tensor, bias_ih: Tensor, bias_hh: Tensor, units: int) -> Tensor:
    """[U, 3 * (I + 2)]: per unit, its three gates' weights [3U, I] and both biases."""
    per_gate = torch.cat([weight.view(GATES, units, -1), bias_ih.view(GATES, units, 1),
                          bias_hh.view(GATES, units, 1)], -1)
    return per_gate.permute(1, 0, 2).reshape(units, -1)


def remove_recurrent_units(incoming: Tensor, recurrent: Tensor, outgoing: Tensor, size: int,
                           rounds: int = ROUNDS) -> Reduction:
    """remove_units for a recurrent layer: incoming [U, D] from below, recurrent [3U, U] (a GRU's weight_hh).

    A unit's recurrent weights are compared as they read the units that remain: the plan is first made on the
    incoming vectors from below, then `rounds` times on [incoming, recurrent @ combine] of the previous plan (the
    pre-activations as functions of the layer's input and its kept units). Copies of a unit that read different
    copies of the other units (an unfolded ensemble's blocks) then look alike, as they compute alike."""
    units = incoming.shape[0]
    reduction = remove_units(incoming, outgoing, size)
    for _ in range(rounds):
        folded = (recurrent.double().view(GATES, units, units) @ reduction.combine).permute(1, 0, 2)
        reduction = remove_units(torch.cat([incoming.double(), folded.reshape(units, -1)], 1), outgoing, size)
    return reduction


def _select_gates(tensor: Tensor, keep: Tensor, units: int) -> Tensor:
    """The rows of the kept units of each of the three gates of a GRU weight or bias [3U, ...]."""
    return tensor.view(GATES, units, *tensor.shape[1:])[:, keep].reshape(GATES * len(keep), *tensor.shape[1:])


def _transform(matrix: Tensor, start: int, combine: Tensor) -> Tensor:
    """matrix with its columns [start, start + U) replaced by their product with combine [U, U']."""
    end = start + combine.shape[0]
    return torch.cat([matrix[:, :start], matrix[:, start:end] @ combine, matrix[:, end:]], dim=1)


def _columns(w: dict[str, Tensor], consumers: list[tuple[str, int]], offset: int, units: int) -> Tensor:
    """The outgoing weights [O, units] of units at `offset` of a layer read by `consumers` (name, first column)."""
    return torch.cat([w[name][:, start + offset:start + offset + units] for name, start in consumers])


def _apply(w: dict[str, Tensor], consumers: list[tuple[str, int]], combine: Tensor) -> None:
    """Every consumer reads the reduced layer (blocks of one matrix from the last to the first)."""
    for name, start in sorted(consumers, key=lambda c: (c[0], -c[1])):
        w[name] = _transform(w[name], start, combine)


class _Shrinker:
    """The state of one shrinking: the weights (float64), the current sizes, the reductions in order."""

    def __init__(self, model: GruModel) -> None:
        self.config = model.config
        self.w = {k: v.detach().double().clone() for k, v in model.state_dict().items()}
        self.memory_units, self.heads = model.config.hidden_size, model.config.attention_heads  # per direction

    def memory_consumers(self) -> list[tuple[str, int]]:
        """Who reads the encoder's output (memory layout [forward H; backward H]): per head, a block of columns."""
        w, h = self.w, self.memory_units
        embed = w["tgt_embed.weight"].shape[1]
        decoder = w["cell.weight_hh"].shape[1]
        consumers = [("init_state.weight", 0), ("att_keys.weight", 0)]
        consumers += [("cell.weight_ih", embed + j * 2 * h) for j in range(self.heads)]
        consumers += [("readout.weight", decoder + j * 2 * h) for j in range(self.heads)]
        return consumers

    def embeddings(self, name: str, consumers: list[tuple[str, int]], size: int) -> None:
        self.w[name], reduction = project(self.w[name], size)
        _apply(self.w, consumers, reduction.combine)

    def encoder_layer(self, layer: int, size: int) -> None:
        """Both directions of one encoder layer, each to `size` units; the layer above (or the memory's readers)
        follows."""
        w, units, last = self.w, self.memory_units, layer == self.config.encoder_layers - 1
        directions = [f"encoder.{{}}_l{layer}{suffix}" for suffix in ("", "_reverse")]
        above = (self.memory_consumers() if last else
                 [(f"encoder.weight_ih_l{layer + 1}{suffix}", 0) for suffix in ("", "_reverse")])
        combines = []
        for d, name in enumerate(directions):
            ih, hh = name.format("weight_ih"), name.format("weight_hh")
            rows = _gate_rows(w[ih], w[name.format("bias_ih")], w[name.format("bias_hh")], units)
            reduction = remove_recurrent_units(rows, w[hh], torch.cat([w[hh], _columns(w, above, d * units, units)]),
                                               size)
            for part in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                w[name.format(part)] = _select_gates(w[name.format(part)], reduction.keep, units)
            w[hh] = w[hh] @ reduction.combine
            combines.append(reduction.combine)
        _apply(w, above, torch.block_diag(*combines))
        if last:
            self.memory_units = size

    def decoder(self, size: int, heads: int) -> None:
        """The decoder's GRU units: their incoming vectors are also their initial-state weights; contexts are
        compared summed over heads when the heads will be merged into one (as heads that attend alike)."""
        w = self.w
        units, embed = w["cell.weight_hh"].shape[1], w["tgt_embed.weight"].shape[1]
        w_ih = w["cell.weight_ih"]
        contexts = w_ih[:, embed:]
        if heads == 1:
            contexts = contexts.reshape(GATES * units, self.heads, 2 * self.memory_units).sum(1)
        rows = torch.cat([_gate_rows(torch.cat([w_ih[:, :embed], contexts], 1), w["cell.bias_ih"],
                                     w["cell.bias_hh"], units), w["init_state.weight"], w["init_state.bias"][:, None]],
                         1)
        readers = [("cell.weight_hh", 0), ("att_query.weight", 0), ("readout.weight", 0)]
        reduction = remove_recurrent_units(rows, w["cell.weight_hh"], _columns(w, readers, 0, units), size)
        for part in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            w[f"cell.{part}"] = _select_gates(w[f"cell.{part}"], reduction.keep, units)
        w["init_state.weight"] = w["init_state.weight"][reduction.keep]
        w["init_state.bias"] = w["init_state.bias"][reduction.keep]
        _apply(w, readers, reduction.combine)

    def attention(self, size: int) -> None:
        w = self.w
        rows = torch.cat([w["att_keys.weight"], w["att_query.weight"], w["att_query.bias"][:, None]], 1)
        reduction = remove_units(rows, w["att_v.weight"], size)
        for name in ("att_keys.weight", "att_query.weight", "att_query.bias"):
            w[name] = w[name][reduction.keep]
        w["att_v.weight"] = w["att_v.weight"] @ reduction.combine

    def merge_heads(self, heads: int) -> None:
        """Merge the closest pair of heads (energy weights v) until `heads` are left."""
        w, ctx = self.w, 2 * self.memory_units
        embed, decoder = w["tgt_embed.weight"].shape[1], w["cell.weight_hh"].shape[1]
        while self.heads > heads:
            v = w["att_v.weight"]
            cell = w["cell.weight_ih"][:, embed:].view(-1, self.heads, ctx)
            readout = w["readout.weight"][:, decoder:decoder + self.heads * ctx].view(-1, self.heads, ctx)
            size = (cell * cell).sum((0, 2)) + (readout * readout).sum((0, 2))
            distance = torch.cdist(v[None], v[None])[0] ** 2 * (size[:, None] + size[None, :])
            distance.fill_diagonal_(float("inf"))
            i, j = divmod(int(torch.argmin(distance)), self.heads)
            keep, gone = min(i, j), max(i, j)
            rest = torch.arange(self.heads) != gone
            merged = v.clone()
            merged[keep] = (v[keep] + v[gone]) / 2
            w["att_v.weight"] = merged[rest]
            cell[:, keep] += cell[:, gone]
            readout[:, keep] += readout[:, gone]
            w["cell.weight_ih"] = torch.cat([w["cell.weight_ih"][:, :embed], cell[:, rest].flatten(1)], 1)
            w["readout.weight"] = torch.cat([w["readout.weight"][:, :decoder], readout[:, rest].flatten(1),
                                             w["readout.weight"][:, decoder + self.heads * ctx:]], 1)
            self.heads -= 1

    def deep_output(self, size: int) -> None:
        w = self.w
        rows = torch.cat([w["readout.weight"], w["readout.bias"][:, None]], 1)
        reduction = remove_units(rows, w["output.weight"], size)
        w["readout.weight"], w["readout.bias"] = w["readout.weight"][reduction.keep], w["readout.bias"][reduction.keep]
        w["output.weight"] = w["output.weight"] @ reduction.combine


def shrink(model: GruModel, embed_size: int, hidden_size: int, attention_size: int,
           attention_heads: int = 1) -> GruModel:
    """A GruModel (eval mode) of the given sizes made from `model`'s weights alone (see the module docstring)."""
    c = model.config
    for name, size, now in (("embed_size", embed_size, c.embed_size), ("hidden_size", hidden_size, c.hidden_size),
                            ("attention_size", attention_size, c.attention_size),
                            ("attention_heads", attention_heads, c.attention_heads)):
        if not 1 <= size <= now:
            raise ValueError(f"cannot shrink a model of {name} {now} to {size}")
    s = _Shrinker(model)
    s.embeddings("src_embed.weight", [(f"encoder.weight_ih_l0{d}", 0) for d in ("", "_reverse")], embed_size)
    for layer in range(c.encoder_layers):
        s.encoder_layer(layer, hidden_size)
    readout_embed = s.w["readout.weight"].shape[1] - c.embed_size
    s.embeddings("tgt_embed.weight", [("cell.weight_ih", 0), ("readout.weight", readout_embed)], embed_size)
    s.decoder(hidden_size, attention_heads)
    s.attention(attention_size)
    s.merge_heads(attention_heads)
    s.deep_output(embed_size)
    small = GruModel(replace(c, embed_size=embed_size, hidden_size=hidden_size, attention_size=attention_size,
                             attention_heads=attention_heads, tied_output=False)).eval()
    small.load_state_dict({k: v.float() for k, v in s.w.items()}, strict=True)
    return small
