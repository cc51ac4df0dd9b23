"""The training loss against PyTorch's own label-smoothed cross-entropy, value and gradient, in float64."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from pipeline.nmt.loss import label_smoothed_loss


def _reference(logits: torch.Tensor, target: torch.Tensor, pad_id: int, smoothing: float) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=pad_id,
                           reduction="sum", label_smoothing=smoothing)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_loss_and_gradient_equal_cross_entropy_with_label_smoothing(smoothing):
    torch.manual_seed(0)
    logits = torch.randn(3, 6, 40, dtype=torch.float64, requires_grad=True)
    target = torch.randint(1, 40, (3, 6))
    target[0, 4:], target[2, 1:] = 0, 0  # padding, pad id 0
    loss, nll = label_smoothed_loss(logits.double(), target, 0, smoothing)
    ours, = torch.autograd.grad(loss, logits)
    expected = _reference(logits, target, 0, smoothing)
    theirs, = torch.autograd.grad(expected, logits)
    # label_smoothed_loss computes in fp32 (the logits' .float()), so compare at fp32's precision
    assert float(loss.detach()) == pytest.approx(float(expected.detach()), rel=1e-6)
    assert float(nll) == pytest.approx(float(_reference(logits, target, 0, 0.0).detach()), rel=1e-6)
    assert torch.allclose(ours, theirs, atol=1e-6)
    assert not nll.requires_grad
    assert torch.count_nonzero(ours[2, 1:]) == 0 and torch.count_nonzero(ours[0, 4:]) == 0  # no gradient on pads


@pytest.mark.parametrize("scale", [1 / 37.0, 2.5, -0.75])
def test_the_gradient_carries_the_upstream_factor_of_a_scaled_loss(scale):
    """Training backpropagates loss / target_tokens (times a rank's weight), so backward receives an upstream
    gradient other than 1: the hand-written gradient must be multiplied by it, as autograd's is."""
    torch.manual_seed(2)
    logits = torch.randn(2, 7, 25, dtype=torch.float64, requires_grad=True)
    target = torch.randint(1, 25, (2, 7))
    target[1, 5:] = 0
    loss, _ = label_smoothed_loss(logits, target, 0, 0.2)
    (loss * scale).backward()
    ours = logits.grad.clone()
    logits.grad = None
    (_reference(logits, target, 0, 0.2) * scale).backward()
    assert torch.allclose(ours, logits.grad, atol=1e-6)
    unscaled, = torch.autograd.grad(label_smoothed_loss(logits, target, 0, 0.2)[0], logits)
    assert not torch.allclose(ours, unscaled, atol=1e-3)  # the factor reached the gradient


def test_a_half_precision_input_is_summed_in_fp32():
    torch.manual_seed(1)
    logits = torch.randn(2, 5, 30)
    target = torch.randint(1, 30, (2, 5))
    full, _ = label_smoothed_loss(logits, target, 0, 0.1)
    half, _ = label_smoothed_loss(logits.bfloat16(), target, 0, 0.1)
    assert half.dtype == torch.float32
    assert float(half) == pytest.approx(float(full), rel=1e-2)
