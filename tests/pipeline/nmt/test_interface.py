"""The step interface: incremental decoding equals a full forward pass, reordering equals recomputing from
reordered inputs, padding never leaks into a sentence's scores, and ensembles average log-probabilities."""
import pytest
import torch

from pipeline.nmt.token_batches import collate
from pipeline.nmt.interface import DecoderState, Ensemble
from tests.pipeline.nmt.conftest import digit_data, make_model

ARCHS = ["gru", "transformer"]


def sample_batch(vocab, n=4, seed=3):
    data = digit_data(n, seed=seed, task="reverse", max_len=7)
    return collate([vocab.encode(s) for s in data.sources], [vocab.encode(t) for t in data.targets], vocab, vocab)


def incremental(model, src, lengths, tgt_in):
    """log-probs [N, T, V] from encode + T steps."""
    state, out = model.encode(src, lengths), []
    for t in range(tgt_in.shape[1]):
        log_probs, state = model.step(state, tgt_in[:, t])
        out.append(log_probs)
    return torch.stack(out, dim=1), state


@pytest.mark.parametrize("arch", ARCHS)
def test_incremental_decoding_equals_full_forward(arch, vocab):
    model = make_model(arch, vocab, seed=1, dropout=0.3).eval()
    batch = sample_batch(vocab, n=5)
    assert len(set(batch.src_lengths.tolist())) > 1  # padding in the batch
    with torch.no_grad():
        full = model.score(batch.src, batch.src_lengths, batch.tgt_in)
        steps, state = incremental(model, batch.src, batch.src_lengths, batch.tgt_in)
    assert full.shape == (5, batch.tgt_in.shape[1], len(vocab)) and state.time == batch.tgt_in.shape[1]
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=0)
    assert torch.allclose(steps.exp().sum(-1), torch.ones(steps.shape[:2]), atol=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_reorder_equals_recomputing_from_reordered_inputs(arch, vocab):
    model = make_model(arch, vocab, seed=2).eval()
    batch = sample_batch(vocab, n=3)
    index = torch.tensor([2, 0, 0, 1, 2])  # repeats rows, like a beam
    prefix = batch.tgt_in[:, :3]
    with torch.no_grad():
        _, state = incremental(model, batch.src, batch.src_lengths, prefix)
        state = model.reorder(state, index)
        next_tokens = torch.tensor([4, 5, 6, 7, 8])
        reordered, _ = model.step(state, next_tokens)
        _, fresh = incremental(model, batch.src[index], batch.src_lengths[index], prefix[index])
        recomputed, _ = model.step(fresh, next_tokens)
    assert state.batch_size == 5
    torch.testing.assert_close(reordered, recomputed, atol=1e-5, rtol=0)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_sentence_scores_the_same_alone_and_in_a_padded_batch(arch, vocab):
    model = make_model(arch, vocab, seed=3).eval()
    batch = sample_batch(vocab, n=6, seed=5)
    shortest = int(batch.src_lengths.argmin())
    with torch.no_grad():
        together = model.score(batch.src, batch.src_lengths, batch.tgt_in)[shortest]
        n = int(batch.src_lengths[shortest])
        alone = model.score(batch.src[shortest:shortest + 1, :n], batch.src_lengths[shortest:shortest + 1],
                            batch.tgt_in[shortest:shortest + 1])[0]
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=0)


@pytest.mark.parametrize("arch", ARCHS)
def test_an_ensemble_of_one_model_equals_the_model(arch, vocab):
    model = make_model(arch, vocab, seed=4).eval()
    ensemble = Ensemble([model])
    batch = sample_batch(vocab)
    with torch.no_grad():
        alone, _ = incremental(model, batch.src, batch.src_lengths, batch.tgt_in)
        joined, state = incremental(ensemble, batch.src, batch.src_lengths, batch.tgt_in)
    assert torch.equal(alone, joined)
    assert ensemble.eos_id == vocab.eos_id and ensemble.tgt_vocab_size == len(vocab)


def test_an_ensemble_averages_log_probabilities_and_reorders_every_member(vocab):
    models = [make_model("gru", vocab, seed=5).eval(), make_model("transformer", vocab, seed=6).eval()]
    ensemble = Ensemble(models)
    batch = sample_batch(vocab, n=3)
    index = torch.tensor([1, 1, 0])
    tokens = batch.tgt_in[:, 0]
    with torch.no_grad():
        state = ensemble.reorder(ensemble.encode(batch.src, batch.src_lengths), index)
        got, state = ensemble.step(state, tokens[index])
        expected = sum(m.step(m.encode(batch.src[index], batch.src_lengths[index]), tokens[index])[0]
                       for m in models) / 2
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)
    assert state.time == 1 and any(k.startswith("1.self_k") for k in state.tensors)


