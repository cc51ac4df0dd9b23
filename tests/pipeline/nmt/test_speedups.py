"""CPU speed-ups: each switch keeps the model's outputs (exactly up to float order, or within int8 noise)."""
import pytest
import torch

from pipeline.decode import SearchSettings, decode_sources
from pipeline.nmt.speedups import CpuSpeedups, apply_speedups
from pipeline.nmt.threads import threads_wait_passively
from tests.pipeline.decode.test_beam_search import random_sources
from tests.pipeline.nmt.conftest import digit_vocab, make_model

torch.set_num_threads(1)


def step_log_probs(model, sources):
    src = torch.tensor([s + [0] * (6 - len(s)) for s in sources])
    lengths = torch.tensor([len(s) for s in sources])
    with torch.inference_mode():
        state = model.encode(src, lengths)
        out = []
        prev = torch.full((len(sources),), model.bos_id)
        for token in (5, 6, 7):
            log_probs, state = model.step(state, prev)
            out.append(log_probs)
            prev = torch.full((len(sources),), token)
    return torch.stack(out)


def test_precomputed_embedding_projections_give_the_same_gru_steps():
    model = make_model("gru", digit_vocab(), seed=2).eval()
    fast = apply_speedups(model, CpuSpeedups(precompute_embeddings=True))
    sources = [[4, 5, 6, 2], [7, 8, 2], [9, 2]]
    assert hasattr(fast, "cell_table") and not hasattr(model, "cell_table")  # the original is untouched
    assert torch.allclose(step_log_probs(fast, sources), step_log_probs(model, sources), atol=1e-5)


@pytest.mark.parametrize("architecture", ["gru", "transformer"])
def test_int8_stays_within_quantisation_noise_and_decodes(architecture):
    model = make_model(architecture, digit_vocab(), seed=3).eval()
    sources = [[4, 5, 6, 2], [7, 8, 2], [9, 2]]
    for speedups in (CpuSpeedups(int8=True), CpuSpeedups(int8=True, precompute_embeddings=True)):
        fast = apply_speedups(model, speedups)
        difference = (step_log_probs(fast, sources) - step_log_probs(model, sources)).abs().max()
        assert 0 < difference < 0.1, speedups  # quantised (not the same numbers), but close
        settings = SearchSettings(beam=3, max_length_a=1.0, max_length_b=3)
        assert len(decode_sources(fast, random_sources(5, seed=1), settings, batch_sentences=2)) == 5


def test_no_speedup_returns_the_model_itself():
    model = make_model("gru", digit_vocab(), seed=1).eval()
    assert apply_speedups(model, CpuSpeedups()) is model and CpuSpeedups(int8=True).names() == ["int8"]


def test_the_speedups_of_a_profile_and_of_an_export_made_before_a_setting_existed():
    from pipeline.config import load_profile

    assert CpuSpeedups.of(load_profile("medium").decode) == CpuSpeedups(precompute_embeddings=True,
                                                                        ancestry_cache=True,
                                                                        serial_small_ops=threads_wait_passively())
    assert CpuSpeedups.of({"precompute_embeddings": True}) == CpuSpeedups(
        precompute_embeddings=True, serial_small_ops=threads_wait_passively())
