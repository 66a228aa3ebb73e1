"""Noise calibration of the Gaussian mechanism (METHODS.md section 2)."""

import math

import numpy as np
import pytest
from scipy import stats

from fdp_core.errors import ParameterError
from fdp_core.mechanisms.calibration import (analytic_delta, analytic_sigma, classical_sigma,
                                             gaussian_quantile_radius, weighted_chi2_cdf)

CASES = [(0.01, 1e-5), (0.1, 1e-6), (0.5, 0.1), (1.0, 1e-5), (2.0, 1e-8), (5.0, 1e-3), (10.0, 1e-10)]


def _delta_by_direct_formula(sigma, sens, eps):
    """Balle & Wang's condition with plain scipy.stats.norm (independent of the log-space code)."""
    return (stats.norm.cdf(sens / (2 * sigma) - eps * sigma / sens)
            - math.exp(eps) * stats.norm.cdf(-sens / (2 * sigma) - eps * sigma / sens))


@pytest.mark.parametrize("eps,delta", CASES)
@pytest.mark.parametrize("sens", [1e-3, 1.0, 37.0])
def test_analytic_sigma_is_valid_and_minimal(eps, delta, sens):
    sigma = analytic_sigma(sens, eps, delta)
    assert analytic_delta(sigma, sens, eps) <= delta
    assert _delta_by_direct_formula(sigma, sens, eps) <= delta * (1 + 1e-6)
    assert analytic_delta(sigma * (1 - 1e-6), sens, eps) > delta


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (0.5, 1e-3), (1.0, 0.05)])
def test_analytic_never_needs_more_noise_than_classical(eps, delta):
    assert analytic_sigma(1.0, eps, delta) < classical_sigma(1.0, eps, delta)


def test_classical_formula():
    assert classical_sigma(2.0, 0.5, 1e-5) == pytest.approx(2.0 * math.sqrt(2 * math.log(2e5)) / 0.5)


def test_classical_refuses_epsilon_above_one():
    with pytest.raises(ParameterError, match="only valid for epsilon <= 1"):
        classical_sigma(1.0, 1.5, 1e-5)


@pytest.mark.parametrize("eps,delta,message", [(0, 1e-5, "epsilon"), (-1, 1e-5, "epsilon"), (1, 0, "delta"),
                                               (1, 1, "delta"), (1, -0.1, "delta"), (np.inf, 1e-5, "epsilon")])
def test_invalid_privacy_parameters(eps, delta, message):
    with pytest.raises(ParameterError, match=message):
        analytic_sigma(1.0, eps, delta)


@pytest.mark.parametrize("variances", [np.array([1.0]), np.array([1.0, 0.5, 0.1]),
                                       1.0 / np.arange(1, 200) ** 2, np.ones(50)])
def test_weighted_chi_square_quantile_matches_monte_carlo(variances):
    rng = np.random.default_rng(0)
    q = rng.chisquare(1, (200_000, variances.size)) @ variances
    radius = gaussian_quantile_radius(variances, 0.95)
    # The saddlepoint approximation is within about half a percentile of the true law.
    assert np.mean(q <= radius**2) == pytest.approx(0.95, abs=0.006)
    for p in (0.95, 0.99):
        assert weighted_chi2_cdf(np.quantile(q, p), variances) == pytest.approx(p, abs=0.004)
    assert weighted_chi2_cdf(np.quantile(q, 0.5), variances) == pytest.approx(0.5, abs=0.025)


def test_normal_distribution_functions_match_scipy_in_both_tails():
    """calibration.ndtr / log_ndtr (C library erfc, no scipy import on the release path) against
    scipy.special over the whole range the analytic calibration can reach."""
    from scipy import special

    from fdp_core.mechanisms.calibration import log_ndtr, ndtr

    xs = np.concatenate([np.linspace(-1000.0, 37.0, 20_001), -np.logspace(-8, 3, 2000), np.logspace(-8, 1.55, 2000),
                         [0.0, -37.0, np.nextafter(-37.0, 0.0), np.nextafter(-37.0, -np.inf), 6.0]])
    for x in xs:
        expected = special.log_ndtr(x)
        if abs(expected) > 1e-290:  # below, both are subnormal
            assert log_ndtr(x) == pytest.approx(expected, rel=5e-13, abs=0.0), x  # both within 1e-13 of mpmath
        p = special.ndtr(x)
        if p > 1e-290:
            assert ndtr(x) == pytest.approx(p, rel=5e-13, abs=0.0), x


def test_imhof_inversion_matches_exact_laws_within_its_error_bound():
    """The exact inversion behind every Gaussian L2 radius (METHODS 21, 25) against laws computed another way."""
    from scipy import integrate, stats

    from fdp_core.mechanisms.weighted_chi2 import imhof_cdf, quantile_upper_bound

    for k in (2, 5, 30):  # equal variances: a scaled chi-square with k degrees of freedom
        v = np.full(k, 0.7)
        for p in (0.5, 0.9, 0.95, 0.99):
            x = 0.7 * stats.chi2.ppf(p, k)
            cdf, error = imhof_cdf(x, v)
            assert abs(cdf - p) <= error + 1e-8
        assert 0.95 <= stats.chi2.cdf(quantile_upper_bound(v, 0.95) / 0.7, k) <= 0.9505  # its error bound is charged
    v = np.array([1.0, 0.3])  # two unequal variances: the convolution by quadrature

    def exact(x):
        inner = lambda a: stats.chi2.pdf(a, 1) * stats.chi2.cdf((x - a) / 0.3, 1)  # noqa: E731
        return integrate.quad(inner, 0.0, x, limit=200, points=[1e-6])[0]

    x = quantile_upper_bound(v, 0.95)
    assert 0.95 <= exact(x) <= 0.9505  # holds, and not by much (its error bound is charged)
    cdf, error = imhof_cdf(4.0, v)
    assert abs(cdf - exact(4.0)) <= error + 1e-6
