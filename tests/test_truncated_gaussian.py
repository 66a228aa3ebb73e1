"""The truncated Gaussian mean mechanism: Gaussian noise on the first M eigen-coefficients.

Added through the registry alone (issue 14's example): its module, its bound, its entry and
these tests. The tests check it like every mechanism (docs/ARCHITECTURE.md checklist): the
bound is never exceeded and is attained, the noise has the claimed law and error, the
black-box audit passes at the claimed epsilon and flags a 0.7x noise, and it commits with
exact discrete noise and a Gaussian ledger entry.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fdp_core.publish import export
from fdp_core.budget.accounting import Ledger
from fdp_core.explore.audit import audit_mean_mechanism
from fdp_core.data.loading import from_arrays
from fdp_core.errors import ParameterError
from fdp_core.kernels import eigenbasis
from fdp_core.releases.mean import GAUSSIAN_MECHANISMS, MeanSettings, plan_mean_release, release_record
from fdp_core.mechanisms.calibration import analytic_sigma

GRID = np.linspace(0.0, 1.0, 41)
TAU, N, M = 1.0, 25, 6
SETTINGS = MeanSettings(mechanism="truncated-gaussian", kernel="matern52", rho=0.2, epsilon=1.0, delta=1e-5,
                        tau=TAU, M=M)


def _curves(rng, n):
    return 0.4 * rng.standard_normal((n, GRID.size)).cumsum(axis=1) / np.sqrt(GRID.size)


def _basis():
    return eigenbasis(SETTINGS.kernel, SETTINGS.rho, GRID, np.full(GRID.size, 1.0 / GRID.size))


def test_it_is_a_gaussian_mechanism_from_the_registry():
    assert "truncated-gaussian" in GAUSSIAN_MECHANISMS
    plan = plan_mean_release(from_arrays(GRID, _curves(np.random.default_rng(0), N)), SETTINGS)
    assert plan.family.uses_delta and plan.guarantee.privacy == "(epsilon, delta)-DP"
    assert plan.synthesis.shape[1] == M and plan.noise_scales.shape == (M,)


def test_sensitivity_is_two_tau_over_n_and_sigma_is_calibrated_to_it():
    plan = plan_mean_release(from_arrays(GRID, _curves(np.random.default_rng(1), N)), SETTINGS)
    assert plan.sensitivity == pytest.approx(2 * TAU / N)
    assert plan.sigma == pytest.approx(analytic_sigma(2 * TAU / N, 1.0, 1e-5))
    np.testing.assert_array_equal(plan.noise_scales, np.full(M, plan.sigma))
    classical = plan_mean_release(plan_data := from_arrays(GRID, _curves(np.random.default_rng(1), N)),
                                  replace(SETTINGS, calibration="classical"))
    assert classical.sigma == pytest.approx(2 * TAU / N * np.sqrt(2 * np.log(2 / 1e-5)))
    assert plan_mean_release(plan_data, replace(SETTINGS, bound="paper")).sensitivity == plan.sensitivity


def test_no_neighbouring_pair_moves_the_coefficients_further_than_the_bound_and_one_pair_attains_it():
    rng = np.random.default_rng(2)
    others = _curves(rng, N - 1)
    phi1 = _basis().eigenfunctions[:, 0]
    worst = 0.0
    pairs = [(TAU * phi1, -TAU * phi1)] + [(_curves(rng, 1)[0] * s, _curves(rng, 1)[0] * s)
                                          for s in (0.5, 3.0, 30.0) for _ in range(20)]
    for x, y in pairs:
        a = plan_mean_release(from_arrays(GRID, np.vstack([others, x])), SETTINGS)
        b = plan_mean_release(from_arrays(GRID, np.vstack([others, y])), SETTINGS)
        worst = max(worst, float(np.linalg.norm(a.estimate_coefficients - b.estimate_coefficients)))
        assert worst <= a.sensitivity * (1 + 1e-9)
    # The first pair is +/- tau phi_1: it attains 2 tau / n (up to the quadrature's rounding).
    assert worst == pytest.approx(2 * TAU / N, rel=1e-6)


def test_noise_law_and_expected_error_match_m_sigma_squared():
    plan = plan_mean_release(from_arrays(GRID, _curves(np.random.default_rng(3), N)), SETTINGS)
    assert plan.expected_sq_l2_error == pytest.approx(M * plan.sigma**2)
    draws = plan.sample(np.random.default_rng(4), 4000)
    sq = ((draws - plan.estimate) ** 2) @ plan.weights
    assert np.mean(sq) == pytest.approx(plan.expected_sq_l2_error, rel=0.05)


def test_audit_passes_at_the_claimed_epsilon_and_flags_a_seventy_percent_noise():
    audit = audit_mean_mechanism(replace(SETTINGS, epsilon=1.0, delta=0.05), GRID, 30, control_factor=0.7)
    assert not audit.result.flagged
    assert audit.control.flagged


def test_bad_settings_are_refused_with_the_reason():
    fd = from_arrays(GRID, _curves(np.random.default_rng(5), N))
    with pytest.raises(ParameterError, match="M"):
        plan_mean_release(fd, replace(SETTINGS, M=0))
    with pytest.raises(ParameterError, match="delta"):
        plan_mean_release(fd, replace(SETTINGS, delta=1.5))
    with pytest.raises(ParameterError, match="keeps only"):
        plan_mean_release(fd, replace(SETTINGS, M=10_000))


def test_record_and_commit():
    fd = from_arrays(GRID, _curves(np.random.default_rng(6), N))
    plan = plan_mean_release(fd, SETTINGS)
    record = release_record(plan, plan.sample(np.random.default_rng(7), 1)[0])
    assert record["mechanism"] == "truncated-gaussian" and record["guarantee"]["M"] == M
    assert record["guarantee"]["sensitivity_l2"] == pytest.approx(2 * TAU / N)
    ledger = Ledger(epsilon_total=5.0, delta_total=1e-4)
    committed = export.commit_mean(ledger, fd, SETTINGS, data_label="simulated")
    assert len(committed.table) == GRID.size and len(committed.coefficients) == M
    (entry,) = ledger.entries
    assert entry.mechanism == "truncated-gaussian" and entry is committed.entry
    assert committed.record["noise_sampler"]["coefficient_noise"] == "gaussian"
