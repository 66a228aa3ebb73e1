"""Penalised mean + Gaussian-process mechanism (METHODS.md sections 2 and 10)."""

import numpy as np
import pytest
from scipy import optimize, stats

from fdp_core.explore.audit import audit_pair
from fdp_core.data.loading import clip_to_ball, from_arrays
from fdp_core.kernels import eigenbasis
from fdp_core.releases.mean import MeanSettings, plan_mean_release
from fdp_core.mechanisms.calibration import analytic_sigma
from fdp_core.sensitivity import gaussian_mean_argmax_component

GRID = np.linspace(0, 1, 30)
TAU = 1.0


def _random_curves(rng, n, scale=0.5):
    t = GRID[None, :]
    return (scale * rng.normal(size=(n, 1)) * np.sin(np.pi * t) + 0.3 * rng.normal(size=(n, 1)) * np.cos(3 * t)
            + 0.1 * rng.normal(size=(n, GRID.size)))


def _settings(**kw):
    base = dict(kernel="matern32", rho=0.2, eta=1.5, phi=1e-2, epsilon=1.0, delta=0.1, tau=TAU)
    return MeanSettings(**{**base, **kw})


def _cm_norm(plan_a, plan_b):
    basis = eigenbasis(plan_a.settings.kernel, plan_a.settings.rho, GRID)
    diff = plan_a.estimate_coefficients - plan_b.estimate_coefficients
    return float(np.sqrt(np.sum(diff**2 / basis.eigenvalues)))


# ----------------------------------------------------------------- estimator

@pytest.mark.parametrize("eta,phi", [(1.0, 1e-3), (1.5, 1e-2), (2.5, 0.3)])
def test_estimator_equals_direct_numerical_minimiser(eta, phi):
    """mu_hat minimises sum_j w_j (mu(t_j) - xbar(t_j))^2 + phi ||mu||^2_{H(C^eta)} over the span."""
    rng = np.random.default_rng(1)
    fd = from_arrays(GRID, _random_curves(rng, 40))
    plan = plan_mean_release(fd, _settings(eta=eta, phi=phi))
    basis = eigenbasis("matern32", 0.2, GRID)
    phi_mat, w, lam = basis.eigenfunctions, basis.weights, basis.eigenvalues
    xbar = clip_to_ball(fd.data_matrix, w, TAU).values.mean(axis=0)

    def objective(c):
        resid = phi_mat @ c - xbar
        return float(w @ resid**2 + phi * np.sum(c**2 / lam**eta))

    # Optimise over u with c = u * scale: a change of variables (the objective is still
    # evaluated on the grid) that undoes the 1/lambda^eta ill-conditioning of the penalty.
    scale = 1.0 / np.sqrt(1.0 + phi / lam**eta)

    def objective_u(u):
        return objective(u * scale)

    def gradient_u(u):
        c = u * scale
        return scale * (2 * phi_mat.T @ (w * (phi_mat @ c - xbar)) + 2 * phi * c / lam**eta)

    found = optimize.minimize(objective_u, np.zeros(lam.size), jac=gradient_u, method="BFGS",
                              options=dict(gtol=1e-12, maxiter=10_000))
    found.x = found.x * scale
    assert objective(plan.estimate_coefficients) <= found.fun + 1e-12
    np.testing.assert_allclose(phi_mat @ found.x, plan.estimate, atol=1e-5)


# ----------------------------------------------------------------- sensitivity

def _neighbours(base, replacement_a, replacement_b):
    a, b = base.copy(), base.copy()
    a[0], b[0] = replacement_a, replacement_b
    return from_arrays(GRID, a), from_arrays(GRID, b)


@pytest.mark.parametrize("eta,phi", [(1.0, 1e-3), (1.5, 1e-2), (3.0, 1e-4)])
def test_sensitivity_audit_never_exceeds_tight_bound_and_attains_it(eta, phi):
    rng = np.random.default_rng(7)
    base = _random_curves(rng, 25)
    settings = _settings(eta=eta, phi=phi)
    bound = plan_mean_release(from_arrays(GRID, base), settings).sensitivity
    basis = eigenbasis("matern32", 0.2, GRID)
    phi_mat = basis.eigenfunctions
    worst = 0.0
    candidates = []
    for _ in range(200):  # random curves, many far outside the ball (clipped)
        candidates.append((rng.normal(size=GRID.size) * rng.uniform(0.1, 20), rng.normal(size=GRID.size)))
    for l in range(basis.n_components):  # extreme clipped curves along each eigenfunction
        candidates.append((3 * TAU * phi_mat[:, l], -3 * TAU * phi_mat[:, l]))
        candidates.append((TAU * phi_mat[:, l], np.zeros(GRID.size) + 1e-9 * GRID))
    for j in range(GRID.size):  # spikes
        spike = np.zeros(GRID.size)
        spike[j] = 100.0
        candidates.append((spike, -spike))
    for a, b in candidates:
        d_a, d_b = _neighbours(base, a, b)
        worst = max(worst, _cm_norm(plan_mean_release(d_a, settings), plan_mean_release(d_b, settings)))
    assert worst <= bound * (1 + 1e-9)

    # Cauchy-Schwarz equality case: the two curves +-tau phi_l* attain the bound.
    l_star = gaussian_mean_argmax_component(basis.eigenvalues,
                                            basis.eigenvalues**eta / (basis.eigenvalues**eta + phi))
    d_a, d_b = _neighbours(base, TAU * phi_mat[:, l_star], -TAU * phi_mat[:, l_star])
    attained = _cm_norm(plan_mean_release(d_a, settings), plan_mean_release(d_b, settings))
    assert attained == pytest.approx(bound, rel=1e-6)


