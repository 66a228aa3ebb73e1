"""Closed-form accuracy of one planned mean release (METHODS.md 2, 3, 7).

Every closed form is checked against something computed another way: Monte Carlo draws of
the mechanism's own sampler, a single Laplace's exact quantile, or the mechanism's own plan.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from fdp_core.explore.accuracy import (CLOSED_FORM_MECHANISMS, gaussian_sum_abs_quantile, laplace_sum_abs_quantile,
                               noise_scale_factor, penalised_noise_scales, pointwise_halfwidth, sq_l2_distance)
from fdp_core.errors import ParameterError
from fdp_core.kernels import eigenbasis
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings, plan_mean_release
from fdp_core.data.simulate import kl_design

SETTINGS = MeanSettings(kernel="matern52", rho=0.2, eta=1.5, phi=1e-3, epsilon=1.0, delta=1e-5, tau=0.3, psi=1e-3,
                        lo=-1.0, hi=1.0)


def settings_for(mechanism: str) -> MeanSettings:
    return replace(SETTINGS, mechanism=mechanism)


@pytest.fixture(scope="module")
def fd():
    return kl_design(n=60, m=61, seed=3)


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_closed_form_agrees_with_monte_carlo(mechanism):
    """E||release - estimate||^2 against the mean of sanitized draws (within 4 standard errors).

    A fine grid keeps the quadrature of the Bernstein basis (whose closed form integrates
    exactly over [0, 1]) well inside the Monte Carlo error.
    """
    fine = kl_design(n=60, m=201, seed=3)
    plan = plan_mean_release(fine, settings_for(mechanism))
    draws = plan.sample(np.random.default_rng(11), 30_000)
    sq = sq_l2_distance(draws, plan.estimate, fine.weights)
    se = sq.std(ddof=1) / math.sqrt(sq.size)
    assert abs(sq.mean() - plan.expected_sq_l2_error) < 4 * se, (sq.mean(), plan.expected_sq_l2_error, se)




def test_gaussian_sum_quantile_is_the_normal_quantile_of_the_sd():
    # 3 Z_1 + 4 Z_2 is N(0, 25): |X| <= 5 z_0.975 with probability 0.95.
    (q,) = gaussian_sum_abs_quantile(np.array([[3.0, -4.0]]), 0.95)
    assert q == pytest.approx(5 * 1.959963984540054, rel=1e-14)


def test_laplace_sum_quantile_exact_cases():
    # One Laplace(b): P(|X| > q) = exp(-q/b).  Two iid Laplace(1): P(|X| > x) = (2 + x) e^-x / 2.
    one = laplace_sum_abs_quantile(np.array([[0.7]]), 0.95)[0]
    assert one == pytest.approx(0.7 * math.log(20), rel=1e-5) and one >= 0.7 * math.log(20)
    two = laplace_sum_abs_quantile(np.array([[1.0, 1.0]]), 0.95)[0]
    assert (2 + two) * math.exp(-two) / 2 == pytest.approx(0.05, rel=1e-5)
    assert (2 + two) * math.exp(-two) / 2 <= 0.05  # conservative side


def test_laplace_sum_quantile_against_monte_carlo():
    a = np.array([[1.0, 0.6, 0.3, 0.05], [0.2, 0.2, 0.2, 0.2]])
    q = laplace_sum_abs_quantile(a, 0.9)
    x = np.random.default_rng(4).laplace(size=(1_000_000, 4))
    for row, qi in zip(a, q):
        p_hat = np.mean(np.abs(x @ row) <= qi)
        assert abs(p_hat - 0.9) < 4 * math.sqrt(0.09 / x.shape[0])


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_pointwise_halfwidth_against_monte_carlo(fd, mechanism):
    plan = plan_mean_release(fd, settings_for(mechanism))
    h = pointwise_halfwidth(plan, 0.95)
    dev = np.abs(plan.sample(np.random.default_rng(8), 100_000) - plan.estimate)
    coverage = np.mean(dev <= h, axis=0)
    # At the worst grid point the coverage is 95%; everywhere else at least that.
    assert coverage.min() == pytest.approx(0.95, abs=4 * math.sqrt(0.95 * 0.05 / dev.shape[0]))


@pytest.mark.parametrize("mechanism", CLOSED_FORM_MECHANISMS)
@pytest.mark.parametrize("bound,calibration", [("tight", "analytic"), ("paper", "classical")])
def test_penalised_noise_scales_are_the_mechanisms_own(fd, mechanism, bound, calibration):
    """The vectorised scales of PCV and the sweeps equal a full plan at every (eta, penalty)."""
    s = replace(settings_for(mechanism), bound=bound, calibration=calibration)
    pairs = [(1.3, 1e-5), (2.0, 1e-2), (3.0, 0.5)]
    basis = eigenbasis(s.kernel, s.rho, fd.unit_grid, fd.weights, nu=s.nu)
    eta, penalty = np.array(pairs).T
    scales = penalised_noise_scales(s, basis.eigenvalues, eta, penalty, s.tau, fd.n)
    assert scales.shape == (len(pairs), basis.eigenvalues.size)
    for row, (e, pen) in zip(scales, pairs):
        plan = plan_mean_release(fd, replace(s, eta=e, phi=pen, psi=pen))
        np.testing.assert_allclose(row[:plan.noise_scales.size], plan.noise_scales, rtol=1e-12)
    with pytest.raises(ParameterError):
        penalised_noise_scales(settings_for("frl"), basis.eigenvalues, eta, penalty, s.tau, fd.n)


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_noise_scale_factor_is_the_ratio_of_two_plans(fd, mechanism):
    plan = plan_mean_release(fd, settings_for(mechanism))
    other = plan_mean_release(fd, replace(settings_for(mechanism), epsilon=0.3, delta=1e-3))
    delta = 1e-3 if plan.family.uses_delta else None
    np.testing.assert_allclose(plan.noise_scales * noise_scale_factor(plan, 0.3, delta), other.noise_scales,
                               rtol=1e-12)
