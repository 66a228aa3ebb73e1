"""The width of the band for E[Y] split into its parts, and the pointwise floor of any affine interval
(fdp_core/explore/band_floor.py, METHODS.md 25), against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq, minimize
from scipy.special import ndtr
from scipy.stats import foldnorm

from fdp_core.data.loading import from_arrays
from fdp_core.explore.band_floor import bias_aware_critical_value, pointwise_floor, width_parts
from fdp_core.releases.bands import confidence_band, plan_band_release
from fdp_core.releases.mean import MeanSettings


def _plan(m: int = 10, n: int = 300, B: float = 3.0):
    t = np.linspace(0, 1, m)
    X = 0.5 + 0.2 * np.random.default_rng(0).standard_normal((n, 1)) * np.sin(np.pi * t)
    return plan_band_release(from_arrays(t, X), MeanSettings(value_range=(0, 1), confidence_band=0.95, epsilon=4.0,
                                                             smoothness_bound=B))


def test_the_bias_aware_critical_value_is_the_folded_normal_quantile():
    beta = np.array([0.0, 0.3, 1.0, 2.5, 7.0, 40.0])
    assert bias_aware_critical_value(beta, 0.95) == pytest.approx(foldnorm.ppf(0.95, beta), rel=1e-9)
    assert bias_aware_critical_value(np.array([0.0]), 0.95)[0] == pytest.approx(1.959964, abs=1e-6)
    assert bias_aware_critical_value(np.array([40.0]), 0.95)[0] == pytest.approx(40.0 + 1.644854, abs=1e-6)


def _brute_force(plan, cov, B, level, i):
    """The shortest bias-aware interval at grid point i over EVERY weight vector w on the released coefficients
    (estimate sum_k w_k r_k, r_k = s_k mu_k + error): worst bias B ||x^{1/2} (phi(t) - w s)|| over the ball, sd
    sqrt(w^T cov w); minimised numerically from several starts."""
    from fdp_core.registry import mean_mechanism

    m, c = plan.mean, plan.second_moment
    s = mean_mechanism(m.settings.mechanism).band_shrinkage(m.settings, c.eigenvalues, m.noise_scales)
    x, phi = c.eigenvalues ** float(m.settings.eta), c.eigenfunctions[i]

    def length(w):
        bias = B * np.sqrt(np.sum(x * (phi - w * s) ** 2))
        sd = np.sqrt(w @ cov @ w)
        beta = bias / sd  # the level quantile of |N(beta, 1)| by Brent's method (bisection is the code's)
        return float(brentq(lambda q: ndtr(q - beta) - ndtr(-q - beta) - level, 0.0, beta + 10.0, xtol=1e-14) * sd)

    starts = [phi / np.maximum(s, 1e-3) * f for f in (0.2, 0.5, 1.0)]
    return min(minimize(length, w0, method="BFGS", options={"gtol": 1e-10, "maxiter": 3000}).fun for w0 in starts)


def test_the_floor_is_the_shortest_affine_interval():
    """The floor equals the brute-force minimum over all weights (to the lambda grid's resolution), for
    uncorrelated and for correlated coefficient errors."""
    plan = _plan()
    m, c = plan.mean, plan.second_moment
    diagonal = np.diag(m.noise_scales**2 * (1.0 + np.linspace(0.0, 2.0, m.noise_scales.size)))
    for B in (0.3, 3.0):  # the best lambda is inside the grid for both
        floor = pointwise_floor(m, c.eigenfunctions, c.eigenvalues, diagonal, B, 0.95)
        for i in (0, 4, 9):
            brute = _brute_force(plan, diagonal, B, 0.95, i)
            assert brute * (1 - 1e-6) <= floor[i] <= brute * 1.002
    A = np.random.default_rng(1).standard_normal((m.noise_scales.size,) * 2) * m.noise_scales
    correlated = diagonal + A @ A.T / 4
    floor = pointwise_floor(m, c.eigenfunctions, c.eigenvalues, correlated, 3.0, 0.95)
    for i in (2, 7):
        brute = _brute_force(plan, correlated, 3.0, 0.95, i)
        assert brute * (1 - 1e-6) <= floor[i] <= brute * 1.002


def test_the_parts_add_up_to_the_band_and_stay_above_the_floor():
    plan = _plan(m=25, n=1000, B=5.0)
    rng = np.random.default_rng(3)
    values, second = plan.mean.sample(rng, 1)[0], plan.second_moment.sample(rng, 1)["second_moment"][0]
    bands = confidence_band(plan, values, second)
    c = plan.second_moment
    parts = width_parts(plan.mean, c.eigenfunctions, c.eigenvalues, bands.sampling_cov, bands.mean, 5.0, 0.95)
    assert parts.bias == pytest.approx(np.mean(bands.mean.bias_pointwise), rel=1e-9)  # the band's own bias bound
    # Its own draws: the joint part is the band's q w(t) to Monte Carlo precision.
    assert parts.joint == pytest.approx(np.mean(bands.mean.band.quantile * bands.mean.band.sd), rel=0.05)
    assert max(parts.noise, parts.sampling) <= parts.joint <= parts.noise + parts.sampling
    assert parts.floor <= parts.total


def test_on_real_curves_of_a_rough_design_the_mean_band_covers_and_stays_above_its_floor():
    """Brute force on curves (Poisson jumps, a t3 level shift: not a Gaussian process), every replication through
    the release path: the band for E[Y] covers it, no narrower than the floor of any affine interval, and its
    parts add up."""
    from fdp_core.explore.rough_design import rough_cell

    cell = rough_cell(500, 4.0, 20, grid_points=41, n_draws=1000, seed=5)
    assert cell.mean_coverage >= 0.9 and cell.coverage >= 0.8
    assert cell.floor_ratio < cell.mean_width_ratio
    assert cell.joint_ratio <= cell.noise_ratio + cell.sampling_ratio
