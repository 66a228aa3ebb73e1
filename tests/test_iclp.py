"""Pure epsilon-DP means (METHODS.md 3): ICLP-QR, ICLP-AR, FRL, Bernstein.

Estimators against direct numerical minimisers, sensitivity audits on adversarial and
random neighbouring pairs (tight bounds attained), Laplace conformance per coefficient,
black-box privacy audits with 0.9x and sqrt-2 negative controls, closed-form errors, PSS,
the S1-S4 designs and the mean page's comparison mode.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, stats

from fdp_core.explore.audit import audit_pair
from fdp_core.data.loading import from_arrays
from fdp_core.errors import ParameterError
from fdp_core.releases.estimators import absolute_penalty_mean_coefficients, bernstein_lattice_means, shrinkage
from fdp_core.kernels import eigenbasis
from fdp_core.publish.release import to_json
from fdp_core.releases.mean import MEAN_MECHANISMS, MeanSettings, analyst_view, plan_mean_release, release_record
from fdp_core.mechanisms.bernstein import bernstein_basis, bernstein_expected_sq_l2_error, bernstein_sum_sq_norms
from fdp_core.sensitivity import (iclp_ar_sensitivity_cs, iclp_ar_sensitivity_triangle, iclp_qr_weights,
                                  l1c_norm)
from fdp_core.data.simulate import SIMULATIONS, iclp_mean_s4, simulate
from fdp_core.explore.tuning import pss_defaults
from chart_specs import chart_figures

ROOT = Path(__file__).resolve().parents[1]
GRID = np.linspace(0.0, 1.0, 15)
TAU, N, EPS = 1.0, 6, 1.0
QR = MeanSettings(mechanism="iclp-qr", kernel="matern52", rho=0.2, eta=1.5, psi=1e-3, epsilon=EPS, tau=TAU)
AR = replace(QR, mechanism="iclp-ar", psi=0.05)
FRL = replace(QR, mechanism="frl", M=5)
BERN = MeanSettings(mechanism="bernstein", K=6, lo=-1.0, hi=2.0, epsilon=EPS)


# --------------------------------------------------------------------------- helpers

def _fd(values, grid=GRID):
    return from_arrays(grid, np.asarray(values, dtype=float))


def _change(settings, others, x, x_prime, grid=GRID) -> float:
    """The sensitivity's norm of the estimate change when curve x is replaced by x_prime:
    l1-C for ICLP, plain l1 for FRL and Bernstein (computed from the two plans)."""
    p = plan_mean_release(_fd(np.vstack([others, x]), grid), settings)
    q = plan_mean_release(_fd(np.vstack([others, x_prime]), grid), settings)
    diff = p.estimate_coefficients - q.estimate_coefficients
    if settings.mechanism.startswith("iclp"):
        lam = eigenbasis(settings.kernel, settings.rho, grid).eigenvalues
        return float(l1c_norm(diff, lam))
    return float(np.sum(np.abs(diff)))


def _others(rng, n=N - 1, m=GRID.size):
    return rng.normal(0.0, 0.4, (n, m)) + np.linspace(0.2, 0.6, m)


def _adversarial_curves(settings, rng):
    """Extreme clipped curves: +-tau phi_l, spikes, constants, large random curves."""
    basis = eigenbasis(settings.kernel, settings.rho, GRID)
    m = GRID.size
    curves = [s * TAU * basis.eigenfunctions[:, l] for l in range(basis.n_components) for s in (1, -1)]
    curves += [np.where(np.arange(m) == j, 50.0, 0.0) for j in (0, m // 2, m - 1)]
    curves += [np.full(m, c) for c in (-5.0, -1.0, 0.0, 2.0, 5.0)]
    curves += list(rng.normal(0, 3.0, (8, m)))
    return curves


def _random_pairs(rng, k):
    for _ in range(k):
        scale = rng.uniform(0.0, 4.0, 2)
        yield rng.normal(0, 1, GRID.size) * scale[0], rng.normal(0, 1, GRID.size) * scale[1]


# --------------------------------------------------------------------------- estimators = numerical minimisers

def test_qr_estimator_equals_numerical_minimiser_of_penalised_least_squares():
    """mu minimises sum_j w_j (mu(t_j) - xbar(t_j))^2 + psi sum_l mu_l^2 / lambda_l^eta over the span."""
    rng = np.random.default_rng(3)
    fd = _fd(_others(rng, 12))
    plan = plan_mean_release(fd, replace(QR, tau=100.0))
    basis = eigenbasis(QR.kernel, QR.rho, GRID)
    w, phi, lam = basis.weights, basis.eigenfunctions, basis.eigenvalues
    assert plan.n_clipped == 0  # so the objective's xbar is the plain sample mean
    xbar = fd.data_matrix.mean(axis=0)
    # The objective as a least-squares problem in the coefficients c (independent of the closed form).
    design = np.vstack([np.sqrt(w)[:, None] * phi, np.diag(np.sqrt(QR.psi / lam**QR.eta))])
    target = np.concatenate([np.sqrt(w) * xbar, np.zeros(lam.size)])
    numeric = optimize.lsq_linear(design, target, tol=1e-14, lsmr_tol="auto").x
    np.testing.assert_allclose(plan.estimate_coefficients, numeric, rtol=1e-6, atol=1e-10)


def test_ar_estimator_equals_coordinatewise_numerical_minimiser():
    """Soft threshold at psi/(2 lambda^(eta/2)) minimises (mu_l - x_l)^2 + psi |mu_l| / lambda_l^(eta/2)."""
    rng = np.random.default_rng(4)
    lam = np.sort(rng.uniform(1e-4, 1.0, 12))[::-1]
    x = rng.normal(0, 0.5, 12)
    for eta, psi in ((1.0, 0.01), (1.5, 0.05), (2.5, 0.002)):
        closed = absolute_penalty_mean_coefficients(x, lam, eta, psi)
        for l in range(lam.size):
            weight = psi / lam[l] ** (eta / 2)
            res = optimize.minimize_scalar(lambda mu: (mu - x[l]) ** 2 + weight * abs(mu),
                                           bounds=(-abs(x[l]) - 1, abs(x[l]) + 1), method="bounded",
                                           options={"xatol": 1e-12})
            assert closed[l] == pytest.approx(res.x, abs=1e-7)


# --------------------------------------------------------------------------- sensitivity audits

def test_iclp_qr_tight_bound_attained_and_never_exceeded():
    rng = np.random.default_rng(10)
    others = _others(rng)
    basis = eigenbasis(QR.kernel, QR.rho, GRID)
    plan = plan_mean_release(_fd(np.vstack([others, np.zeros(GRID.size)])), QR)
    a = iclp_qr_weights(basis.eigenvalues, shrinkage(basis.eigenvalues, QR.eta, QR.psi))
    worst = basis.synthesize(TAU * a / np.linalg.norm(a))  # Cauchy-Schwarz equality case
    assert _change(QR, others, worst, -worst) == pytest.approx(plan.sensitivity, rel=1e-6)
    assert plan.guarantee.sensitivity_for("paper") >= plan.sensitivity
    for x in _adversarial_curves(QR, rng):
        assert _change(QR, others, x, -x) <= plan.sensitivity * (1 + 1e-9)
        assert _change(QR, others, x, worst) <= plan.sensitivity * (1 + 1e-9)
    for x, y in _random_pairs(rng, 60):
        assert _change(QR, others, x, y) <= plan.sensitivity * (1 + 1e-9)


def test_frl_tight_bound_attained_and_never_exceeded():
    rng = np.random.default_rng(11)
    others = _others(rng)
    basis = eigenbasis(FRL.kernel, FRL.rho, GRID)
    plan = plan_mean_release(_fd(np.vstack([others, np.zeros(GRID.size)])), FRL)
    assert plan.sensitivity == pytest.approx(2 * TAU * math.sqrt(FRL.M) / N, rel=1e-12)
    direction = np.zeros(basis.n_components)
    direction[:FRL.M] = 1.0 / math.sqrt(FRL.M)
    worst = basis.synthesize(TAU * direction)
    assert _change(FRL, others, worst, -worst) == pytest.approx(plan.sensitivity, rel=1e-6)
    assert plan.guarantee.sensitivity_for("paper") == pytest.approx(2 * TAU * FRL.M / N)
    for x in _adversarial_curves(FRL, rng):
        assert _change(FRL, others, x, -x) <= plan.sensitivity * (1 + 1e-9)
    for x, y in _random_pairs(rng, 60):
        assert _change(FRL, others, x, y) <= plan.sensitivity * (1 + 1e-9)


def test_bernstein_bound_attained_and_never_exceeded():
    rng = np.random.default_rng(12)
    others = rng.uniform(-2, 3, (N - 1, GRID.size))
    plan = plan_mean_release(_fd(np.vstack([others, np.zeros(GRID.size)])), BERN)
    assert plan.sensitivity == pytest.approx((BERN.K + 1) * (BERN.hi - BERN.lo) / N, rel=1e-12)
    assert plan.tau is None
    hi, lo = np.full(GRID.size, BERN.hi), np.full(GRID.size, BERN.lo)
    assert _change(BERN, others, hi, lo) == pytest.approx(plan.sensitivity, rel=1e-6)
    spikes = [np.where(np.arange(GRID.size) == j, 100.0, -100.0) for j in range(GRID.size)]
    for x in spikes + [hi * 10, lo * 10]:
        assert _change(BERN, others, x, -x) <= plan.sensitivity * (1 + 1e-9)
    for x, y in _random_pairs(rng, 60):
        assert _change(BERN, others, 3 * x, 3 * y) <= plan.sensitivity * (1 + 1e-9)


def test_iclp_ar_cs_bound_never_exceeded_and_triangle_is_larger():
    rng = np.random.default_rng(13)
    for psi in (1e-3, 0.05, 0.3):
        settings = replace(AR, psi=psi)
        # Others near the thresholds, so that soft thresholding is switched on and off by the pair.
        others = _others(rng) * rng.uniform(0.1, 1.5)
        plan = plan_mean_release(_fd(np.vstack([others, np.zeros(GRID.size)])), settings)
        g = plan.guarantee
        assert g.details["sensitivity_triangle"] >= g.details["sensitivity_cs"] == plan.sensitivity
        for x in _adversarial_curves(settings, rng):
            assert _change(settings, others, x, -x) <= plan.sensitivity * (1 + 1e-9)
        for x, y in _random_pairs(rng, 40):
            assert _change(settings, others, x, y) <= plan.sensitivity * (1 + 1e-9)


def test_iclp_ar_inactive_components_are_exact_zeros_without_noise():
    rng = np.random.default_rng(14)
    plan = plan_mean_release(_fd(_others(rng)), replace(AR, psi=0.05))
    j = plan.guarantee.details["n_active"]
    assert 0 < j < plan.synthesis.shape[1]
    lam = eigenbasis(AR.kernel, AR.rho, GRID).eigenvalues
    thresholds = 0.05 / (2 * lam ** (AR.eta / 2))
    assert np.all(thresholds[:j] < TAU) and np.all(thresholds[j:] >= TAU)
    assert np.all(plan.estimate_coefficients[j:] == 0.0)
    assert np.all(plan.noise_scales[j:] == 0.0) and np.all(plan.noise_scales[:j] > 0)
    assert np.all(plan.noise_coefficients(np.random.default_rng(0), 100)[:, j:] == 0.0)


def test_iclp_ar_with_no_active_component_releases_exact_zeros():
    fd = _fd(np.random.default_rng(15).normal(0.3, 0.2, (N, GRID.size)))
    plan = plan_mean_release(fd, replace(AR, psi=1e3))
    assert plan.guarantee.details["n_active"] == 0 and plan.sensitivity == 0.0 and plan.expected_sq_l2_error == 0.0
    assert np.all(plan.sample(np.random.default_rng(0), 5) == 0.0)


def test_tau_from_data_flags_tau_based_mechanisms_but_not_bernstein():
    fd = _fd(np.random.default_rng(16).normal(0.3, 0.2, (N, GRID.size)))
    for settings in (QR, AR, FRL):
        assert plan_mean_release(fd, replace(settings, tau=None, tau_from_data=True)).data_dependent_flags
    assert not plan_mean_release(fd, replace(BERN, tau_from_data=True)).data_dependent_flags


def test_ar_triangle_bound_uses_lambda_to_minus_half_not_the_printed_minus_eta_half():
    """With eigenvalues > 1 the printed sum of lambda^(-eta/2) is exceeded by a real pair."""
    lam, eta, tau, n = np.array([9.0, 4.0]), 2.0, 1.0, 1
    x = np.array([0.0, tau])  # one-curve data sets {x} and {-x}; thresholds ~ 0
    change = l1c_norm(absolute_penalty_mean_coefficients(x, lam, eta, 1e-12)
                      - absolute_penalty_mean_coefficients(-x, lam, eta, 1e-12), lam)
    printed = 2 * tau / n * np.sum(lam ** (-eta / 2))
    assert change > printed  # the paper's formula would under-noise
    assert change <= iclp_ar_sensitivity_triangle(lam, 2, tau, n) * (1 + 1e-12)
    assert change <= iclp_ar_sensitivity_cs(lam, 2, tau, n) * (1 + 1e-12)


# --------------------------------------------------------------------------- noise: scales, conformance, errors

def _coefficient_noise(plan, draws):
    """Recover the coefficient noise from released curves (orthonormal projection or least squares)."""
    residual = draws - plan.estimate
    if plan.settings.mechanism == "bernstein":
        return np.linalg.lstsq(plan.synthesis, residual.T, rcond=None)[0].T
    return residual @ (plan.weights[:, None] * plan.synthesis)


@pytest.mark.parametrize("settings", [QR, AR, FRL, BERN], ids=lambda s: s.mechanism)
def test_laplace_noise_conforms_per_coefficient(settings):
    rng = np.random.default_rng(20)
    fd = _fd(rng.normal(0.5, 0.3, (N, GRID.size)))
    plan = plan_mean_release(fd, settings)
    scales = plan.noise_scales
    if settings.mechanism.startswith("iclp"):
        lam = eigenbasis(settings.kernel, settings.rho, GRID).eigenvalues
        active = scales > 0
        np.testing.assert_allclose(scales[active], plan.sensitivity * np.sqrt(lam[active]) / EPS, rtol=1e-12)
    noise = _coefficient_noise(plan, plan.sample(np.random.default_rng(21), 20_000))
    checked = np.flatnonzero(scales > 0)[:8]
    for l in checked:
        assert stats.kstest(noise[:, l], "laplace", args=(0.0, scales[l])).pvalue > 1e-4
    # The sqrt-2 mistake (unit-variance Laplace) is visible to the same test.
    l = checked[0]
    assert stats.kstest(noise[:, l] / math.sqrt(2), "laplace", args=(0.0, scales[l])).pvalue < 1e-8


@pytest.mark.parametrize("settings", [QR, AR, FRL], ids=lambda s: s.mechanism)
def test_expected_error_is_sum_of_two_b_squared(settings):
    rng = np.random.default_rng(22)
    plan = plan_mean_release(_fd(rng.normal(0.5, 0.3, (N, GRID.size))), settings)
    assert plan.expected_sq_l2_error == pytest.approx(2 * np.sum(plan.noise_scales**2), rel=1e-12)
    draws = plan.sample(np.random.default_rng(23), 40_000) - plan.estimate
    mc = np.mean((draws**2) @ plan.weights)
    assert mc == pytest.approx(plan.expected_sq_l2_error, rel=0.03)


def test_bernstein_closed_form_error():
    # METHODS.md: S_20 = 0.1945 (K = 20, not K + 1), from exact integer arithmetic.
    exact = sum(math.comb(20, v) ** 2 * math.factorial(2 * v) * math.factorial(40 - 2 * v) for v in range(21)) \
        / math.factorial(41)
    assert bernstein_sum_sq_norms(20) == pytest.approx(exact, rel=1e-12)
    assert exact == pytest.approx(0.19455, abs=5e-5)
    assert bernstein_expected_sq_l2_error(20, 1.0) == pytest.approx(2 * exact, rel=1e-12)
    assert bernstein_expected_sq_l2_error(20, 1.0, length=3.0) == pytest.approx(6 * exact, rel=1e-12)
    # Against quadrature of the basis on a fine grid, and against Monte Carlo on the data grid.
    fine = np.linspace(0, 1, 20001)
    basis = bernstein_basis(fine, 20)
    np.testing.assert_allclose(basis.sum(axis=1), 1.0, atol=1e-12)
    quad = np.trapezoid(basis**2, fine, axis=0).sum()
    assert quad == pytest.approx(exact, rel=1e-6)
    grid = np.linspace(0, 1, 201)
    fd = _fd(np.random.default_rng(5).uniform(-1, 2, (N, grid.size)), grid)
    plan = plan_mean_release(fd, replace(BERN, K=20))
    draws = plan.sample(np.random.default_rng(6), 20_000) - plan.estimate
    mc = np.mean((draws**2) @ plan.weights)
    assert mc == pytest.approx(plan.expected_sq_l2_error, rel=0.03)


def test_bernstein_lattice_means_interpolate_and_clip():
    grid = np.array([0.0, 0.3, 1.0])
    values = np.array([[0.0, 3.0, 1.0], [-5.0, 0.0, 0.5]])
    means, n_clipped = bernstein_lattice_means(values, grid, K=2, lo=-1.0, hi=2.0)
    # v/K = 0, 0.5, 1; curve 1 clipped to [0, 2, 1] -> 0.5 interpolates 2 + (0.2/0.7)(1 - 2)
    first = np.array([0.0, 2.0 + (0.2 / 0.7) * (1.0 - 2.0), 1.0])
    second = np.array([-1.0, 0.0 + (0.2 / 0.7) * 0.5, 0.5])
    np.testing.assert_allclose(means, (first + second) / 2, rtol=1e-12)
    assert n_clipped == 2


# --------------------------------------------------------------------------- black-box privacy audits

def _pair(settings, x, x_prime, others):
    return (plan_mean_release(_fd(np.vstack([others, x]), AUDIT_GRID), settings),
            plan_mean_release(_fd(np.vstack([others, x_prime]), AUDIT_GRID), settings))


AUDIT_GRID = np.linspace(0.0, 1.0, 10)
AUDIT_N = 4


def _audit_cases():
    """Worst-case neighbouring pairs (each attains the sensitivity in use) on a small grid.

    ICLP-QR: kernel/psi chosen so the loss spreads over two coefficients (shares ~0.68/0.31),
    the curves are the Cauchy-Schwarz equality case. ICLP-AR: J* = 1 with both means beyond
    the threshold, so the CS bound is attained. FRL: M = 2, d proportional to (1, 1).
    Bernstein: K = 1, a curve at hi against one at lo.
    """
    basis = eigenbasis("matern52", 0.5, AUDIT_GRID)
    rng = np.random.default_rng(30)
    cases = {}
    qr = MeanSettings(mechanism="iclp-qr", kernel="matern52", rho=0.5, eta=2.0, psi=0.1, epsilon=EPS, tau=TAU)
    a = iclp_qr_weights(basis.eigenvalues, shrinkage(basis.eigenvalues, 2.0, 0.1))
    x = basis.synthesize(TAU * a / np.linalg.norm(a))
    cases["iclp-qr"] = _pair(qr, x, -x, rng.normal(0, 0.3, (AUDIT_N - 1, AUDIT_GRID.size)))
    ar = replace(qr, mechanism="iclp-ar", psi=0.5)
    x = basis.synthesize(TAU * np.eye(basis.n_components)[0])
    cases["iclp-ar"] = _pair(ar, x, -x, x * np.array([[0.99], [0.98], [0.97]]))
    frl = replace(qr, mechanism="frl", M=2)
    x = basis.synthesize(TAU * np.r_[1.0, 1.0, np.zeros(basis.n_components - 2)] / math.sqrt(2))
    cases["frl"] = _pair(frl, x, -x, rng.normal(0, 0.3, (AUDIT_N - 1, AUDIT_GRID.size)))
    bern = MeanSettings(mechanism="bernstein", K=1, lo=-1.0, hi=1.0, epsilon=EPS)
    cases["bernstein"] = _pair(bern, np.full(AUDIT_GRID.size, 1.0), np.full(AUDIT_GRID.size, -1.0),
                               rng.uniform(-1, 1, (AUDIT_N - 1, AUDIT_GRID.size)))
    return cases


_CASES = {}


def _case(name):
    if not _CASES:
        _CASES.update(_audit_cases())
    return _CASES[name]


def _privacy_loss_statistic(plan, plan_prime):
    """Exact log-likelihood ratio of the claimed Laplace mechanism, from the released curve.

    Rounded to 1e-9: at the maximal loss the statistic is a constant, and its last-bit
    rounding (which differs between D and D' outputs) would otherwise define events that
    measure floating-point artefacts (Mironov 2012), not the real-arithmetic guarantee.
    """
    if plan.settings.mechanism == "bernstein":
        projector = np.linalg.pinv(plan.synthesis).T
    else:
        projector = plan.weights[:, None] * plan.synthesis
    active = plan.noise_scales > 0
    projector = np.ascontiguousarray(projector[:, active])
    c, c_prime = plan.estimate_coefficients[active], plan_prime.estimate_coefficients[active]
    inv_b = 1.0 / plan.noise_scales[active]

    def statistic(curves):
        u = curves @ projector
        return np.round((np.abs(u - c_prime) - np.abs(u - c)) @ inv_b, 9)

    return statistic


def _run_audit(name, factor, n_select, n_test):
    plan, plan_prime = _case(name)
    statistic = _privacy_loss_statistic(plan, plan_prime)
    # The mechanism under test: the same release path with its noise scaled by ``factor``.
    run, run_prime = (replace(p, noise_scales=p.noise_scales * factor) for p in (plan, plan_prime))
    return audit_pair(lambda rng, size: statistic(run.sample(rng, size)),
                      lambda rng, size: statistic(run_prime.sample(rng, size)),
                      EPS, 0.0, n_select=n_select, n_test=n_test, seed=7)


def test_audit_pairs_attain_the_sensitivity():
    _case("iclp-qr")  # builds every case
    for name, (plan, plan_prime) in _CASES.items():
        diff = plan.estimate_coefficients - plan_prime.estimate_coefficients
        if name.startswith("iclp"):
            change = l1c_norm(diff, eigenbasis("matern52", 0.5, AUDIT_GRID).eigenvalues)
        else:
            change = np.sum(np.abs(diff))
        assert change == pytest.approx(plan.sensitivity, rel=1e-6), name
    assert _CASES["iclp-ar"][0].guarantee.details["n_active"] == 1


@pytest.mark.parametrize("name", ["iclp-qr", "iclp-ar", "frl", "bernstein"])
def test_black_box_audit_passes_calibrated_and_flags_point_nine(name):
    calibrated = _run_audit(name, 1.0, 40_000, 250_000)
    assert not calibrated.flagged, calibrated
    under = _run_audit(name, 0.9, 40_000, 250_000)
    assert under.flagged, under


@pytest.mark.parametrize("name", ["iclp-qr", "iclp-ar"])
def test_black_box_audit_flags_the_sqrt2_iclp_variant(name):
    """Theorem 4 with unit-variance Laplace variables: scale b_l / sqrt 2, only (sqrt 2 eps)-DP."""
    result = _run_audit(name, 1.0 / math.sqrt(2.0), 20_000, 60_000)
    assert result.flagged, result


# --------------------------------------------------------------------------- settings, records, PSS

def test_settings_refuse_bad_input_with_reasons():
    fd = _fd(np.random.default_rng(1).normal(0.5, 0.2, (N, GRID.size)))
    with pytest.raises(ParameterError, match="eta > 1"):
        plan_mean_release(fd, replace(QR, eta=1.0))
    plan_mean_release(fd, replace(AR, eta=1.0))  # AR allows eta = 1
    with pytest.raises(ParameterError, match="lo and hi"):
        plan_mean_release(fd, replace(BERN, hi=None))
    with pytest.raises(ParameterError, match="lo < hi"):
        plan_mean_release(fd, replace(BERN, lo=2.0, hi=2.0))
    with pytest.raises(ParameterError, match="M"):
        plan_mean_release(fd, replace(FRL, M=0))
    with pytest.raises(ParameterError, match="keeps only"):
        plan_mean_release(fd, replace(FRL, M=GRID.size + 1))
    with pytest.raises(ParameterError, match="K"):
        plan_mean_release(fd, replace(BERN, K=0))
    with pytest.raises(ParameterError, match="psi"):
        plan_mean_release(fd, replace(QR, psi=0.0))
    # delta does not apply to pure epsilon-DP mechanisms: even an invalid one is ignored.
    plan = plan_mean_release(fd, replace(QR, delta=5.0))
    assert plan.delta == 0.0 and plan.privacy == "epsilon-DP"


def _independent_noise(settings: MeanSettings, n: int) -> tuple[float, np.ndarray]:
    """(sensitivity, per-coefficient noise scales) from METHODS.md 2-3, written out here from the
    eigenvalues alone, without fdp_core's sensitivity or mechanism code."""
    s, tau, eps = settings, settings.tau, settings.epsilon
    if s.mechanism == "bernstein":
        b = (s.K + 1) * (s.hi - s.lo) / (n * eps)
        return b * eps, np.full(s.K + 1, b)
    w = np.r_[GRID[1] - GRID[0], GRID[2:] - GRID[:-2], GRID[-1] - GRID[-2]] / 2
    d = np.abs(GRID[:, None] - GRID[None, :]) / s.rho
    K = (1 + math.sqrt(5) * d + 5 * d**2 / 3) * np.exp(-math.sqrt(5) * d)  # matern52
    lam = np.linalg.eigvalsh(np.sqrt(w)[:, None] * K * np.sqrt(w)[None, :])[::-1]
    lam = lam[lam > 1e-12 * lam[0]]
    if s.mechanism == "frl":
        delta1 = 2 * tau * math.sqrt(s.M) / n
        return delta1, np.full(s.M, delta1 / eps)
    if s.mechanism == "iclp-ar":
        active = s.psi / (2 * lam ** (s.eta / 2)) < tau
        delta1 = 2 * tau / n * math.sqrt(np.sum(1 / lam[active]))
        return delta1, np.where(active, delta1 * np.sqrt(lam) / eps, 0.0)
    penalty = s.phi if s.mechanism == "gaussian" else s.psi
    shrink = lam**s.eta / (lam**s.eta + penalty)
    if s.mechanism == "gaussian":
        return 2 * tau / n * np.max(shrink / np.sqrt(lam)), lam  # scales checked through sigma below
    delta1 = 2 * tau / n * np.linalg.norm(shrink / np.sqrt(lam))
    return delta1, delta1 * np.sqrt(lam) / eps


# The mechanisms whose formulas _independent_noise re-derives (a new mechanism's own test file does the same).
@pytest.mark.parametrize("mechanism", ("gaussian", "iclp-qr", "iclp-ar", "frl", "bernstein"))
def test_release_record_states_the_guarantee_computed_independently(mechanism):
    """The publishable record's sensitivity, noise and error agree with METHODS.md's formulas
    evaluated here from scratch; data-derived counts live only in the analyst view."""
    fd = _fd(np.random.default_rng(2).normal(0.5, 0.2, (N, GRID.size)))
    settings = BERN if mechanism == "bernstein" else replace(QR, mechanism=mechanism, M=3, phi=1e-3)
    plan = plan_mean_release(fd, settings)
    record = json.loads(to_json(release_record(plan, plan.sample(np.random.default_rng(0), 1)[0])))
    view = analyst_view(plan)
    for key in ("n_dropped", "n_clipped"):
        assert key not in record and key in view
    assert record["n"] == N and record["m"] == GRID.size and record["publishable"] is True
    assert record["mechanism"] == mechanism and record["epsilon"] == EPS
    sensitivity, scales = _independent_noise(settings, N)
    assert record["sensitivity"] == pytest.approx(sensitivity, rel=1e-6)
    if mechanism == "gaussian":
        sigma, delta = record["sigma"], record["delta"]
        assert record["privacy"] == "(epsilon, delta)-DP" and delta == settings.delta
        # Balle & Wang's condition holds at sigma and fails just below it (analytic calibration).
        def excess(sig):
            a, b = sensitivity / (2 * sig), EPS * sig / sensitivity
            return stats.norm.cdf(a - b) - math.exp(EPS) * stats.norm.cdf(-a - b) - delta
        assert excess(sigma) <= 1e-12 and excess(sigma * (1 - 1e-5)) > 0
        assert record["expected_sq_l2_error"] == pytest.approx(sigma**2 * np.sum(scales), rel=1e-6)
        return
    assert record["privacy"] == "epsilon-DP" and record["delta"] == 0.0 and record["sigma"] is None
    np.testing.assert_allclose(record["laplace_scales"], scales, rtol=1e-6, atol=1e-15)
    assert record["expected_sq_l2_error"] == pytest.approx(
        bernstein_expected_sq_l2_error(settings.K, scales[0]) if mechanism == "bernstein"
        else np.sum(2 * scales**2), rel=1e-6)


def test_tight_is_default_and_paper_bounds_are_larger():
    fd = _fd(np.random.default_rng(3).normal(0.5, 0.2, (N, GRID.size)))
    for settings in (QR, AR, FRL):
        tight = plan_mean_release(fd, settings)
        paper = plan_mean_release(fd, replace(settings, bound="paper"))
        assert settings.bound == "tight"
        assert paper.sensitivity > tight.sensitivity
        assert paper.guarantee.sensitivity_for("tight") == tight.sensitivity
        np.testing.assert_allclose(paper.noise_scales, tight.noise_scales * paper.sensitivity / tight.sensitivity)
    assert plan_mean_release(fd, AR).guarantee.bound_label.startswith("CS bound")


def test_pss_is_never_offered_for_iclp_ar():
    for mechanism in ("iclp-ar", "frl", "bernstein"):
        with pytest.raises(ParameterError, match="quadratic-penalty"):
            pss_defaults("matern52", None, 100, 1.0, mechanism=mechanism)
    assert pss_defaults("matern52", None, 100, 1.0, mechanism="iclp-qr") == pss_defaults("matern52", None, 100, 1.0)


def test_pss_defaults():
    n, eps = 382, 0.5
    assert pss_defaults("gaussian", None, n, eps) == (1.5, pytest.approx(1 / (n * eps**2)))
    for kernel, nu in (("matern52", None), ("matern32", None), ("exponential", None), ("matern", 2.0)):
        beta = 2 * {"matern52": 2.5, "matern32": 1.5, "exponential": 0.5, "matern": 2.0}[kernel] + 1
        eta, psi = pss_defaults(kernel, nu, n, eps)
        assert eta == pytest.approx(1 + 2 / beta)
        assert psi == pytest.approx((n * eps**2) ** (-eta * beta / (beta + 2)))
        assert psi == pytest.approx(1 / (n * eps**2))
    assert pss_defaults("matern52", None, 60, 1.0)[0] == pytest.approx(4 / 3)


# --------------------------------------------------------------------------- S1-S4

@pytest.mark.parametrize("key", ["s1", "s2", "s3", "s4"])
def test_iclp_designs_have_their_true_means(key):
    design = SIMULATIONS[key]
    assert {"n", "m", "seed", "noise_sd", "noise_rho"} <= {p.name for p in design.parameters}
    assert "nu = 1.5" in design.description and "rho = 0.1" in design.description
    clean = simulate(key, n=3, m=57, noise_sd=1e-9, seed=1)
    np.testing.assert_allclose(clean.data_matrix, np.tile(design.true_mean(clean.grid_points), (3, 1)), atol=1e-7)
    noisy = simulate(key, n=400, m=57, seed=2)
    resid = noisy.data_matrix - design.true_mean(noisy.grid_points)
    assert resid.std() == pytest.approx(0.5, rel=0.1)  # default GP noise sd
    assert simulate(key, n=5, m=57, seed=3).data_matrix.tolist() == simulate(key, n=5, m=57, seed=3).data_matrix.tolist()


def test_s1_to_s3_formulas_and_s4_eigenfunction_sum():
    t = np.array([0.0, 0.3, 0.8, 1.0])
    f = lambda x, a, b: np.exp(-((x - a) ** 2) / (2 * b * b)) / (b * math.sqrt(2 * math.pi))  # noqa: E731
    np.testing.assert_allclose(SIMULATIONS["s1"].true_mean(t), 10 * t * np.exp(-t))
    np.testing.assert_allclose(SIMULATIONS["s2"].true_mean(t), 0.3 * f(t, 0.3, 0.05) + 0.7 * f(t, 0.8, 0.05))
    s3 = 0.2 * (f(t, 0, .03) + f(t, .2, .05) + f(t, .5, .05) - f(t, .75, .03) + f(t, 1, .03))
    np.testing.assert_allclose(SIMULATIONS["s3"].true_mean(t), s3)
    # S4 lies in the span of the first 25 eigenfunctions of the ICLP kernel (Matern 3/2, rho 0.1).
    grid = np.linspace(0, 1, 301)
    basis = eigenbasis("matern32", 0.1, grid)
    mu = iclp_mean_s4(grid)
    coefs = basis.coefficients(mu)
    assert np.sum(coefs[25:] ** 2) < 1e-4 * np.sum(coefs**2)
    assert np.all(np.abs(np.abs(coefs[:25]) - 0.5) <= 0.5 + 1e-2)  # Uniform(-1, 1) weights


# --------------------------------------------------------------------------- the mean page's comparison mode

def test_mean_page_comparison_mode_and_pure_dp_controls():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/mean.py")
    at.run()
    assert not at.exception
    at.selectbox(key="mean_mechanism").set_value("iclp-qr").run()
    assert not at.exception
    assert any("pure epsilon-DP, delta does not apply" in c.value for c in at.caption)
    assert not [t for t in at.text_input if t.key == "mean_delta_pure"]  # one delta control: the sidebar's
    at.button(key="mean_pss").click().run()
    assert not at.exception
    eta, psi = pss_defaults("matern52", None, 60, at.session_state["g_epsilon"])
    assert at.session_state["g_eta"] == pytest.approx(eta)
    assert at.session_state["mean_log_psi"] == pytest.approx(math.log10(psi))
    at.selectbox(key="mean_mechanism").set_value("bernstein").run()
    # A red accuracy verdict (Bernstein at epsilon 1 on [0, 1]) is the only error box allowed.
    assert not at.exception and not [e for e in at.error if not e.value.startswith("Not useful at this epsilon")]
    assert at.number_input(key="mean_lo") is not None and at.number_input(key="mean_hi") is not None
    at.toggle(key="mean_compare").set_value(True).run()
    assert not at.exception
    figure = chart_figures(at)[0]
    names = [trace["name"] for trace in figure["data"] if trace["name"].endswith(" draws")]
    assert len(names) == len(MEAN_MECHANISMS)
    table = at.table[0].value  # a static full-width table (every column visible)
    assert len(table) == len(MEAN_MECHANISMS) and set(table["status"]) == {"ok"}
    assert np.all(table["noise (95% radius, L2)"].astype(float) > 0)  # a radius, in the curves' units
    at.slider(key="mean_compare_draws").set_value(2).run()
    assert not at.exception
