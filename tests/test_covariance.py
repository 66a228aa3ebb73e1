"""Covariance release (METHODS.md 13): estimator, both Gaussian bounds and the Laplace bound against
brute-force searches, black-box audits with a 0.7x control, closed-form error, CLI files."""

from __future__ import annotations

import json
import math
from functools import lru_cache as functools_lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fdp_core.cli import main
from fdp_core.releases.covariance import (noise_factor, CovarianceSettings, analyst_view, centred_clipped_curves, eigenfunctions_of,
                                 plan_covariance_release, product_shrinkage, release_record, variance_ratio)
from fdp_core.data.loading import FunctionalData, load_curves
from fdp_core.errors import ParameterError
from fdp_core.kernels import eigenbasis
from fdp_core.sensitivity import (covariance_gaussian_sensitivity_kyfan, covariance_gaussian_sensitivity_sqrt2,
                                  covariance_l1c_sensitivity, covariance_weights)
from fdp_core.explore.summary_audit import (audit_covariance_mechanism, covariance_pair_candidates, pair_value,
                                    worst_covariance_pair)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
GRID = np.linspace(0.0, 1.0, 30)


def _weights_for(kernel, rho, phi, eta=1.5, grid=GRID):
    w = FunctionalData(grid, np.zeros((1, grid.size))).weights
    lam = eigenbasis(kernel, rho, grid, w).eigenvalues
    return covariance_weights(lam, product_shrinkage(lam, eta, phi))


def _synthetic_weights(L, decay, phi, eta):
    lam = np.arange(1, L + 1, dtype=float) ** -decay
    return covariance_weights(lam, product_shrinkage(lam, eta, phi))


CASES = [("kernel", ("gaussian", 0.05, 1e-3)), ("kernel", ("matern52", 0.3, 1e-2)),
         ("kernel", ("matern32", 0.1, 1e-4)), ("kernel", ("exponential", 0.2, 1.0)),
         ("synthetic", (8, 2.0, 10.0, 1.0)), ("synthetic", (12, 3.0, 1e-3, 2.0)), ("synthetic", (6, 1.0, 100.0, 1.5))]


def _A(case):
    kind, args = case
    return _weights_for(*args) if kind == "kernel" else _synthetic_weights(*args)


def test_estimator_is_entrywise_shrunk_second_moment():
    rng = np.random.default_rng(0)
    grid = np.linspace(0, 1, 25)
    values = rng.normal(0.5, 0.2, (40, 25))
    fd = FunctionalData(grid, values)
    s = CovarianceSettings(kernel="matern52", rho=0.2, phi=1e-2, centre=0.5, tau=0.3)
    plan = plan_covariance_release(fd, s)
    curves, n_clipped = centred_clipped_curves(fd, s)
    assert np.all(np.sqrt((curves**2) @ fd.weights) <= 0.3 * (1 + 1e-12))
    assert n_clipped == int(np.sum(np.sqrt(((values - 0.5) ** 2) @ fd.weights) > 0.3))
    basis = eigenbasis("matern52", 0.2, fd.unit_grid, fd.weights)
    x = basis.coefficients(curves)
    lam = basis.eigenvalues
    expected = np.empty((lam.size, lam.size))
    for j in range(lam.size):
        for l in range(lam.size):
            p = (lam[j] * lam[l]) ** 1.5
            # argmin_h (h - S_jl)^2 + phi h^2 / (lambda_j lambda_l)^eta, solved by a 1-d minimiser
            S_jl = np.mean(x[:, j] * x[:, l])
            expected[j, l] = S_jl * p / (p + 1e-2)
    np.testing.assert_allclose(plan.estimate, expected, rtol=1e-10, atol=1e-15)
    from scipy.optimize import minimize_scalar
    j, l = 1, 3
    S_jl = np.mean(x[:, j] * x[:, l])
    best = minimize_scalar(lambda h: (h - S_jl) ** 2 + 1e-2 * h**2 / (lam[j] * lam[l]) ** 1.5).x
    assert plan.estimate[j, l] == pytest.approx(best, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[1]))
