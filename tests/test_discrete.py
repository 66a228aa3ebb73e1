"""Export-grade discrete noise via OpenDP: grid, privacy map, distribution, black-box audit.

The sampler draws from OS entropy (no seed), so the statistical tests are not bit-for-bit
reproducible; each uses a significance level of 1e-6, so a spurious failure is a
one-in-a-million event, while the negative controls are rejected by a wide margin.
"""

import math

import numpy as np
import pytest
from scipy import stats

from fdp_core.budget.accounting import Ledger, cks_epsilon, discrete_entry, gdp_delta
from fdp_core.explore.audit import audit_pair
from fdp_core.errors import BudgetError, ParameterError
from fdp_core.mechanisms.discrete import (
    discrete_gaussian_plan, discrete_gaussian_release, discrete_laplace_plan, discrete_laplace_release)

ALPHA = 1e-6
RELEASES = {"laplace": discrete_laplace_release, "gaussian": discrete_gaussian_release}


def on_grid(x, k):
    units = np.ldexp(np.asarray(x, dtype=float), -k)
    return bool(np.array_equal(units, np.round(units)))


@pytest.mark.parametrize("family", ["laplace", "gaussian"])
@pytest.mark.parametrize("k", [-30, -12, -3])
def test_outputs_are_on_the_grid_and_multiplied_back(family, k):
    rng = np.random.default_rng(1)
    values = rng.normal(size=64) * 5
    scales = np.exp(rng.normal(size=64))
    noisy, record = RELEASES[family](values, scales, scaled_sensitivity=0.7, granularity_exp=k)
    assert on_grid(record.unit_values, k)
    assert not on_grid(record.unit_values, k + 1)  # really the 2^k grid, not a coarser one
    np.testing.assert_array_equal(noisy, record.unit_values * scales)
    np.testing.assert_array_equal(record.scales, scales)
    assert record.granularity == 2.0**k and record.granularity_exp == k
    assert record.opendp_version == "0.16.0"
    assert "OpenSSL" in record.entropy
    d = record.to_dict()
    assert len(d["unit_values"]) == 64 and d["sampler"].startswith("opendp.measurements.make_")


@pytest.mark.parametrize("n,d_in,k", [(1, 1.0, -30), (100, 0.1, -30), (1000, 2.0, -20), (10, 0.5, -4)])
def test_laplace_privacy_map_after_inflation(n, d_in, k):
    plan = discrete_laplace_plan(n, scaled_sensitivity=d_in, granularity_exp=k)
    # Hand-computed inflation: float allowance n 2^(k+3) plus OpenDP's rounding term n 2^k (L1).
    inflated = d_in + n * 2.0 ** (k + 3) + n * 2.0**k
    assert plan.inflated_sensitivity == pytest.approx(inflated, rel=1e-12)
    assert plan.unit_noise_scale == pytest.approx(inflated / d_in, rel=1e-10)
    assert plan.unit_noise_scale >= inflated / d_in
    # OpenDP's map reports epsilon = inflated / c: at most the target, and no more than 1e-10 below.
    assert plan.epsilon <= d_in and plan.epsilon == pytest.approx(d_in, rel=1e-10)
    assert plan.rho is None and plan.privacy_measure == "max_divergence"


@pytest.mark.parametrize("n,mu,k", [(1, 1.0, -30), (100, 0.3, -30), (1000, 2.0, -20), (10, 0.5, -4)])
def test_gaussian_privacy_map_reports_rho(n, mu, k):
    plan = discrete_gaussian_plan(n, scaled_sensitivity=mu, granularity_exp=k)
    inflated = mu + math.sqrt(n) * (2.0 ** (k + 3) + 2.0**k)  # L2: sqrt(n) per unit of grid
    assert plan.inflated_sensitivity == pytest.approx(inflated, rel=1e-10)
    assert plan.unit_noise_scale == pytest.approx(inflated / mu, rel=1e-10)
    assert plan.rho <= mu**2 / 2 and plan.rho == pytest.approx(mu**2 / 2, rel=1e-10)
    assert plan.epsilon is None and plan.privacy_measure == "zero_concentrated_divergence"


def test_plan_then_check_then_release_then_commit():
    """The export flow: the budget is checked on the plan, before any noise exists."""
    ledger = Ledger(1.0, 1e-5)
    plan = discrete_gaussian_plan(3, scaled_sensitivity=0.1)
    entry = discrete_entry(plan, "mean", "gp_mean_discrete", delta=1e-6)
    assert entry.curve == "zcdp" and entry.rho == plan.rho
    assert entry.epsilon == pytest.approx(cks_epsilon(plan.rho, 1e-6))
    ledger.check(entry)
    _, record = discrete_gaussian_release(np.zeros(3), np.ones(3), scaled_sensitivity=0.1)
    assert record.rho == plan.rho  # the release has exactly the privacy that was checked
    ledger.commit(entry)
    big = discrete_entry(discrete_laplace_plan(3, scaled_sensitivity=2.0), "kde", "iclp_kde_discrete")
    assert big.curve == "pure" and big.epsilon == pytest.approx(2.0)
    with pytest.raises(BudgetError):
        ledger.check(big)


