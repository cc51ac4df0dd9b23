"""Data-free shrinking (pipeline/nmt/shrink.py): exact where the method is exact (duplicated units, low-rank
embeddings, linear layers), the target size, determinism, and a shrunken trained ensemble that still does its task."""
from dataclasses import replace

import pytest
import torch

from pipeline.nmt.greedy import translate_ids
from pipeline.nmt.gru import GruModel
from pipeline.nmt.shrink import project, remove_units, shrink
from pipeline.nmt.unfold import unfold
from tests.pipeline.nmt.conftest import digit_data, make_model
from tests.pipeline.nmt.test_unfold import batch, sharpened, steps


def test_a_unit_that_is_a_combination_of_others_is_removed_and_compensated_exactly():
    """Linear units: the next layer's input outgoing @ incoming @ x is unchanged when the removed units' incoming
    vectors are combinations of the kept ones'."""
    generator = torch.Generator().manual_seed(0)
    base = torch.randn(5, 12, generator=generator, dtype=torch.float64)
    incoming = torch.cat([base, torch.randn(3, 5, generator=generator, dtype=torch.float64) @ base])   # 8 units
    outgoing = torch.randn(7, 8, generator=generator, dtype=torch.float64)
    reduction = remove_units(incoming, outgoing, 5)
    assert len(reduction.keep) == 5 and reduction.combine.shape == (8, 5)
    assert torch.allclose(outgoing @ reduction.combine @ incoming[reduction.keep], outgoing @ incoming, atol=1e-4)
    # one unit fewer than the rank: no exact answer, and the error is what is left
    lossy = remove_units(incoming, outgoing, 4)
    assert not torch.allclose(outgoing @ lossy.combine @ incoming[lossy.keep], outgoing @ incoming, atol=1e-2)


def test_removal_prefers_the_unit_whose_loss_is_smallest():
    """Of two exact duplicates and a unit on its own, a duplicate goes, whatever the order."""
    incoming = torch.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0], [1.0, 0.0, 2.0]])
    outgoing = torch.tensor([[1.0, 1.0, 1.0]])
    reduction = remove_units(incoming, outgoing, 2)
    assert reduction.keep.tolist() in ([0, 1], [1, 2])
    assert torch.allclose(outgoing.double() @ reduction.combine, torch.tensor([[2.0, 1.0]], dtype=torch.float64)
                          if reduction.keep.tolist() == [0, 1] else torch.tensor([[1.0, 2.0]], dtype=torch.float64),
                          atol=1e-5)


def test_the_svd_of_an_embedding_of_low_rank_loses_nothing():
    generator = torch.Generator().manual_seed(1)
    embeddings = torch.randn(20, 3, generator=generator) @ torch.randn(3, 8, generator=generator)
    reader = torch.randn(6, 8, generator=generator)
    small, reduction = project(embeddings, 3)
    assert small.shape == (20, 3)
    assert torch.allclose(small @ (reader.double() @ reduction.combine).T, embeddings.double() @ reader.double().T,
                          atol=1e-5)


class Axis:
    """A layer's units after widening: new unit i is old unit index[i]; an outgoing weight is scaled by scale[i]."""

    def __init__(self, index: torch.Tensor, scale: torch.Tensor) -> None:
        self.index, self.scale = index, scale

    @staticmethod
    def widened(units: int, extra: int, alpha: float) -> "Axis":
        """The first `extra` units duplicated (at the end): their outgoing weights split alpha : 1 - alpha."""
        scale = torch.ones(units + extra, dtype=torch.float64)
        scale[:extra], scale[units:] = alpha, 1 - alpha
        return Axis(torch.cat([torch.arange(units), torch.arange(extra)]), scale)

    def then(self, other: "Axis", offset: int) -> "Axis":
        """This axis followed by `other`, whose old units start at `offset`."""
        return Axis(torch.cat([self.index, other.index + offset]), torch.cat([self.scale, other.scale]))

    def gates(self, units: int) -> "Axis":
        axis = Axis(self.index, torch.ones_like(self.scale))
        for g in (1, 2):
            axis = axis.then(Axis(self.index, self.scale), g * units)
        return axis


def widen(model, extra: int = 3, alpha: float = 0.3):
    """Net2Net's widening (Chen et al. 2016) of a one-layer GRU model with its own output layer: every layer gets
    `extra` duplicated units (embedding dims, encoder and decoder states, attention units, deep output). It computes
    what the model computes; each duplicate's incoming vector equals its original's."""
    c = model.config
    e, h, a = c.embed_size, c.hidden_size, c.attention_size
    emb, hid, att = (Axis.widened(n, extra, alpha) for n in (e, h, a))
    memory = hid.then(hid, h)
    copy, split = "copy", "split"
    plan = {"src_embed.weight": [(1, emb, copy)], "tgt_embed.weight": [(1, emb, copy)],
            "init_state.weight": [(0, hid, copy), (1, memory, split)], "init_state.bias": [(0, hid, copy)],
            "att_keys.weight": [(0, att, copy), (1, memory, split)],
            "att_query.weight": [(0, att, copy), (1, hid, split)], "att_query.bias": [(0, att, copy)],
            "att_v.weight": [(1, att, split)],
            "cell.weight_ih": [(0, hid.gates(h), copy), (1, emb.then(memory, e), split)],
            "cell.weight_hh": [(0, hid.gates(h), copy), (1, hid, split)],
            "cell.bias_ih": [(0, hid.gates(h), copy)], "cell.bias_hh": [(0, hid.gates(h), copy)],
            "readout.weight": [(0, emb, copy), (1, hid.then(memory, h).then(emb, 3 * h), split)],
            "readout.bias": [(0, emb, copy)], "output.weight": [(1, emb, split)]}
    for d in ("", "_reverse"):
        plan[f"encoder.weight_ih_l0{d}"] = [(0, hid.gates(h), copy), (1, emb, split)]
        plan[f"encoder.weight_hh_l0{d}"] = [(0, hid.gates(h), copy), (1, hid, split)]
        plan[f"encoder.bias_ih_l0{d}"] = plan[f"encoder.bias_hh_l0{d}"] = [(0, hid.gates(h), copy)]
    weights = {}
    for name, tensor in model.state_dict().items():
        tensor = tensor.double()
        for dim, axis, mode in plan.get(name, []):
            tensor = tensor.index_select(dim, axis.index)
            if mode == split:
                tensor = tensor * axis.scale.view([-1 if i == dim else 1 for i in range(tensor.dim())])
        weights[name] = tensor.float()
    wide = GruModel(replace(c, embed_size=e + extra, hidden_size=h + extra, attention_size=a + extra)).eval()
    wide.load_state_dict(weights, strict=True)
    return wide