def test_gaussian_bounds_hold_against_adversarial_pairs(case):
    A = _A(case)
    tau = 1.3
    kyfan = covariance_gaussian_sensitivity_kyfan(A, tau, 1)
    sqrt2 = covariance_gaussian_sensitivity_sqrt2(A, tau, 1)
    assert kyfan <= sqrt2 * (1 + 1e-12)
    assert kyfan >= sqrt2 / math.sqrt(2) * (1 - 1e-12)  # METHODS: "up to 0.708x the first bound"
    values = [pair_value(A, x, y, "cm") for _, x, y in covariance_pair_candidates(A, tau, n_random=300)]
    assert max(values) <= kyfan * (1 + 1e-9)
    _, x, y, best = worst_covariance_pair(A, tau, "cm")
    assert best <= kyfan * (1 + 1e-9)
    assert np.linalg.norm(x) <= tau * (1 + 1e-9) and np.linalg.norm(y) <= tau * (1 + 1e-9)
    # When the largest A_jl sits off the diagonal, both bounds are attained by the rotated pair.
    j, l = np.unravel_index(np.argmax(A), A.shape)
    if j != l:
        assert best == pytest.approx(sqrt2, rel=1e-9) and kyfan == pytest.approx(sqrt2, rel=1e-12)


def test_kyfan_is_strictly_tighter_when_the_maximum_is_diagonal():
    # Heavy shrinkage: A_jl increasing in lambda_j lambda_l, so the maximum is A_11 (diagonal).
    A = _synthetic_weights(8, 2.0, 10.0, 1.0)
    assert np.unravel_index(np.argmax(A), A.shape) == (0, 0)
    kyfan, sqrt2 = (covariance_gaussian_sensitivity_kyfan(A, 1, 1), covariance_gaussian_sensitivity_sqrt2(A, 1, 1))
    assert kyfan < 0.85 * sqrt2
    # The Ky Fan bound is attained here by tau e_1 vs tau e_2 up to the off-diagonal slack.
    _, _, _, best = worst_covariance_pair(A, 1.0, "cm")
    assert best <= kyfan * (1 + 1e-9)
    assert best >= 0.9 * kyfan


def test_brute_force_grid_search_never_exceeds_kyfan_in_two_dimensions():
    # L = 2: enumerate x, y on a fine grid of the disc of radius tau (not only the sphere).
    A = _synthetic_weights(2, 1.0, 0.5, 1.0)
    tau = 1.0
    kyfan = covariance_gaussian_sensitivity_kyfan(A, tau, 1)
    l1c = covariance_l1c_sensitivity(A, tau, 1)["bound"]
    angles = np.linspace(0, 2 * np.pi, 73)
    radii = np.linspace(0, tau, 7)
    pts = np.array([[r * np.cos(a), r * np.sin(a)] for r in radii for a in angles])
    best_cm = best_l1 = 0.0
    for x in pts:
        for y in pts[::3]:
            best_cm = max(best_cm, pair_value(A, x, y, "cm"))
            best_l1 = max(best_l1, pair_value(A, x, y, "l1c"))
    assert best_cm <= kyfan * (1 + 1e-12) and best_l1 <= l1c * (1 + 1e-12)
    assert best_cm >= 0.95 * kyfan


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[1]))
def test_laplace_bound_holds_against_adversarial_pairs(case):
    A = _A(case)
    tau = 0.7
    parts = covariance_l1c_sensitivity(A, tau, 1)
    assert parts["bound"] == min(parts["perron"], parts["frobenius"])
    values = [pair_value(A, x, y, "l1c") for _, x, y in covariance_pair_candidates(A, tau, n_random=200)]
    assert max(values) <= parts["bound"] * (1 + 1e-9)
    _, _, _, best = worst_covariance_pair(A, tau, "l1c", n_random=100, refine=3)
    assert best <= parts["bound"] * (1 + 1e-9)


def test_summing_over_the_upper_triangle_only_would_under_noise():
    A = _weights_for("matern52", 0.3, 1e-3)
    label, x, y, full = worst_covariance_pair(A, 1.0, "cm")
    M = A * (np.outer(x, x) - np.outer(y, y))
    upper = math.sqrt(float(np.sum(np.triu(M) ** 2)))
    assert full > 1.3 * upper  # the pitfall of METHODS 13: up to sqrt 2 too little noise


