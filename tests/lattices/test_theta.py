import pytest

from lattices.theta import Theta
from pipeline.evaluation.bleu import BleuScore


def test_plain_convention_from_precisions():
    theta = Theta.from_precisions([60.0, 40.0, 30.0, 20.0], "plain")
    p, r = 0.6, (40 / 60 + 30 / 40 + 20 / 30) / 3
    assert theta.p == pytest.approx(p) and theta.r == pytest.approx(r)
    assert theta.values[0] == -1.0
    for n in range(1, 5):
        assert theta.values[n] == pytest.approx(1 / (4 * p * r ** (n - 1)))


def test_scaled_convention_divides_by_t_and_is_recorded():
    plain = Theta.from_precisions([60.0, 40.0, 30.0, 20.0], "plain")
    scaled = Theta.from_precisions([60.0, 40.0, 30.0, 20.0], "scaled", T=10)
    assert scaled.values == pytest.approx([v / 10 for v in plain.values])
    sig = scaled.signature()
    assert sig["convention"] == "scaled" and sig["T"] == 10 and sig["theta"] == list(scaled.values)
    assert Theta.from_signature(sig) == scaled
    assert plain.signature()["T"] == 1.0


def test_from_bleu_score():
    score = BleuScore(score=25.0, precisions=(55.0, 30.0, 18.0, 11.0), brevity_penalty=1.0, sys_len=10,
                      ref_len=10, signature="x")
    assert Theta.from_bleu(score).values == Theta.from_precisions([55.0, 30.0, 18.0, 11.0]).values


@pytest.mark.parametrize("precisions", [[60, 40, 0, 20], [60, 40, 30], [160, 40, 30, 20]])
def test_unusable_precisions_are_errors(precisions):
    with pytest.raises(ValueError):
        Theta.from_precisions(precisions)


def test_unknown_convention_and_inconsistent_signature_are_errors():
    with pytest.raises(ValueError, match="convention"):
        Theta.from_precisions([60, 40, 30, 20], "tromble")
    sig = Theta.from_precisions([60, 40, 30, 20]).signature()
    sig["theta"][2] += 0.1
    with pytest.raises(ValueError, match="do not follow"):
        Theta.from_signature(sig)
