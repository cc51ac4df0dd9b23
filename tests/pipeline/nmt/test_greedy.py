import torch

from pipeline.nmt.greedy import greedy_decode, translate_ids
from pipeline.nmt.interface import DecoderState

V, PAD, BOS, EOS = 8, 0, 1, 2


class ScriptedModel:
    """Emits, for the source whose first id is k, the script SCRIPTS[k] (then EOS forever)."""

    bos_id, eos_id, pad_id, tgt_vocab_size = BOS, EOS, PAD, V
    SCRIPTS = {4: [5, 6, EOS], 5: [7, 7, 7, 7, 7, 7, 7, 7, 7, 7], 6: [EOS]}

    def encode(self, src, src_lengths):
        return DecoderState({"first": src[:, 0].clone()}, 0)

    def step(self, state, prev):
        out = torch.full((prev.shape[0], V), -10.0)
        for row, first in enumerate(state.tensors["first"].tolist()):
            script = self.SCRIPTS[first]
            out[row, script[state.time] if state.time < len(script) else EOS] = 0.0
        return out.log_softmax(-1), DecoderState(state.tensors, state.time + 1)

    def reorder(self, state, index, same_sources=False):
        return state.select(index, same_sources)


def test_greedy_stops_at_eos_or_at_each_rows_limit():
    src = torch.tensor([[4, EOS], [5, EOS], [6, PAD]])
    out = greedy_decode(ScriptedModel(), src, torch.tensor([2, 2, 1]), max_lengths=torch.tensor([9, 4, 9]))
    assert out == [[5, 6], [7, 7, 7, 7], []]


def test_translate_ids_keeps_the_input_order_across_length_sorted_batches():
    sources = [[5, 3, 3, 3, EOS], [4, EOS], [6, 3, EOS], [4, 3, 3, EOS]]
    out = translate_ids(ScriptedModel(), sources, PAD, "cpu", batch_size=2, length_ratio=1.0, length_offset=0)
    assert out == [[7] * 5, [5, 6], [], [5, 6]]