@pytest.mark.parametrize("family", ["laplace", "gaussian"])
def test_noise_distribution_with_heterogeneous_scales(family):
    """KS test of (release - value) / scale against the unit-scale law; 0.9x scale must be rejected."""
    n = 40_000
    rng = np.random.default_rng(2)
    scales = np.repeat([1e-3, 1.0, 250.0, 2.0**-7], n // 4)
    values = np.round(rng.normal(size=n) * 100) * scales  # y = values / scales are integers: on every grid
    noisy, record = RELEASES[family](values, scales, scaled_sensitivity=1.0)
    z = (noisy - values) / scales / record.unit_noise_scale
    unit = stats.laplace if family == "laplace" else stats.norm
    assert stats.kstest(z, unit.cdf).pvalue > ALPHA
    assert stats.kstest(z, unit(scale=0.9).cdf).pvalue < ALPHA
    for group in np.split(z, 4):  # each coefficient got noise of *its* scale
        assert stats.kstest(group, unit.cdf).pvalue > ALPHA


def test_gaussian_noise_chi_square():
    n = 20_000
    _, record = discrete_gaussian_release(np.zeros(n), np.full(n, 3.0), scaled_sensitivity=0.5)
    q = float(np.sum((record.unit_values / record.unit_noise_scale) ** 2))
    p = stats.chi2.cdf(q, df=n)
    assert ALPHA < p < 1 - ALPHA
    assert stats.chi2.cdf(q / 0.81, df=n) > 1 - ALPHA  # a 0.9x sd would be rejected


def _laplace_sampler(x0, scale_factor):
    def sample(rng, size):
        noisy, _ = discrete_laplace_release(np.full(size, x0), np.full(size, scale_factor), scaled_sensitivity=1.0)
        return noisy
    return sample


def _gaussian_sampler(x0, scale_factor):
    def sample(rng, size):
        noisy, _ = discrete_gaussian_release(np.full(size, x0), np.full(size, scale_factor), scaled_sensitivity=1.0)
        return noisy
    return sample


@pytest.mark.parametrize("factor,flagged", [(1.0, False), (0.9, True)])
def test_audit_discrete_laplace(factor, flagged):
    """Neighbouring coefficient values 0 and 1 with b = Delta / eps = 1 are 1-DP; 0.9 b is not."""
    result = audit_pair(_laplace_sampler(0.0, factor), _laplace_sampler(1.0, factor), 1.0, 0.0,
                        n_select=20_000, n_test=60_000)
    assert result.flagged is flagged, result


@pytest.mark.parametrize("factor,flagged", [(1.0, False), (0.9, True)])
def test_audit_discrete_gaussian(factor, flagged):
    """mu = 1 at unit sd: (1, delta(1))-DP by the Gaussian profile; 0.9 sd violates it."""
    result = audit_pair(_gaussian_sampler(0.0, factor), _gaussian_sampler(1.0, factor), 1.0, gdp_delta(1.0, 1.0),
                        n_select=20_000, n_test=60_000)
    assert result.flagged is flagged, result


def test_bad_inputs_are_refused_before_drawing():
    with pytest.raises(ParameterError, match="same length"):
        discrete_laplace_release(np.zeros(3), np.ones(4), scaled_sensitivity=1.0)
    with pytest.raises(ParameterError, match="non-finite"):
        discrete_laplace_release(np.array([0.0, np.nan]), np.ones(2), scaled_sensitivity=1.0)
    with pytest.raises(ParameterError, match="scale"):
        discrete_gaussian_release(np.zeros(2), np.array([1.0, 0.0]), scaled_sensitivity=1.0)
    with pytest.raises(ParameterError, match="scaled_sensitivity"):
        discrete_gaussian_release(np.zeros(2), np.ones(2), scaled_sensitivity=-1.0)
    with pytest.raises(ParameterError, match="granularity_exp"):
        discrete_laplace_release(np.zeros(2), np.ones(2), scaled_sensitivity=1.0, granularity_exp=-30.5)
    with pytest.raises(ParameterError, match="larger granularity_exp"):  # |y| = 2^21 > 2^(50-30)
        discrete_laplace_release(np.array([2.0**21]), np.ones(1), scaled_sensitivity=1.0)
    with pytest.raises(ParameterError, match="delta"):
        discrete_entry(discrete_gaussian_plan(2, scaled_sensitivity=1.0), "mean", "dg")