def test_sensitivity_end_to_end_through_the_planner():
    """Two real data sets differing in one curve: the planner's estimates differ by at most the bound."""
    grid = np.linspace(0, 1, 30)
    rng = np.random.default_rng(4)
    for mechanism in ("gaussian", "iclp"):
        s = CovarianceSettings(mechanism=mechanism, kernel="matern52", rho=0.3, phi=1e-3, centre=0.5, tau=0.5)
        base = rng.normal(0.5, 0.3, (9, grid.size))
        for _ in range(5):
            a, b = rng.normal(0.5, 2.0, (2, grid.size))
            p = plan_covariance_release(FunctionalData(grid, np.vstack([base, a])), s)
            q = plan_covariance_release(FunctionalData(grid, np.vstack([base, b])), s)
            root = np.sqrt(np.outer(p.eigenvalues, p.eigenvalues))
            D = (p.estimate - q.estimate) / root
            shift = np.sqrt(np.sum(D**2)) if mechanism == "gaussian" else np.sum(np.abs(D))
            assert shift <= p.sensitivity * (1 + 1e-9)


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_black_box_audit_passes_and_flags_the_07_control(mechanism):
    # delta = 0.05: the region where a 0.7x Gaussian violates (epsilon, delta) then has measurable mass.
    # ICLP: public settings where a two-entry pair attains ~97% of the bound (a spread-out pair would
    # spread the loss over L^2 Laplace terms, and no finite sample would see it).
    kw = dict(rho=0.3, phi=1e-3) if mechanism == "gaussian" else dict(rho=1.0, eta=3.0, phi=3e-5)
    s = CovarianceSettings(mechanism=mechanism, kernel="matern52", centre=0.0, tau=1.0, epsilon=1.0, delta=0.05,
                           **kw)
    audit = audit_covariance_mechanism(s, np.linspace(0, 1, 20), 10, n_select=40_000, n_test=150_000)
    assert audit.attained_fraction <= 1 + 1e-9
    assert audit.attained_fraction > 0.9
    assert not audit.result.flagged, audit.result
    assert audit.control.flagged, audit.control


def test_black_box_audit_at_person_level_flags_the_07_control():
    """Issue 22/31: the Gaussian covariance audited with the replaced person holding 3 curves in D'
    (person column): n stays the number of persons, the claimed epsilon passes, 0.7x is flagged."""
    s = CovarianceSettings(mechanism="gaussian", kernel="matern52", centre=0.0, tau=1.0, epsilon=1.0, delta=0.05,
                           rho=0.3, phi=1e-3)
    audit = audit_covariance_mechanism(s, np.linspace(0, 1, 20), 10, n_select=40_000, n_test=150_000, visits=3)
    print(f"covariance audit (person level): {audit.result} control {audit.control}")
    assert 0.9 < audit.attained_fraction <= 1 + 1e-9
    assert not audit.result.flagged, audit.result
    assert audit.control.flagged, audit.control


def test_closed_form_error_matches_monte_carlo():
    grid = np.linspace(0, 1, 20)
    fd = FunctionalData(grid, np.random.default_rng(1).normal(0, 0.3, (15, grid.size)))
    for mechanism in ("gaussian", "iclp"):
        plan = plan_covariance_release(fd, CovarianceSettings(mechanism=mechanism, kernel="matern52", rho=0.3,
                                                              phi=1e-3, centre=0.0, tau=1.0))
        draws = plan.sample(np.random.default_rng(2), 4000)["second_moment"]
        mc = np.mean(np.sum((draws - plan.estimate) ** 2, axis=(1, 2)))
        assert mc == pytest.approx(plan.expected_sq_hs_error, rel=0.05)
        # HS norm of the operator = Frobenius norm of its coefficient matrix (orthonormal basis).
        surface = plan.surface(draws[0] - plan.estimate)
        w = fd.weights
        hs = np.sum(surface**2 * np.outer(w, w))
        assert hs == pytest.approx(np.sum((draws[0] - plan.estimate) ** 2), rel=1e-6)


