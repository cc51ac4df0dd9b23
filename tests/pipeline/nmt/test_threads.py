"""Serial small operations: one thread inside a step, all threads for the large linear layers, and the outputs
of the plain path (the same hypotheses, scores within float rounding: a reduction split over fewer threads sums in
another order)."""
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from pipeline.decode import SearchSettings, decode_sources
from pipeline.nmt.speedups import CpuSpeedups, apply_speedups
from pipeline.nmt.threads import SerialSmallOps, linear_macs, serial_steps, threads_wait_passively
from tests.pipeline.decode.test_beam_search import random_sources
from tests.pipeline.nmt.conftest import digit_vocab, make_model


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def threads_seen(module: nn.Module, seen: list[int]) -> None:
    """Record torch's thread count while `module` computes (a hook after SerialSmallOps's own)."""
    module.register_forward_pre_hook(lambda m, inputs: seen.append(torch.get_num_threads()))


def test_inside_one_thread_outside_restored_and_an_ensemble_widens_every_member(two_threads):
    first, second = nn.Linear(8, 64), nn.Linear(8, 64)
    for layer in (first, second):
        layer.step_threads = SerialSmallOps(min_macs=4 * 8 * 64)
        layer.step_threads.attach(layer)
    seen: list[int] = []
    threads_seen(first, seen)
    threads_seen(second, seen)
    with serial_steps(SimpleNamespace(models=[first, second])):  # as an Ensemble holds its members
        assert torch.get_num_threads() == 1
        first(torch.ones(4, 8)), second(torch.ones(4, 8))
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2 and seen == [2, 2]
    with pytest.raises(RuntimeError):
        with serial_steps(first):
            raise RuntimeError("a step that fails")
    assert torch.get_num_threads() == 2 and first.step_threads.threads == 1
    with serial_steps(nn.Linear(8, 8)):  # a model without the speed-up
        assert torch.get_num_threads() == 2


def test_only_a_linear_layer_of_min_macs_runs_on_all_threads(two_threads):
    small, large = nn.Linear(8, 8), nn.Linear(8, 64)
    model = nn.Sequential(small, large)
    model.step_threads = SerialSmallOps(min_macs=4 * 8 * 64)
    assert model.step_threads.attach(model) == 2
    seen_small, seen_large = [], []
    threads_seen(small, seen_small)
    threads_seen(large, seen_large)
    with serial_steps(model):
        small(torch.ones(4, 8))
        large(torch.ones(4, 8))         # 4 x 8 x 64 multiply-adds: all threads
        large(torch.ones(3, 8))         # fewer rows: one thread
        after = torch.get_num_threads()
    large(torch.ones(4, 8))             # outside a step: torch's own count, untouched
    assert seen_small == [1] and seen_large == [2, 1, 2] and after == 1
    assert linear_macs(large, torch.ones(2, 5, 8)) == 10 * 8 * 64


@pytest.mark.parametrize("architecture", ["gru", "transformer"])
@pytest.mark.parametrize("int8", [False, True])
def test_decoding_gives_the_outputs_of_all_threads_within_rounding(two_threads, architecture, int8):
    model = make_model(architecture, digit_vocab(), seed=4).eval()
    plain = apply_speedups(model, CpuSpeedups(int8=int8, ancestry_cache=True, precompute_embeddings=True))
    serial = apply_speedups(model, CpuSpeedups(int8=int8, ancestry_cache=True, precompute_embeddings=True,
                                               serial_small_ops=True))
    layer = serial.output
    serial.step_threads.min_macs = 8 * layer.in_features * layer.out_features  # from 8 rows on: all threads
    seen: list[int] = []
    threads_seen(layer, seen)
    sources = random_sources(9, seed=3)
    settings = SearchSettings(beam=3, nbest=2, max_length_a=1.0, max_length_b=4)
    expected = decode_sources(plain, sources, settings, batch_sentences=4)
    found = decode_sources(serial, sources, settings, batch_sentences=4)
    assert [[h.tokens for h in hyps] for hyps in found] == [[h.tokens for h in hyps] for hyps in expected]
    scores = torch.tensor([[h.score for h in hyps] for hyps in found])
    assert torch.allclose(scores, torch.tensor([[h.score for h in hyps] for hyps in expected]), rtol=0, atol=1e-5)
    assert set(seen) == {1, 2}  # the output layer ran on one thread (4 rows) and on both (12 rows)
    assert torch.get_num_threads() == 2 and not hasattr(model, "step_threads")  # the original is untouched


def test_cpu_decoding_turns_it_on_where_threads_wait_passively(monkeypatch):
    assert threads_wait_passively({"OMP_WAIT_POLICY": " Passive"})
    assert not threads_wait_passively({"OMP_WAIT_POLICY": "ACTIVE"}) and not threads_wait_passively({})
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert CpuSpeedups.of({}).serial_small_ops and not CpuSpeedups().serial_small_ops
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert not CpuSpeedups.of({}).serial_small_ops
