"""Attention-based GRU encoder-decoder (Bahdanau et al. 2015), the FNMT models of the paper.

Encoder: source embeddings [N, S, E] -> bidirectional GRU (packed, so padding never reaches a real position)
-> annotations h_j [N, S, 2H]. Decoder, per target position i with previous token y and state s:

    c_i = sum_j a_ij h_j,  a_i = softmax_j(v . tanh(W s_{i-1} + U h_j))     additive attention over unpadded j
    s_i = GRU([E y_{i-1}; c_i], s_{i-1})                                        s_0 = tanh(W_init mean_j h_j)
    t_i = tanh(W_t [s_i; c_i; E y_{i-1}])                                       deep output, size E
    p(y_i) = softmax(E_out t_i + b)                                             E_out tied to the target embeddings

With `attention_heads` K > 1 the attention has K energies (v is [K, A]) and K contexts [K * 2H], one per head,
each over the whole memory: the form an unfolded ensemble takes (pipeline/nmt/unfold.py, one head per member).
With `tied_output` false the output layer has weights of its own instead of the target embeddings'.

The keys U h_j are computed once per sentence at `encode` (Devlin 2017's pre-computed attention keys). Training
runs the same per-position function as `step`, with every product that does not depend on the recurrence (the
previous-token embeddings into the cell, the deep output, the output projection) taken over all positions at once.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from pipeline.nmt.interface import DecoderState, NMTModel


@dataclass(frozen=True)
class GruConfig:
    """Sizes of a GRU model; special ids come from the target Vocabulary."""

    src_vocab_size: int
    tgt_vocab_size: int
    pad_id: int
    bos_id: int
    eos_id: int
    embed_size: int
    hidden_size: int
    attention_size: int
    encoder_layers: int = 1
    dropout: float = 0.0
    attention_heads: int = 1
    tied_output: bool = True
    architecture: str = "gru"

    @property
    def context_size(self) -> int:
        """The width of the attention contexts, all heads together: heads * 2H."""
        return self.attention_heads * 2 * self.hidden_size

    def to_dict(self) -> dict:
        return asdict(self)


class GruModel(NMTModel):
    """Bidirectional GRU encoder and attentional GRU decoder behind the step interface.

    State tensors: "memory" [B, S, 2H] annotations, "keys" [B, S, A] pre-computed attention keys, "mask" [B, S]
    (True on real source positions), "hidden" [B, H] the decoder state s. A step does not depend on the time
    index, so sentences that started at different steps share a batch (joins_at_any_step).
    """

    joins_at_any_step = True

    def __init__(self, config: GruConfig) -> None:
        super().__init__(config)
        c = config
        e, h, a, ctx = c.embed_size, c.hidden_size, c.attention_size, c.context_size
        self.src_embed = nn.Embedding(c.src_vocab_size, e)
        self.encoder = nn.GRU(e, h, num_layers=c.encoder_layers, bidirectional=True, batch_first=True,
                              dropout=c.dropout if c.encoder_layers > 1 else 0.0)
        self.init_state = nn.Linear(2 * h, h)
        self.att_keys = nn.Linear(2 * h, a, bias=False)
        self.att_query = nn.Linear(h, a)
        self.att_v = nn.Linear(a, c.attention_heads, bias=False)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, e)
        self.cell = nn.GRUCell(e + ctx, h)
        self.readout = nn.Linear(h + ctx + e, e)
        self.output = nn.Linear(e, c.tgt_vocab_size)
        if c.tied_output:
            self.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(c.dropout)
        nn.init.normal_(self.src_embed.weight, std=e ** -0.5)
        nn.init.normal_(self.tgt_embed.weight, std=e ** -0.5)
        nn.init.zeros_(self.output.bias)

    def encode(self, src: Tensor, src_lengths: Tensor) -> DecoderState:
        """src [N, S], src_lengths [N] -> state with memory [N, S, 2H], keys [N, S, A], mask [N, S], hidden [N, H]."""
        n, s = src.shape
        embedded = self.dropout(self.src_embed(src))
        packed = pack_padded_sequence(embedded, src_lengths.cpu(), batch_first=True, enforce_sorted=False)
        memory, _ = pad_packed_sequence(self.encoder(packed)[0], batch_first=True, total_length=s)
        memory = self.dropout(memory)
        mask = torch.arange(s, device=src.device)[None, :] < src_lengths.to(src.device)[:, None]
        mean = (memory * mask[:, :, None]).sum(1) / src_lengths.to(memory)[:, None]
        hidden = torch.tanh(self.init_state(mean))
        return DecoderState({"memory": memory, "keys": self.att_keys(memory), "mask": mask, "hidden": hidden}, 0,
                            {"memory": 1, "keys": 1, "mask": 1})

    def _attend(self, hidden: Tensor, memory: Tensor, keys: Tensor, mask: Tensor) -> Tensor:
        """hidden [B, H] -> context [B, K * 2H] over memory [B, S, 2H] with keys [B, S, A] (K heads)."""
        return self._attend_query(self.att_query(hidden), memory, keys, mask)

    def _attend_query(self, query: Tensor, memory: Tensor, keys: Tensor, mask: Tensor) -> Tensor:
        """_attend from the projected query W s [B, A]."""
        energy = self.att_v(torch.tanh(keys + query[:, None, :])).transpose(1, 2)     # [B, K, S]
        weights = torch.softmax(energy.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)
        return torch.bmm(weights, memory).flatten(1)                                    # [B, K * 2H]

    def _advance(self, state: dict[str, Tensor], embedded: Tensor) -> tuple[Tensor, Tensor]:
        """One decoder position: embedded previous tokens [B, E] -> (new hidden [B, H], deep output [B, E])."""
        context = self._attend(state["hidden"], state["memory"], state["keys"], state["mask"])
        hidden = self.cell(torch.cat([embedded, context], dim=-1), state["hidden"])
        readout = torch.tanh(self.readout(torch.cat([hidden, context, embedded], dim=-1)))
        return hidden, readout

    def precompute_embedding_projections(self) -> None:
        """Decoding only (eval mode): fold the previous token's two embedding products into per-token tables
        (pipeline/nmt/speedups.py). The GRU cell is then computed from its weights split by input:
        gates_in = table[y] + W_c context, gates_h = W_hh s + b_hh (gate order r, z, n, as nn.GRUCell)."""
        e, h, ctx = self.config.embed_size, self.config.hidden_size, self.config.context_size
        with torch.no_grad():
            embeddings = self.tgt_embed.weight                                         # [V, E]
            w_ih, w_out = self.cell.weight_ih, self.readout.weight
            self.register_buffer("cell_table", embeddings @ w_ih[:, :e].T + self.cell.bias_ih, persistent=False)
            self.register_buffer("readout_table", embeddings @ w_out[:, h + ctx:].T + self.readout.bias,
                                 persistent=False)
            self.cell_context = nn.Linear(ctx, 3 * h, bias=False)
            self.cell_context.weight.copy_(w_ih[:, e:])
            self.cell_hidden = nn.Linear(h, 3 * h)
            self.cell_hidden.weight.copy_(self.cell.weight_hh)
            self.cell_hidden.bias.copy_(self.cell.bias_hh)
            self.readout_state = nn.Linear(h + ctx, e, bias=False)
            self.readout_state.weight.copy_(w_out[:, :h + ctx])

    def _advance_precomputed(self, state: dict[str, Tensor], prev_tokens: Tensor) -> tuple[Tensor, Tensor]:
        """_advance with the per-token tables of precompute_embedding_projections."""
        context = self._attend(state["hidden"], state["memory"], state["keys"], state["mask"])
        gates_in = self.cell_table[prev_tokens] + self.cell_context(context)
        in_r, in_z, in_n = gates_in.chunk(3, dim=-1)
        h_r, h_z, h_n = self.cell_hidden(state["hidden"]).chunk(3, dim=-1)
        reset, update = torch.sigmoid(in_r + h_r), torch.sigmoid(in_z + h_z)
        candidate = torch.tanh(in_n + reset * h_n)
        hidden = (1 - update) * candidate + update * state["hidden"]
        readout = torch.tanh(self.readout_table[prev_tokens] + self.readout_state(torch.cat([hidden, context], -1)))
        return hidden, readout

    def step(self, state: DecoderState, prev_tokens: Tensor) -> tuple[Tensor, DecoderState]:
        """prev_tokens [B] -> log-probabilities [B, V] and the state at time + 1."""
        if hasattr(self, "cell_table"):
            hidden, readout = self._advance_precomputed(state.tensors, prev_tokens)
            log_probs = torch.log_softmax(self.output(readout).float(), dim=-1)
            return log_probs, DecoderState({**state.tensors, "hidden": hidden}, state.time + 1, state.per_source)
        hidden, readout = self._advance(state.tensors, self.dropout(self.tgt_embed(prev_tokens)))
        log_probs = torch.log_softmax(self.output(self.dropout(readout)).float(), dim=-1)
        return log_probs, DecoderState({**state.tensors, "hidden": hidden}, state.time + 1, state.per_source)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits [N, T, V] for tgt_in [N, T].

        The same function as `step` at every position, arranged for training: the products with the (known)
        previous-token embeddings are one matrix product over all positions before the recurrence; in the loop the
        state's two products (the attention query of the next position and the cell's hidden gates) are one matrix
        product; the deep output is one matrix product over all positions after it."""
        tensors = self.encode(src, src_lengths).tensors
        memory, keys, mask, hidden = tensors["memory"], tensors["keys"], tensors["mask"], tensors["hidden"]
        e, a = self.config.embed_size, self.config.attention_size
        embedded = self.dropout(self.tgt_embed(tgt_in))                                  # [N, T, E]
        w_ih = self.cell.weight_ih                                                         # [3H, E + K * 2H]
        gates_embedded = F.linear(embedded, w_ih[:, :e], self.cell.bias_ih)               # [N, T, 3H]
        w_context = w_ih[:, e:]
        w_state = torch.cat([self.att_query.weight, self.cell.weight_hh])                 # [A + 3H, H]
        b_state = torch.cat([self.att_query.bias, self.cell.bias_hh])
        states, contexts = [], []
        for gates_t in gates_embedded.unbind(1):  # unbind: one gradient for all positions, not one per position
            query, gates_hidden = F.linear(hidden, w_state, b_state).split([a, w_ih.shape[0]], dim=-1)
            context = self._attend_query(query, memory, keys, mask)                       # [N, K * 2H]
            in_r, in_z, in_n = (gates_t + F.linear(context, w_context)).chunk(3, dim=-1)
            h_r, h_z, h_n = gates_hidden.chunk(3, dim=-1)
            reset, update = torch.sigmoid(in_r + h_r), torch.sigmoid(in_z + h_z)
            candidate = torch.tanh(in_n + reset * h_n)
            hidden = candidate + update * (hidden - candidate)                            # nn.GRUCell's update
            states.append(hidden)
            contexts.append(context)
        readout = torch.tanh(self.readout(torch.cat([torch.stack(states, 1), torch.stack(contexts, 1), embedded],
                                                    dim=-1)))                                # [N, T, E]
        return self.output(self.dropout(readout))