def test_hs_error_radius_in_small_chunks_matches_all_draws_at_once():
    """The radius draws its Monte Carlo in chunks (issue 40): same stream, same quantile as all draws
    held at once, and the chunked run's peak memory stays a few chunks, not (draws, L, L) arrays."""
    from chunked_monte_carlo import chunked_equals_unchunked

    grid = np.linspace(0, 1, 60)
    fd = FunctionalData(grid, np.random.default_rng(3).normal(0, 0.3, (40, grid.size)))
    plan = plan_covariance_release(fd, CovarianceSettings(kernel="matern52", rho=0.1, phi=1e-4, centre=0.0, tau=1.0))
    L = plan.n_components
    errors = plan.sample(np.random.default_rng(12345), 2000)["covariance"] - plan.estimate  # the unchunked reference
    expected = np.quantile(np.sqrt(np.sum(errors**2, axis=(1, 2))), 0.95)
    del errors
    assert 8 * 2**19 * 8 < 2000 * L * L * 8 * 3  # the limit below: a few 4 MB chunks, not three (2000, L, L) arrays
    radius = chunked_equals_unchunked(lambda: plan.hs_error_radius(0.95), expected, peak_limit=8 * 2**19 * 8)
    assert plan.expected_sq_hs_error < radius**2 < 3 * plan.expected_sq_hs_error  # a 95% quantile of ||e||^2 > its mean


def test_released_mean_split_and_covariance():
    grid = np.linspace(0, 1, 20)
    fd = FunctionalData(grid, np.random.default_rng(1).normal(0.4, 0.2, (50, grid.size)))
    s = CovarianceSettings(kernel="matern52", rho=0.3, centre=0.5, tau=1.0, epsilon=2.0, delta=1e-5,
                           centring="released-mean", gamma=0.25)
    plan = plan_covariance_release(fd, s)
    g = plan.guarantee.details
    assert g["epsilon_mean"] == pytest.approx(0.5) and g["epsilon_covariance"] == pytest.approx(1.5)
    assert g["delta_mean"] + g["delta_covariance"] == pytest.approx(1e-5)
    # The release promises the whole budget: both parts together.
    assert (plan.guarantee.epsilon, plan.guarantee.delta) == (2.0, 1e-5)
    out = plan.sample(np.random.default_rng(0), 3)
    np.testing.assert_allclose(out["covariance"],
                               out["second_moment"] - out["mean"][:, :, None] * out["mean"][:, None, :])
    np.testing.assert_allclose(out["covariance"], np.swapaxes(out["covariance"], 1, 2))


def test_settings_refusals():
    with pytest.raises(ParameterError, match="public centre"):
        CovarianceSettings(tau=1.0).validated()
    with pytest.raises(ParameterError, match="tau"):
        CovarianceSettings(centre=0.0).validated()
    with pytest.raises(ParameterError, match="gamma"):
        CovarianceSettings(centre=0.0, tau=1, centring="released-mean", gamma=1.0).validated()
    with pytest.raises(ParameterError, match="not both"):
        CovarianceSettings(centre=0.0, lo=0, hi=1).validated()
    assert CovarianceSettings(lo=0.0, hi=1.0).validated().tau_value == 0.5
    with pytest.raises(ParameterError, match="^mechanism must be one of gaussian, iclp; got 'laplace'$"):
        CovarianceSettings(mechanism="laplace", centre=0.0, tau=1.0).validated()
    with pytest.raises(ParameterError, match="delta must be in"):
        CovarianceSettings(centre=0.0, tau=1.0, delta=0.0).validated()
    with pytest.raises(ParameterError, match="bound must be one of kyfan, sqrt2"):
        CovarianceSettings(centre=0.0, tau=1.0, bound="paper").validated()
    # ICLP reads neither delta nor the Gaussian bound: pure epsilon-DP, its record says delta = 0.
    iclp = CovarianceSettings(mechanism="iclp", centre=0.0, tau=1.0, delta=0.0, bound="paper").validated()
    assert iclp.split() == (1.0, 0.0, 0.0, 0.0)