def test_a_model_widened_by_duplicated_units_shrinks_back_to_what_it_was(vocab):
    """Every layer has duplicates: data-free shrinking undoes Net2Net's widening exactly, layer by layer."""
    model = sharpened(vocab, 7, tied_output=False)
    wide = widen(model)
    src, lengths, tgt = batch(vocab)
    with torch.no_grad():
        reference = steps(model, src, lengths, tgt)
        assert torch.allclose(steps(wide, src, lengths, tgt), reference, atol=1e-5)   # the widening is exact
        small = shrink(wide, 32, 64, 64)
        assert torch.allclose(steps(small, src, lengths, tgt), reference, atol=1e-4)
        # shrinking further has nothing exact left to remove: the outputs move
        assert not torch.allclose(steps(shrink(wide, 30, 60, 60), src, lengths, tgt), reference, atol=1e-3)


@pytest.mark.parametrize("members,layers", [(2, 1), (3, 2)])
def test_an_ensemble_of_identical_members_shrinks_back_to_the_member(vocab, members, layers):
    """The copies of a unit in the unfolded network read different copies of the units below and of themselves:
    they look alike once their recurrent weights are read through the plan (remove_recurrent_units)."""
    member = sharpened(vocab, 7, embed_size=64, hidden_size=32, attention_size=32, encoder_layers=layers)
    small = shrink(unfold([member] * members), 64, 32, 32)
    src, lengths, tgt = batch(vocab)
    with torch.no_grad():
        assert torch.allclose(steps(small, src, lengths, tgt), steps(member, src, lengths, tgt), atol=1e-4)


def test_duplicate_heads_merge_exactly(vocab):
    """Two heads with the same energy weights attend alike; merging them sums their contexts' outgoing weights."""
    model = sharpened(vocab, 8, attention_heads=2, tied_output=False)
    with torch.no_grad():
        model.att_v.weight[1] = model.att_v.weight[0]
    src, lengths, tgt = batch(vocab)
    with torch.no_grad():
        merged = shrink(model, 32, 64, 64, attention_heads=1)
        assert merged.config.attention_heads == 1
        assert torch.allclose(steps(merged, src, lengths, tgt), steps(model, src, lengths, tgt), atol=1e-4)


def test_the_shrunken_network_has_the_target_size_and_is_deterministic(vocab):
    models = [sharpened(vocab, seed) for seed in (1, 2, 3)]
    big = unfold(models)
    first, second = shrink(big, 32, 64, 64), shrink(big, 32, 64, 64)
    member = models[0]
    c = first.config
    assert (c.embed_size, c.hidden_size, c.attention_size, c.attention_heads, c.tied_output) == (32, 64, 64, 1, False)
    # one member's parameters, and an output matrix of its own (the member's is its target embeddings)
    assert first.num_parameters() == member.num_parameters() + member.output.weight.numel()
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))
    smaller = shrink(big, 16, 40, 24)
    assert (smaller.config.embed_size, smaller.config.hidden_size, smaller.config.attention_size) == (16, 40, 24)
    with pytest.raises(ValueError, match="hidden_size 64 to 65"):
        shrink(member, 32, 65, 64)


def test_a_shrunken_trained_ensemble_still_does_its_task(train_once):
    """The trained GRU reverses digit strings; an ensemble of it and a perturbed copy, unfolded and shrunk to one
    member's size without data, still reverses nearly all of them."""
    trained = train_once("gru")
    perturbed = make_model("gru", trained.vocab).eval()
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p, q in zip(perturbed.parameters(), trained.model.parameters()):
            p.copy_(q * (1 + 0.05 * torch.randn(q.shape, generator=generator)))
    small = shrink(unfold([trained.model, perturbed]), 32, 64, 64)
    data = digit_data(200, seed=9, task=trained.task)
    vocab = trained.vocab
    sources = [vocab.encode(s) + [vocab.eos_id] for s in data.sources]
    with torch.no_grad():
        ours = translate_ids(small, sources, vocab.pad_id, "cpu")
        theirs = translate_ids(trained.model, sources, vocab.pad_id, "cpu")
    references = [vocab.encode(t) for t in data.targets]
    right = lambda outputs: sum(o == r for o, r in zip(outputs, references)) / len(references)  # noqa: E731
    assert right(theirs) >= 0.9
    assert right(ours) >= right(theirs) - 0.1
