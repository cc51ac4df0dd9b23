"""Attention-based GRU encoder-decoder (Bahdanau et al. 2015), the FNMT models of the paper.

Encoder: source embeddings [N, S, E] -> bidirectional GRU (packed, so padding never reaches a real position)
-> annotations h_j [N, S, 2H]. Decoder, per target position i with previous token y and state s:

    c_i = sum_j a_ij h_j,  a_i = softmax_j(v . tanh(W s_{i-1} + U h_j))     additive attention over unpadded j
    s_i = GRU([E y_{i-1}; c_i], s_{i-1})                                        s_0 = tanh(W_init mean_j h_j)
    t_i = tanh(W_t [s_i; c_i; E y_{i-1}])                                       deep output, size E
    p(y_i) = softmax(E_out t_i + b)                                             E_out tied to the target embeddings

The keys U h_j are computed once per sentence at `encode` (Devlin 2017's pre-computed attention keys). Training
runs the same per-position function as `step`, then one output projection over all positions.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
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
    architecture: str = "gru"

    def to_dict(self) -> dict:
        return asdict(self)


class GruModel(NMTModel):
    """Bidirectional GRU encoder and attentional GRU decoder behind the step interface.

    State tensors: "memory" [B, S, 2H] annotations, "keys" [B, S, A] pre-computed attention keys, "mask" [B, S]
    (True on real source positions), "hidden" [B, H] the decoder state s.
    """

    def __init__(self, config: GruConfig) -> None:
        super().__init__(config)
        c = config
        e, h, a = c.embed_size, c.hidden_size, c.attention_size
        self.src_embed = nn.Embedding(c.src_vocab_size, e)
        self.encoder = nn.GRU(e, h, num_layers=c.encoder_layers, bidirectional=True, batch_first=True,
                              dropout=c.dropout if c.encoder_layers > 1 else 0.0)
        self.init_state = nn.Linear(2 * h, h)
        self.att_keys = nn.Linear(2 * h, a, bias=False)
        self.att_query = nn.Linear(h, a)
        self.att_v = nn.Linear(a, 1, bias=False)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, e)
        self.cell = nn.GRUCell(e + 2 * h, h)
        self.readout = nn.Linear(h + 2 * h + e, e)
        self.output = nn.Linear(e, c.tgt_vocab_size)
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
        """hidden [B, H] -> context [B, 2H] over memory [B, S, 2H] with keys [B, S, A]."""
        energy = self.att_v(torch.tanh(keys + self.att_query(hidden)[:, None, :])).squeeze(-1)
        weights = torch.softmax(energy.masked_fill(~mask, float("-inf")), dim=-1)
        return torch.bmm(weights[:, None, :], memory).squeeze(1)

    def _advance(self, state: dict[str, Tensor], embedded: Tensor) -> tuple[Tensor, Tensor]:
        """One decoder position: embedded previous tokens [B, E] -> (new hidden [B, H], deep output [B, E])."""
        context = self._attend(state["hidden"], state["memory"], state["keys"], state["mask"])
        hidden = self.cell(torch.cat([embedded, context], dim=-1), state["hidden"])
        readout = torch.tanh(self.readout(torch.cat([hidden, context, embedded], dim=-1)))
        return hidden, readout

    def step(self, state: DecoderState, prev_tokens: Tensor) -> tuple[Tensor, DecoderState]:
        """prev_tokens [B] -> log-probabilities [B, V] and the state at time + 1."""
        hidden, readout = self._advance(state.tensors, self.dropout(self.tgt_embed(prev_tokens)))
        log_probs = torch.log_softmax(self.output(self.dropout(readout)).float(), dim=-1)
        return log_probs, DecoderState({**state.tensors, "hidden": hidden}, state.time + 1, state.per_source)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits [N, T, V] for tgt_in [N, T]."""
        tensors = dict(self.encode(src, src_lengths).tensors)
        embedded = self.dropout(self.tgt_embed(tgt_in))
        readouts = []
        for t in range(tgt_in.shape[1]):
            tensors["hidden"], readout = self._advance(tensors, embedded[:, t])
            readouts.append(readout)
        return self.output(self.dropout(torch.stack(readouts, dim=1)))
