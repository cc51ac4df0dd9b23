"""Unfolding (pipeline/nmt/unfold.py): the unfolded network against the ensemble it comes from, on random weights
sharpened so that the members disagree (c, the output layer's renormalisation, is then far from 0)."""
import pytest
import torch

from pipeline.nmt.greedy import greedy_decode
from pipeline.nmt.interface import Ensemble
from pipeline.nmt.unfold import unfold
from tests.pipeline.nmt.conftest import make_model


def sharpened(vocab, seed: int, **sizes):
    model = make_model("gru", vocab, seed=seed, **sizes).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)  # peaked, different distributions per member
    return model


def batch(vocab):
    src = torch.tensor([[5, 6, 7, 8, vocab.eos_id], [9, 4, vocab.eos_id, vocab.pad_id, vocab.pad_id]])
    tgt = torch.tensor([[vocab.bos_id, 7, 6, 5, 9], [vocab.bos_id, 4, 4, 8, 6]])
    return src, torch.tensor([5, 3]), tgt


def steps(model, src, lengths, tgt):
    """Log-probabilities [N, T, V] of the teacher-forced tokens, step by step through the decoder interface."""
    state, out = model.encode(src, lengths), []
    for t in range(tgt.shape[1]):
        log_probs, state = model.step(state, tgt[:, t])
        out.append(log_probs)
    return torch.stack(out, 1)


@pytest.mark.parametrize("members,layers", [(2, 1), (3, 2)])
def test_the_unfolded_network_is_the_ensemble_renormalised_at_every_step(vocab, members, layers):
    """log p_unfolded = mean_k log p_k + c per row, c = -log sum_v prod_k p_k(v)^(1/K) >= 0 (brute force)."""
    models = [sharpened(vocab, seed, encoder_layers=layers) for seed in range(members)]
    big = unfold(models)
    assert (big.config.hidden_size, big.config.attention_heads) == (members * 64, members)
    src, lengths, tgt = batch(vocab)
    with torch.no_grad():
        ensemble = steps(Ensemble(models), src, lengths, tgt).double()
        unfolded = steps(big, src, lengths, tgt).double()
        members_log_probs = torch.stack([steps(m, src, lengths, tgt) for m in models]).double()
    c = -torch.logsumexp(members_log_probs.mean(0), dim=-1)                 # [N, T]
    assert c.min() >= 0 and c.max() > 0.01                                  # the members really disagree
    assert torch.allclose(unfolded, ensemble + c[..., None], atol=2e-5)
    # the teacher-forced pass (training's forward) agrees with the steps
    assert torch.allclose(big.score(src, lengths, tgt).double(), unfolded, atol=2e-5)


def test_a_hypothesis_scores_as_under_the_ensemble_plus_its_steps_renormalisation(vocab):
    models = [sharpened(vocab, seed) for seed in (4, 5)]
    big = unfold(models)
    src, lengths, tgt = batch(vocab)
    with torch.no_grad():
        ensemble = steps(Ensemble(models), src, lengths, tgt)
        unfolded = steps(big, src, lengths, tgt)
    chosen = tgt[:, 1:, None]
    ensemble_score = ensemble[:, :-1].gather(-1, chosen).sum((1, 2)).double()
    unfolded_score = unfolded[:, :-1].gather(-1, chosen).sum((1, 2)).double()
    bound = -torch.logsumexp(ensemble[:, :-1].double(), dim=-1).sum(1)      # sum_t c_t
    assert torch.all(unfolded_score >= ensemble_score - 1e-5)
    assert torch.allclose(unfolded_score - ensemble_score, bound, atol=1e-4)


def test_greedy_search_finds_what_the_ensemble_finds(vocab):
    """c is the same for every token of a row, so each step ranks tokens as the ensemble does."""
    models = [sharpened(vocab, seed) for seed in (1, 2)]
    src, lengths, _ = batch(vocab)
    with torch.no_grad():
        limits = torch.tensor([12, 12])
        assert greedy_decode(unfold(models), src, lengths, limits) == greedy_decode(Ensemble(models), src, lengths,
                                                                                    limits)


def test_one_member_unfolds_to_itself(vocab):
    model = sharpened(vocab, 3)
    src, lengths, tgt = batch(vocab)
    with torch.no_grad():
        assert torch.allclose(steps(unfold([model]), src, lengths, tgt), steps(model, src, lengths, tgt), atol=1e-5)


def test_members_of_different_topologies_or_architectures_are_refused(vocab):
    with pytest.raises(ValueError, match="share a topology"):
        unfold([make_model("gru", vocab), make_model("gru", vocab, hidden_size=32)])
    with pytest.raises(ValueError, match="only GRU models unfold"):
        unfold([make_model("gru", vocab), make_model("transformer", vocab)])