def test_paper_bound_is_never_smaller_than_tight():
    rng = np.random.default_rng(2)
    fd = from_arrays(GRID, _random_curves(rng, 30))
    for eta in (1.0, 1.3, 2.0, 3.5):
        for phi in (1e-5, 1e-3, 1e-1, 10.0):
            g = plan_mean_release(fd, _settings(eta=eta, phi=phi)).guarantee
            assert g.sensitivity_for("paper") >= g.sensitivity_for("tight") * (1 - 1e-12)


def test_paper_bound_formula():
    fd = from_arrays(GRID, _random_curves(np.random.default_rng(0), 20))
    g = plan_mean_release(fd, _settings(eta=2.0, phi=0.01, tau=2.0)).guarantee
    expected = np.sqrt(2.0**2 * 3.0 ** (2 - 0.5) / (20**2 * 0.01**0.5 * 4.0))
    assert g.sensitivity_for("paper") == pytest.approx(expected)


def test_sigma_uses_the_selected_bound_and_calibration():
    fd = from_arrays(GRID, _random_curves(np.random.default_rng(0), 20))
    for bound in ("tight", "paper"):
        plan = plan_mean_release(fd, _settings(bound=bound, delta=1e-5))
        assert plan.sigma == pytest.approx(analytic_sigma(plan.guarantee.sensitivity_for(bound), 1.0, 1e-5))


# ----------------------------------------------------------------- noise

def test_whitened_noise_is_chi_square():
    fd = from_arrays(GRID, _random_curves(np.random.default_rng(3), 30))
    plan = plan_mean_release(fd, _settings(delta=1e-5))
    basis = eigenbasis("matern32", 0.2, GRID)
    draws = plan.sample(np.random.default_rng(11), 5000)
    coefs = basis.coefficients(draws - plan.estimate)
    expected_sd = plan.sigma * np.sqrt(basis.eigenvalues)
    q = np.sum((coefs / expected_sd) ** 2, axis=1)
    assert stats.kstest(q, stats.chi2(basis.n_components).cdf).pvalue > 1e-3
    # The same test has power: noise 10% too small is rejected.
    q_small = np.sum((0.9 * coefs / expected_sd) ** 2, axis=1)
    assert stats.kstest(q_small, stats.chi2(basis.n_components).cdf).pvalue < 1e-6
    # Closed-form expected squared L2 error matches the draws.
    sq = ((draws - plan.estimate) ** 2) @ basis.weights
    assert sq.mean() == pytest.approx(plan.expected_sq_l2_error, rel=4 * sq.std() / sq.mean() / np.sqrt(5000))


# ----------------------------------------------------------------- black-box audit

def _worst_pair_plans(sigma_factor=1.0):
    """Neighbours differing in one curve: +tau phi_l* vs -tau phi_l* (the attained worst case)."""
    rng = np.random.default_rng(5)
    base = _random_curves(rng, 20)
    settings = _settings(epsilon=1.0, delta=0.1)
    basis = eigenbasis("matern32", 0.2, GRID)
    s = basis.eigenvalues**1.5 / (basis.eigenvalues**1.5 + 1e-2)
    l_star = gaussian_mean_argmax_component(basis.eigenvalues, s)
    d_a, d_b = _neighbours(base, TAU * basis.eigenfunctions[:, l_star], -TAU * basis.eigenfunctions[:, l_star])
    plans = []
    for fd in (d_a, d_b):
        plan = plan_mean_release(fd, settings)
        if sigma_factor != 1.0:
            from dataclasses import replace
            plan = replace(plan, noise_scales=plan.noise_scales * sigma_factor)
        plans.append(plan)
    direction = basis.projector[:, l_star]  # statistic: the release's coefficient on phi_l*
    return plans, direction


def _sampler(plan, direction):
    return lambda rng, size: plan.sample(rng, size) @ direction


def test_black_box_audit_passes_at_calibrated_sigma():
    (pa, pb), direction = _worst_pair_plans()
    result = audit_pair(_sampler(pa, direction), _sampler(pb, direction), 1.0, 0.1, seed=1)
    assert not result.flagged, result


def test_black_box_audit_flags_ninety_percent_sigma():
    (pa, pb), direction = _worst_pair_plans(sigma_factor=0.9)
    result = audit_pair(_sampler(pa, direction), _sampler(pb, direction), 1.0, 0.1, seed=1)
    assert result.flagged, result