def test_an_ensemble_refuses_models_with_other_target_vocabularies(vocab):
    other = make_model("gru", vocab, tgt_vocab_size=len(vocab) + 1)
    with pytest.raises(ValueError, match="member 1 has target vocabulary"):
        Ensemble([make_model("gru", vocab), other])


def test_decoder_state_select_repeats_rows():
    state = DecoderState({"a": torch.arange(6).view(3, 2)}, time=4)
    picked = state.select(torch.tensor([2, 2, 0]))
    assert picked.tensors["a"].tolist() == [[4, 5], [4, 5], [0, 1]] and picked.time == 4 and picked.batch_size == 3


def test_same_sources_keeps_per_source_tensors_and_reorders_the_rest():
    memory = torch.arange(4).view(4, 1)
    state = DecoderState({"memory": memory, "hidden": torch.arange(4) * 10}, 1, {"memory": 1})
    index = torch.tensor([1, 1, 3, 2])                       # rows 0-1 and 2-3 belong to one source each
    kept = state.select(index, same_sources=True)
    assert kept.tensors["memory"] is memory and kept.tensors["hidden"].tolist() == [10, 10, 30, 20]
    assert state.select(index).tensors["memory"].view(-1).tolist() == [1, 1, 3, 2]
    assert kept.per_source == {"memory": 1}


@pytest.mark.parametrize("architecture", ["gru", "transformer"])
def test_same_sources_reorder_gives_the_steps_of_a_full_reorder(vocab, architecture):
    model = make_model(architecture, vocab).eval()
    src = torch.tensor([[5, 6, 7, vocab.eos_id], [8, 9, vocab.eos_id, vocab.pad_id]])
    with torch.inference_mode():
        state = model.reorder(model.encode(src, torch.tensor([4, 3])), torch.tensor([0, 0, 1, 1]))
        _, state = model.step(state, torch.tensor([5, 6, 7, 8]))
        index = torch.tensor([1, 0, 3, 3])                   # a reshuffle within each sentence's two rows
        fast, _ = model.step(model.reorder(state, index, same_sources=True), torch.tensor([4, 4, 4, 4]))
        slow, _ = model.step(model.reorder(state, index), torch.tensor([4, 4, 4, 4]))
    assert set(state.per_source) and torch.equal(fast, slow)


def test_select_leaves_one_free_entry_on_the_time_axis_and_concat_drops_it():
    cache = torch.arange(2 * 3 * 2).view(2, 3, 2)            # [rows, time entries (2 valid + 1 free), 2]
    state = DecoderState({"cache": cache, "h": torch.tensor([7, 8])}, time=2, per_time={"cache": 1})
    picked = state.select(torch.tensor([1, 1, 0]))
    assert picked.tensors["cache"].shape == (3, 3, 2) and picked.per_time == {"cache": 1}
    assert picked.tensors["cache"][:, :2].tolist() == cache[[1, 1, 0], :2].tolist()
    joined = DecoderState.concat([picked, state])              # the valid entries of both, whatever their room
    assert joined.tensors["cache"].tolist() == cache[[1, 1, 0, 0, 1], :2].tolist()


def test_the_transformer_fills_the_free_entry_in_place_and_scores_as_without_it(vocab):
    """After a reorder, a step writes its keys into the free entry (no copy of the cache) and gives exactly the
    log-probabilities of stepping a cache that has no free entry (the copying path)."""
    model = make_model("transformer", vocab, seed=4).eval()
    batch = sample_batch(vocab, n=3)
    index = torch.tensor([2, 0, 0, 1])
    with torch.inference_mode():
        _, state = incremental(model, batch.src, batch.src_lengths, batch.tgt_in[:, :3])
        reordered = model.reorder(state, index)
        room = reordered.tensors["self_k0"]
        assert room.shape[2] == 4 and reordered.time == 3          # 3 valid entries and a free one
        in_place, after = model.step(reordered, torch.tensor([4, 5, 6, 7]))
        tight = DecoderState({k: v.narrow(2, 0, 3) if k in state.per_time else v for k, v in reordered.tensors.items()},
                             3, reordered.per_source, reordered.per_time)
        copied, _ = model.step(tight, torch.tensor([4, 5, 6, 7]))
    assert after.tensors["self_k0"] is room and after.tensors["self_k0"].shape[2] == 4
    assert torch.equal(in_place, copied)