def test_cli_writes_publishable_and_analyst_files_separately(tmp_path):
    out = tmp_path / "cov"
    code = main(["release", "covariance", "--preview", "--data", str(EXAMPLE), "--kernel", "matern52", "--rho", "0.2",
                 "--epsilon", "1", "--centre", "0", "--tau", "2", "--out", str(out), "--seed", "1",
                 "--centring", "released-mean"])
    assert code == 0
    record = json.loads((out / "release.json").read_text())
    view = json.loads((out / "analyst_view.json").read_text())
    for key in ("n_clipped", "variance_ratio_covariance_route", "hs_distance_to_nonprivate"):
        assert key not in json.dumps(record)
        assert key in view
    assert record["release"] == "covariance" and record["publishable"] is False  # seeded: not for publication
    assert "NOT FOR PUBLICATION" in view["warning"] and view["publishable"] is False
    table = pd.read_csv(out / "release.csv")
    fd = load_curves(EXAMPLE)
    assert list(table.columns) == ["s", "t", "value"] and len(table) == fd.m**2
    surface = table["value"].to_numpy().reshape(fd.m, fd.m)
    np.testing.assert_allclose(surface, surface.T, atol=1e-12)
    assert len(record["released_mean"]["value"]) == fd.m


def test_cli_refuses_without_public_centre(tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        main(["release", "covariance", "--preview", "--data", str(EXAMPLE), "--kernel", "matern52", "--rho", "0.2",
              "--epsilon", "1", "--out", str(tmp_path)])
    assert err.value.code == 2
    assert main(["release", "covariance", "--preview", "--data", str(EXAMPLE), "--kernel", "matern52", "--rho", "0.2",
                 "--epsilon", "1", "--value-range", "1,0", "--out", str(tmp_path)]) == 2
    assert "lo < hi" in capsys.readouterr().err


def test_dti_covariance_and_eigenfunctions(shared_data):
    fd = load_curves(shared_data / "dti_cca.csv")
    s = CovarianceSettings(kernel="matern52", rho=0.1, phi=1e-3, lo=0.2, hi=0.9, epsilon=2.0, delta=1e-5,
                           centring="released-mean")
    plan = plan_covariance_release(fd, s)
    draw = plan.sample(np.random.default_rng(0), 1)
    view = analyst_view(plan, draw, 2, fd)
    assert 0 <= view["variance_ratio_covariance_route"] <= 1
    _, functions = eigenfunctions_of(plan, plan.nonprivate_covariance(), 2)
    assert variance_ratio(fd, s, functions) > 0.95  # the non-private shrunk covariance's subspace
    record = release_record(plan)
    assert "n_clipped" not in record


def test_person_level_bounds_hold_for_whole_person_replacements():
    """Several curves per person: replacing all of one person's curves stays within every bound."""
    rng = np.random.default_rng(7)
    grid = np.linspace(0, 1, 20)
    persons = np.repeat(np.arange(6), 3)
    meta = pd.DataFrame({"subject": persons})
    for mechanism in ("gaussian", "iclp"):
        s = CovarianceSettings(mechanism=mechanism, kernel="matern52", rho=0.3, phi=1e-3, centre=0.0, tau=0.8,
                               person_column="subject", n_public=8)
        worst = 0.0
        for trial in range(25):
            base = rng.normal(0, 0.6, (persons.size, grid.size))
            other = base.copy()
            other[persons == 5] = rng.normal(0, 2.0, (3, grid.size)) * (1 if trial % 2 else np.sin(np.pi * grid))
            p = plan_covariance_release(FunctionalData(grid, base, metadata=meta), s)
            q = plan_covariance_release(FunctionalData(grid, other, metadata=meta), s)
            assert p.n == 8
            D = (p.estimate - q.estimate) / np.sqrt(np.outer(p.eigenvalues, p.eigenvalues))
            shift = np.sqrt(np.sum(D**2)) if mechanism == "gaussian" else np.sum(np.abs(D))
            assert shift <= p.sensitivity * (1 + 1e-9)
            worst = max(worst, shift / p.sensitivity)
        assert worst > 0.05


def test_cli_publishable_files_do_not_depend_on_one_person(tmp_path):
    rng = np.random.default_rng(0)
    grid = np.linspace(0, 1, 12)
    values = 0.5 + rng.normal(0, 0.1, (20, grid.size))
    subjects = [f"s{i // 2}" for i in range(20)]
    outs = []
    for which in ("D", "D'"):
        v = values.copy()
        if which == "D'":
            v[-2:] = 5.0  # the last person's curves, far outside the public range: clipped
        frame = pd.DataFrame(v, columns=[repr(float(t)) for t in grid])
        frame.insert(0, "subject", subjects)
        path = tmp_path / f"{len(outs)}.csv"
        frame.to_csv(path, index=False)
        out = tmp_path / f"out{len(outs)}"
        assert main(["release", "covariance", "--preview", "--data", str(path), "--kernel", "matern52", "--rho", "0.3",
                     "--epsilon", "1", "--value-range", "0,1", "--person-column", "subject", "--n-public", "10",
                     "--centring", "released-mean", "--seed", "3", "--out", str(out)]) == 0
        outs.append(out)
    a, b = (json.loads((o / "release.json").read_text()) for o in outs)
    for record in (a, b):
        record.pop("created_utc"), record.pop("released_mean")
    assert a == b  # everything publishable but the noised output is identical on neighbours
    ta, tb = (pd.read_csv(o / "release.csv") for o in outs)
    pd.testing.assert_frame_equal(ta[["s", "t"]], tb[["s", "t"]])
    va, vb = (json.loads((o / "analyst_view.json").read_text()) for o in outs)
    assert va["n_clipped"] != vb["n_clipped"]
    assert a["n"] == 10 and a["unit_of_privacy"] == "person (column 'subject')"


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_hs_error_radius_shared_per_noise_shape_equals_its_own_monte_carlo(mechanism):
    """Issue 40: with a public centre the radius is (sigma or Delta_1 / epsilon) times one Monte Carlo on the
    shape sqrt(lambda_j lambda_l), shared by every epsilon, n and session on the kernel and grid. Each
    epsilon's radius equals the draws of its own noise law (same seed and stream), computed here directly."""
    grid = np.linspace(0, 1, 30)
    fd = FunctionalData(grid, np.random.default_rng(5).normal(0, 0.3, (25, grid.size)))
    for epsilon in (0.7, 1.3):
        plan = plan_covariance_release(fd, CovarianceSettings(mechanism=mechanism, centre=0.0, tau=1.0,
                                                              epsilon=epsilon))
        errors = plan.sample(np.random.default_rng(12345), 2000)["covariance"] - plan.estimate
        direct = np.quantile(np.sqrt(np.sum(errors**2, axis=(1, 2))), 0.95)
        assert plan.hs_error_radius(0.95) == pytest.approx(direct, rel=1e-10)
    released = plan_covariance_release(fd, CovarianceSettings(mechanism=mechanism, centring="released-mean",
                                                              centre=0.0, tau=1.0))
    # A released mean's outer product is not homogeneous in the factor: its own chunked draws, as before.
    assert noise_factor(released.scales, released.eigenvalues) is not None
    errors = released.sample(np.random.default_rng(7), 4000)["covariance"] - released.nonprivate_covariance()
    direct = np.quantile(np.sqrt(np.sum(errors**2, axis=(1, 2))), 0.95)
    radius = released.hs_error_radius(0.95)
    assert radius == pytest.approx(direct, rel=0.05)
    assert radius != pytest.approx(noise_factor(released.scales, released.eigenvalues)
                                   * plan.hs_error_radius(0.95) / noise_factor(plan.scales, plan.eigenvalues), rel=0.05)


def _chunked_direct_norms(plan, draws=2000):
    """||C~ - C_hat||_HS of the radius's draws from plan.sample itself: the same seed and chunks as the
    page's Monte Carlo (a chunk of (size, L, L) matrix draws, then its (size, L) mean draws)."""
    rng, target = np.random.default_rng(12345), plan.nonprivate_covariance()
    chunk = max(1, 2**19 // target.size)
    norms = []
    for start in range(0, draws, chunk):
        errors = plan.sample(rng, min(chunk, draws - start))["covariance"] - target
        norms.append(np.sqrt(np.sum(errors**2, axis=(1, 2))))
    return np.concatenate(norms)


def _chunked_direct_radius(plan, prob=0.95):
    return float(np.quantile(_chunked_direct_norms(plan), prob))


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_released_mean_radius_from_shared_draws_equals_its_direct_monte_carlo(mechanism):
    """Issue 40: with a released mean each draw's squared HS error is a polynomial in the two noise scales
    and the shrunk mean whose noise-only terms are drawn once per noise shape; every epsilon and gamma
    gives the same radius as drawing its own error matrices with the same seed and stream."""
    from fdp_core.releases import covariance_radius

    grid = np.linspace(0, 1, 40)
    fd = FunctionalData(grid, np.random.default_rng(9).normal(0.3, 0.3, (35, grid.size)))
    covariance_radius.released_mean_draws.cache_clear()
    for epsilon, gamma, centre in ((0.6, 0.2, 0.0), (1.1, 0.2, 0.0), (4.0, 0.5, 0.0), (1.1, 0.2, 0.8)):
        plan = plan_covariance_release(fd, CovarianceSettings(mechanism=mechanism, centring="released-mean",
                                                              gamma=gamma, centre=centre, tau=1.0, epsilon=epsilon))
        norms = _chunked_direct_norms(plan)
        for prob in (0.95, 0.5):
            assert plan.hs_error_radius(prob) == pytest.approx(np.quantile(norms, prob), rel=1e-10)
    assert plan.direct_hs_radius(0.95) == pytest.approx(np.quantile(norms, 0.95), rel=1e-12)
    # One draw of the noise-only terms served every epsilon, gamma and centre (the mean's shape is public).
    assert covariance_radius.released_mean_draws.cache_info().misses == 1


def test_radius_of_noise_outside_the_shared_shape_draws_its_own():
    """Scales that are not c sqrt(lambda_j lambda_l) fall back to the direct Monte Carlo (no mechanism
    plans such noise today; the fallback keeps the radius right if one does)."""
    from dataclasses import replace

    grid = np.linspace(0, 1, 25)
    fd = FunctionalData(grid, np.random.default_rng(2).normal(0.3, 0.3, (30, grid.size)))
    for centring in ("public", "released-mean"):
        plan = plan_covariance_release(fd, CovarianceSettings(centring=centring, centre=0.0, tau=1.0))
        odd = replace(plan, scales=plan.scales * np.linspace(1.0, 2.0, plan.scales.size).reshape(plan.scales.shape))
        assert noise_factor(odd.scales, odd.eigenvalues) is None
        assert odd.hs_error_radius(0.95) == pytest.approx(_chunked_direct_radius(odd), rel=1e-12)
        if centring == "public":  # (with a released mean at n = 30 the mean's noise dominates either way)
            assert odd.hs_error_radius(0.95) > plan.hs_error_radius(0.95)


@pytest.mark.parametrize("mechanism", ["gaussian", "iclp"])
def test_released_mean_radius_covers_fresh_releases_95_percent_of_the_time(mechanism):
    """The radius's promise, checked on releases drawn from another seed: the share of released covariances
    within it of the non-private one is 0.95 up to the Monte Carlo error of both samples."""
    grid = np.linspace(0, 1, 30)
    fd = FunctionalData(grid, np.random.default_rng(4).normal(0.4, 0.3, (40, grid.size)))
    plan = plan_covariance_release(fd, CovarianceSettings(mechanism=mechanism, centring="released-mean",
                                                          centre=0.0, tau=1.0, epsilon=1.5))
    radius = plan.hs_error_radius(0.95)
    errors = plan.sample(np.random.default_rng(2026), 6000)["covariance"] - plan.nonprivate_covariance()
    covered = float(np.mean(np.sqrt(np.sum(errors**2, axis=(1, 2))) <= radius))
    # sd of the share ~0.003 over 6000 fresh draws; the 2000-draw quantile moves it by ~0.005.
    assert covered == pytest.approx(0.95, abs=0.02)


def test_concurrent_callers_share_one_computation_of_the_radius_draws():
    """Issue 40: sessions opening the page together on a cold server wait for one Monte Carlo of the shared
    draws instead of each running it."""
    import threading

    from fdp_core.releases import covariance_radius

    calls = []
    started = threading.Event()

    @covariance_radius.computed_once
    @functools_lru_cache(maxsize=4)
    def slow(x):
        calls.append(x)
        started.set()
        release.wait(5)
        return x * 2

    release = threading.Event()
    results = []
    threads = [threading.Thread(target=lambda: results.append(slow(3))) for _ in range(4)]
    for t in threads:
        t.start()
    assert started.wait(5)
    other = slow(4)  # another argument is not held up by the running computation
    release.set()
    for t in threads:
        t.join(5)
    assert results == [6, 6, 6, 6] and calls == [3, 4] and other == 8
