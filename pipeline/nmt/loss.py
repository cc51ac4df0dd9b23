"""The training loss: label-smoothed cross-entropy (Szegedy et al. 2016) from one log-softmax, with its gradient
written out.

With eps = smoothing and V the vocabulary size, each non-pad position costs

    (1 - eps) * -log p(gold) + eps * mean_v -log p(v)

(F.cross_entropy's `label_smoothing`), and its gradient with respect to the logits is p - q, q = (1 - eps) onehot +
eps / V. Autograd through log_softmax, gather and sum would fill, scatter and add three [N, V] gradients; the
function below computes p - q in three passes over the saved log-probabilities.
"""
from __future__ import annotations

import torch
from torch import Tensor


class _SmoothedCrossEntropy(torch.autograd.Function):
    """(summed smoothed loss, summed NLL) of logits [M, V] (fp32) against gold [M]; rows where `keep` is False
    (padding) cost nothing and get no gradient."""

    @staticmethod
    def forward(ctx, logits: Tensor, gold: Tensor, keep: Tensor, smoothing: float) -> tuple[Tensor, Tensor]:
        log_probs = torch.log_softmax(logits, dim=-1)
        gold_log_probs = log_probs.gather(1, gold[:, None]).squeeze(1)
        nll = -(gold_log_probs * keep).sum()
        loss = nll.clone()  # differentiable, unlike the NLL returned beside it
        if smoothing > 0:
            loss = (1.0 - smoothing) * nll - smoothing * (log_probs.sum(dim=-1) * keep).sum() / logits.shape[-1]
        ctx.save_for_backward(log_probs, gold, keep)
        ctx.smoothing = smoothing
        ctx.mark_non_differentiable(nll)
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss: Tensor, _grad_nll: Tensor) -> tuple[Tensor, None, None, None]:
        log_probs, gold, keep = ctx.saved_tensors
        eps, vocab = ctx.smoothing, log_probs.shape[-1]
        grad = torch.exp(log_probs)
        if eps > 0:
            grad.sub_(eps / vocab)
        grad.scatter_add_(1, gold[:, None], torch.full_like(gold[:, None], eps - 1.0, dtype=grad.dtype))
        return grad.mul_((keep * grad_loss)[:, None]), None, None, None


def label_smoothed_loss(logits: Tensor, target: Tensor, pad_id: int, smoothing: float) -> tuple[Tensor, Tensor]:
    """Summed label-smoothed cross-entropy and summed NLL (no gradient) over the non-pad positions of logits
    [N, T, V] against target [N, T]; computed in fp32 whatever the logits' type."""
    gold = target.reshape(-1)
    keep = (gold != pad_id).float()
    return _SmoothedCrossEntropy.apply(logits.reshape(-1, logits.shape[-1]).float(), gold, keep, smoothing)
