"""Hypothesis-testing view of risk (fdp_core.explore.risk) and the harm-level presets."""

import math

import numpy as np
import pytest

from fdp_core.explore import presets
from fdp_core.budget.accounting import compose, gaussian_entry, gdp_delta, pure_entry
from fdp_core.errors import ParameterError
from fdp_core.mechanisms.calibration import analytic_sigma
from fdp_core.explore.risk import (
    approx_dp_power, gdp_power, max_advantage, power, power_curve, pure_dp_power, report_power, risk_sentence)

Z95 = 1.6448536269514722  # Phi^-1(0.95), from tables


def phi(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


ALPHA = np.linspace(0, 1, 2001)


def test_hand_computed_values():
    assert gdp_power(0.05, 1.0) == pytest.approx(phi(-Z95 + 1.0), rel=1e-12)  # 0.2595...
    assert gdp_power(0.95, 0.5) == pytest.approx(phi(Z95 + 0.5), rel=1e-12)
    e = math.e
    assert pure_dp_power(0.05, 1.0) == pytest.approx(e * 0.05)  # 0.1359: the e^eps alpha piece
    assert pure_dp_power(0.5, 1.0) == pytest.approx(1 - 0.5 / e)  # 0.8161: the other piece
    assert pure_dp_power(0.5, 5.0) == pytest.approx(1 - 0.5 / math.exp(5))
    assert pure_dp_power(0.2, 5.0) == pytest.approx(1 - 0.8 / math.exp(5))
    assert approx_dp_power(0.05, 1.0, 0.01) == pytest.approx(e * 0.05 + 0.01)
    assert approx_dp_power(0.5, 1.0, 0.01) == pytest.approx(1 - 0.49 / e)
    assert approx_dp_power(0.0, 1.0, 0.01) == pytest.approx(0.01)  # delta: detection with no false alarm
    assert gdp_power(0.05, 0.0) == pytest.approx(0.05)  # no information: guessing


@pytest.mark.parametrize("curve", [
    lambda a: gdp_power(a, 0.7), lambda a: gdp_power(a, 3.0),
    lambda a: pure_dp_power(a, 0.5), lambda a: approx_dp_power(a, 2.0, 1e-3)])
def test_power_curve_properties(curve):
    p = curve(ALPHA)
    assert np.all(np.diff(p) >= -1e-15)  # monotone
    assert np.all(p >= ALPHA - 1e-15) and np.all(p <= 1)  # never worse than guessing, never above 1
    assert np.all(np.diff(p, 2) <= 1e-9)  # concave (trade-off functions are convex)
    assert p[-1] == pytest.approx(1.0)
    # Symmetry of DP trade-off functions: beta = 1 - power satisfies beta(beta(alpha)) = alpha.
    beta = 1 - curve(ALPHA)
    mid = (beta > 1e-6) & (beta < 1 - 1e-6)
    np.testing.assert_allclose(1 - curve(beta[mid]), ALPHA[mid], atol=1e-9)


def test_power_grows_with_the_privacy_parameter():
    assert np.all(gdp_power(ALPHA, 1.0) <= gdp_power(ALPHA, 1.5) + 1e-15)
    assert np.all(pure_dp_power(ALPHA, 0.5) <= pure_dp_power(ALPHA, 1.0) + 1e-15)
    assert np.all(approx_dp_power(ALPHA, 1.0, 0.0) <= approx_dp_power(ALPHA, 1.0, 0.01) + 1e-15)


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
def test_gdp_curve_lies_under_each_implied_eps_delta_curve(mu):
    """mu-GDP implies (eps, delta(eps))-DP for every eps: the GDP power is the envelope's lower side."""
    best = np.ones_like(ALPHA)
    for eps in np.linspace(0, 20, 401):
        bound = approx_dp_power(ALPHA, eps, gdp_delta(mu, eps))
        assert np.all(gdp_power(ALPHA, mu) <= bound + 1e-12)
        best = np.minimum(best, bound)
    assert np.max(best - gdp_power(ALPHA, mu)) < 0.02  # and the envelope is close to it


def test_max_advantage_matches_numerical_maximum():
    fine = np.linspace(0, 1, 200_001)
    for mu in (0.5, 2.0):
        assert max_advantage(mu=mu) == pytest.approx(np.max(gdp_power(fine, mu) - fine), abs=1e-8)
    for eps, delta in ((1.0, 0.0), (0.3, 1e-3)):
        assert max_advantage(epsilon=eps, delta=delta) == pytest.approx(
            np.max(approx_dp_power(fine, eps, delta) - fine), abs=1e-5)


def test_sentence_and_curve():
    text = risk_sentence(epsilon=1.0)
    assert "at most 5.0% of non-members" in text and "at most 13.6% of members" in text
    assert "26.0% of members" in risk_sentence(mu=1.0)  # Phi(-0.645) = 0.2595
    alpha, p = power_curve(mu=1.0, n_points=11)
    assert alpha.shape == p.shape == (11,)
    # With both guarantees known, the smaller bound is reported.
    np.testing.assert_allclose(power(ALPHA, mu=1.0, epsilon=0.5, delta=0.0),
                               np.minimum(gdp_power(ALPHA, 1.0), pure_dp_power(ALPHA, 0.5)))


def test_report_power_uses_composed_mu_for_gaussian_only_ledgers():
    sigma = analytic_sigma(1.0, 0.5, 1e-6)
    gs = [gaussian_entry("mean", "gp", sensitivity=1.0, sigma=sigma, epsilon=0.5, delta=1e-6) for _ in range(4)]
    rep = compose(gs, 1e-5)
    expected = np.minimum(gdp_power(ALPHA, 2.0 / sigma), approx_dp_power(ALPHA, rep.best.epsilon, 1e-5))
    np.testing.assert_allclose(report_power(rep, ALPHA), expected)
    mixed = compose(gs + [pure_entry("kde", "iclp_kde", epsilon=0.1)], 1e-5)
    np.testing.assert_allclose(report_power(mixed, ALPHA),
                               approx_dp_power(ALPHA, mixed.best.epsilon, mixed.best.delta))


def test_bad_inputs():
    with pytest.raises(ParameterError, match="alpha"):
        gdp_power(1.5, 1.0)
    with pytest.raises(ParameterError):
        approx_dp_power(0.1, 1.0, 1.0)
    with pytest.raises(ParameterError):
        power(0.1)


def test_presets_are_plain_and_sane():
    assert presets.DISCLAIMER == "Illustrative only — not legal guidance."
    assert len({p.name for p in presets.PRESETS}) == len(presets.PRESETS) >= 3
    for p in presets.PRESETS:
        assert p.epsilon > 0 and 0 <= p.delta < 1 and p.description
    real = [p for p in presets.PRESETS if p.harm_level != "teaching"]
    # Stronger harm, smaller budget.
    assert [p.epsilon for p in real] == sorted((p.epsilon for p in real), reverse=True)
    assert presets.preset("Moderate").epsilon == 1.0
    with pytest.raises(ParameterError, match="unknown preset"):
        presets.preset("lenient")
