import math

import pytest
import torch

from pipeline.nmt.lr_schedule import lr_factor, make_scheduler


def test_inverse_sqrt_warms_up_linearly_then_decays():
    f = lr_factor("inverse_sqrt", warmup=100)
    assert f(1) == pytest.approx(0.01) and f(50) == pytest.approx(0.5) and f(100) == pytest.approx(1.0)
    assert f(400) == pytest.approx(0.5) and f(10000) == pytest.approx(0.1)
    assert lr_factor("inverse_sqrt", warmup=0)(4) == pytest.approx(0.5)


def test_constant_after_warm_up_and_unknown_names_fail():
    f = lr_factor("constant", warmup=10)
    assert f(5) == pytest.approx(0.5) and f(10) == f(10**6) == 1.0
    with pytest.raises(ValueError, match="unknown learning-rate schedule 'cosine'"):
        lr_factor("cosine", 10)


def test_the_scheduler_sets_the_rate_of_each_update():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=0.1)
    sched = make_scheduler(opt, "inverse_sqrt", warmup=4)
    rates = []
    for _ in range(8):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert rates[:4] == pytest.approx([0.025, 0.05, 0.075, 0.1])
    assert rates[7] == pytest.approx(0.1 * math.sqrt(4 / 8))


def test_linear_decays_to_zero_at_the_last_update():
    f = lr_factor("linear", warmup=10, total=109)
    assert f(5) == pytest.approx(0.5) and f(10) == pytest.approx(1.0)
    assert f(60) == pytest.approx(0.5) and f(109) == pytest.approx(0.01)  # the last update still trains
    assert f(110) == 0.0 and f(200) == 0.0  # a run resumed past its cap trains at rate 0
    with pytest.raises(ValueError, match="above the warm-up"):
        lr_factor("linear", warmup=10, total=10)


def test_the_profiles_schedules_are_the_trainers():
    from pipeline.config.profile_settings import LR_SCHEDULES
    from pipeline.nmt.lr_schedule import SCHEDULES
    assert LR_SCHEDULES == SCHEDULES
